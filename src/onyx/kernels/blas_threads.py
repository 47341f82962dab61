"""BLAS's thread count, changed only for the duration of a call and then restored.

A session's ``intra_op_num_threads`` applies to the BLAS its products run on while the session runs,
and a few kernels run small products on one BLAS thread (thread barriers cost more than they save
there). Neither may change the host process: every change is scoped (:func:`limited`) and undone on
exit, with a count of the scopes open at once so that two sessions running on two Python threads
restore the count the process had, not each other's.

MKL's count is set for the calling thread only (``MKL_Set_Num_Threads_Local``, a documented service
function). numpy's OpenBLAS has one process-wide count, changed through its documented
``openblas_set_num_threads``: threadpoolctl does the same through the same call, at ~10 us a scope
where these kernels need ~1 us (the products guarded on one thread take 10-100 us); tests check with
threadpoolctl that the process's counts are unchanged after runs.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import cache

from onyx.kernels import mkl


@cache
def openblas_libraries() -> tuple[ctypes.CDLL, ...]:
    """The OpenBLAS libraries loaded in this process, numpy's first (Linux; empty elsewhere)."""
    import numpy as np

    try:
        with open("/proc/self/maps") as fh:
            paths: list[str] = []
            for line in fh:
                path = line.split()[-1]
                if "openblas" in path.lower() and path.startswith("/") and path not in paths:
                    paths.append(path)
    except OSError:
        return ()
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    paths.sort(key=lambda p: (0 if p.startswith(numpy_dir) and "numpy" in p else 1, p))
    libs = []
    for path in paths:
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return tuple(libs)


_SET = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GET = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def _first(lib: ctypes.CDLL, names: tuple[str, ...]):
    return next((getattr(lib, n) for n in names if hasattr(lib, n)), None)


@cache
def _openblas_pairs() -> tuple[tuple, ...]:
    """(getter, setter) of every loaded OpenBLAS that has both."""
    pairs = []
    for lib in openblas_libraries():
        get, set_ = _first(lib, _GET), _first(lib, _SET)
        if get is not None and set_ is not None:
            get.restype = ctypes.c_int
            pairs.append((get, set_))
    return tuple(pairs)


def openblas_threads() -> int | None:
    """numpy's OpenBLAS thread count, or None where it cannot be read."""
    pairs = _openblas_pairs()
    return int(pairs[0][0]()) if pairs else None


#: MKL's library if a product has loaded it, else None (never loads it)
_mkl = mkl.loaded


def blas_threads() -> int | None:
    """The thread count of the BLAS onyx's products run on (MKL's for this thread where onyx runs on
    MKL, else numpy's OpenBLAS's), or None where none can be read."""
    lib = _mkl()
    return int(lib.MKL_Get_Max_Threads()) if lib is not None else openblas_threads()


def single_threaded() -> bool:
    """True when BLAS runs one thread per call, so that onyx may split work over its own threads."""
    return blas_threads() == 1


_lock = threading.Lock()
_open: list[int] = [0]  # OpenBLAS scopes open now
_before: list[tuple[int, ...]] = [()]  # OpenBLAS counts when the first of them opened


def _enter_openblas(n: int) -> bool:
    pairs = _openblas_pairs()
    if not pairs:
        return False
    with _lock:
        if _open[0] == 0:
            _before[0] = tuple(int(get()) for get, _ in pairs)
        _open[0] += 1
        for _, set_ in pairs:
            set_(n)
    return True


def _exit_openblas() -> None:
    pairs = _openblas_pairs()
    with _lock:
        _open[0] -= 1
        if _open[0] == 0:
            for (_, set_), n in zip(pairs, _before[0]):
                set_(n)


@contextmanager
def limited(n: int | None, *, openblas: int | None = None) -> Iterator[None]:
    """For the duration: MKL on ``n`` threads for this thread where onyx runs on MKL (None: its own
    count), and numpy's OpenBLAS on ``openblas`` threads for the process (default ``n`` when onyx's
    products run on OpenBLAS; 1 beside MKL keeps its workers from spinning on MKL's cores)."""
    lib = _mkl()
    previous = lib.MKL_Set_Num_Threads_Local(int(max(1, n))) if lib is not None and n else None
    want = openblas if openblas is not None or lib is not None else n
    entered = bool(want) and _enter_openblas(int(max(1, want)))
    try:
        yield
    finally:
        if entered:
            _exit_openblas()
        if previous is not None:
            lib.MKL_Set_Num_Threads_Local(previous)


def for_run(threads: int, *, deterministic: bool = False):
    """A context manager giving BLAS a session's ``intra_op_num_threads`` (0: BLAS's own default) for
    one run: nothing to do for a default session on numpy's OpenBLAS (the common small model).

    ``deterministic`` (SessionOptions.use_deterministic_compute): BLAS on one thread for the run. MKL
    picks its thread count per call (MKL_DYNAMIC) and its results depend on it (a 7x300 @ 300x257
    product differs in the last bits between one and two threads); on one thread each product is one
    fixed computation, and the big ones are split over onyx's own threads instead (parallel.matmul), in
    pieces that depend on the shape and the session's thread count alone, never on the load."""
    if deterministic:
        mkl.active()  # load MKL now where it is onyx's BLAS: loaded mid-run, it would escape the limit
        return limited(1, openblas=1)
    if _mkl() is not None:
        return limited(threads or None, openblas=1)
    return limited(threads) if threads > 0 else _NOTHING


def one_thread():
    """BLAS on one thread for the duration (a context manager); nothing to do when it already is."""
    return _NOTHING if single_threaded() else limited(1)


_NOTHING = nullcontext()
