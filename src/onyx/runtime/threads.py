"""Thread control: how many threads BLAS (and onyx's own parallel kernels) may use."""

from __future__ import annotations

import ctypes
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache


def physical_cores() -> int:
    """A best guess at the number of physical cores (the default thread count)."""
    try:
        with open("/proc/cpuinfo") as fh:
            pairs = set()
            phys = core = None
            for line in fh:
                if line.startswith("physical id"):
                    phys = line.split(":")[1].strip()
                elif line.startswith("core id"):
                    core = line.split(":")[1].strip()
                elif not line.strip():
                    if core is not None:
                        pairs.add((phys, core))
                    phys = core = None
            if pairs:
                return len(pairs)
    except OSError:
        pass
    return os.cpu_count() or 1


def _openblas_libs() -> list[ctypes.CDLL]:
    """The OpenBLAS libraries loaded in this process (numpy's first; scipy may bring another)."""
    import numpy as np

    try:
        with open("/proc/self/maps") as fh:
            paths = []
            for line in fh:
                path = line.split()[-1]
                if "openblas" in path.lower() and path.startswith("/") and path not in paths:
                    paths.append(path)
    except OSError:
        return []
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    paths.sort(key=lambda p: (0 if p.startswith(numpy_dir) and "numpy" in p else 1, p))
    libs = []
    for path in paths:
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


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


def _functions(names: tuple[str, ...]) -> list:
    out = []
    for lib in _openblas_libs():
        fn = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
        if fn is not None:
            out.append(fn)
    return out


@lru_cache(maxsize=1)
def _setters() -> tuple:
    return tuple(_functions(_SET))


@lru_cache(maxsize=1)
def _getters() -> tuple:
    return tuple(_functions(_GET))


def set_openblas_threads(n: int) -> bool:
    """Set the thread count of every loaded OpenBLAS (numpy's and scipy's); False if none offers it."""
    setters = _setters()
    for fn in setters:
        fn(int(max(1, n)))
    return bool(setters)


def openblas_threads() -> int | None:
    """numpy's OpenBLAS thread count, or None where it cannot be read."""
    getters = _getters()
    return int(getters[0]()) if getters else None


def set_blas_threads(n: int) -> bool:
    """Set the thread count of the BLAS onyx's GEMMs run on: MKL's where it is onyx's BLAS (see
    onyx.runtime.mkl; numpy's OpenBLAS then stays on one thread), else every loaded OpenBLAS's.
    False if no BLAS offers it."""
    mkl = _mkl()
    if mkl.active():
        mkl.set_threads(n)
        return True
    return set_openblas_threads(n)


def get_blas_threads() -> int | None:
    """The thread count of the BLAS onyx's GEMMs run on, or None where it cannot be read."""
    mkl = _mkl()
    return mkl.get_threads() if mkl.active() else openblas_threads()


def _mkl():
    """onyx.runtime.mkl, imported on first use (it imports onyx.ops, which imports this module)."""
    global _mkl_module
    if _mkl_module is None:
        from onyx.runtime import mkl

        _mkl_module = mkl
    return _mkl_module


_mkl_module = None


def _gemm(a, b, out=None):
    """onyx.runtime.blas.matmul (imported on first use: blas imports this module)."""
    from onyx.runtime.blas import matmul

    return matmul(a, b, out=out)


# ---------------------------------------------------------------------------------------------
# onyx's own intra-op parallelism: coarse splits of big kernels over a small shared thread pool.
#
# numpy's ufuncs are single-threaded and release the GIL, so a memory-bound kernel split in a few
# contiguous pieces runs ~1.3-1.4x faster on two cores. The same coarse split of a GEMM, with a
# single-threaded BLAS in each piece, matches a two-thread BLAS on an idle machine and degrades far
# more gracefully on a busy one (one join per kernel instead of OpenBLAS's many inner barriers).

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0
_local = threading.local()


@lru_cache(maxsize=1)
def default_threads() -> int:
    """The intra-op thread count when a session leaves it at 0: physical cores (capped at 8)."""
    return max(1, min(8, physical_cores()))


def intra_op_threads(ctx=None) -> int:
    """The thread count a kernel may use: ``ctx.intra_op_num_threads`` when set, else the default.

    Inside a pool worker it is 1, so nested parallel kernels run serially instead of deadlocking.
    """
    if getattr(_local, "worker", False):
        return 1
    n = int(getattr(ctx, "intra_op_num_threads", 0) or 0) if ctx is not None else 0
    return n if n > 0 else default_threads()


def _worker_init() -> None:
    _local.worker = True


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_workers
    pool = _pool
    if pool is not None and _pool_workers >= workers:
        return pool
    with _pool_lock:
        if _pool is None or _pool_workers < workers:
            old = _pool
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="onyx-intra-op", initializer=_worker_init)
            _pool_workers = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's pool threads: start a new pool when one is needed."""
    global _pool, _pool_lock, _pool_workers
    _pool = None
    _pool_workers = 0
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def parallel_for(fn, n_tasks: int, threads: int) -> None:
    """Run ``fn(i)`` for every ``i`` in ``range(n_tasks)`` on up to ``threads`` threads, the caller's
    included. Tasks are handed out one at a time, so a worker the OS does not schedule (a busy
    machine) leaves its share to the others instead of stalling the kernel. The first exception is
    re-raised once every started task has finished."""
    if n_tasks <= 0:
        return
    if threads <= 1 or n_tasks == 1 or getattr(_local, "worker", False):
        for i in range(n_tasks):
            fn(i)
        return
    workers = min(threads, n_tasks)
    pool = _get_pool(workers - 1)
    lock = threading.Lock()
    todo = iter(range(n_tasks))
    errors: list[BaseException] = []

    def runner() -> None:
        while True:
            with lock:
                i = None if errors else next(todo, None)
            if i is None:
                return
            try:
                fn(i)
            except BaseException as e:  # noqa: BLE001 - re-raised by the caller
                with lock:
                    errors.append(e)

    futures = [pool.submit(runner) for _ in range(workers - 1)]
    runner()
    for f in futures:
        f.result()
    if errors:
        raise errors[0]


def split_ranges(n: int, parts: int, align: int = 1) -> list[tuple[int, int]]:
    """``range(n)`` cut into at most ``parts`` contiguous, near-equal (start, stop) pieces whose inner
    bounds are multiples of ``align``."""
    parts = max(1, min(parts, -(-n // max(align, 1))))
    bounds = [0]
    for i in range(1, parts):
        b = (n * i // parts) // align * align
        if b > bounds[-1]:
            bounds.append(b)
    bounds.append(n)
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i + 1] > bounds[i]]


def blas_single_threaded() -> bool:
    """True when BLAS runs one thread per call, so that onyx may split GEMMs over its own threads."""
    try:
        return get_blas_threads() == 1
    except Exception:  # noqa: BLE001 - no readable BLAS: leave GEMMs whole
        return False


def loop_threads(ctx=None) -> int:
    """Threads for onyx's own parallel loops (elementwise, softmax, convolution epilogues and depthwise
    layers): :func:`intra_op_threads`, but 1 while BLAS runs threads of its own. Those spin between
    GEMMs and keep the other cores, so a second thread of ours shares a core with one: in models,
    where these loops follow GEMMs, one thread was faster (BERT's GELUs 7.9 against 6.9 ms a run,
    its attention 39.4 against 38.4; depthwise layers too)."""
    return intra_op_threads(ctx) if blas_single_threaded() else 1


#: Below this many multiply-adds a GEMM is not worth splitting over threads.
GEMM_SPLIT_MACS = 1 << 23


def matmul(a, b, out=None, threads: int | None = None):
    """``np.matmul(a, b, out=out)``, split over ``threads`` threads (default: the intra-op default)
    when BLAS is single-threaded, the operands are float arrays of rank >= 2 and the product is big
    enough: over rows of the flattened ``a`` (or columns of ``b``) when ``b`` is a matrix, else over
    the first batch axis longer than 1. Returns the result (``out`` when given)."""
    import numpy as np

    threads = intra_op_threads() if threads is None else threads
    if (
        threads <= 1
        or a.ndim < 2
        or b.ndim < 2
        or a.dtype != b.dtype
        or a.dtype.kind != "f"
        or a.shape[-1] != b.shape[-2]
    ):
        return _gemm(a, b, out=out)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if math.prod(batch) * m * n * k < GEMM_SPLIT_MACS or not blas_single_threaded():
        return _gemm(a, b, out=out)
    shape = batch + (m, n)
    if out is None:
        out = np.empty(shape, dtype=np.result_type(a, b))
    elif out.shape != shape:
        return _gemm(a, b, out=out)
    if b.ndim == 2 and out.flags.c_contiguous:
        a2 = a.reshape(-1, k)
        _matmul_2d(a2, b, out.reshape(-1, n), threads)
        return out
    axis = next((i for i, d in enumerate(batch) if d > 1), None)
    if axis is None:
        return _gemm(a, b, out=out)
    parts = split_ranges(batch[axis], 2 * threads)

    def cut(x, lo, hi):
        ax = axis - (len(batch) - (x.ndim - 2))
        if ax < 0 or x.shape[ax] == 1:
            return x
        return x[(slice(None),) * ax + (slice(lo, hi),)]

    def task(i: int) -> None:
        lo, hi = parts[i]
        _gemm(cut(a, lo, hi), cut(b, lo, hi), out=out[(slice(None),) * axis + (slice(lo, hi),)])

    parallel_for(task, len(parts), threads)
    return out


def _matmul_2d(a, b, out, threads: int) -> None:
    """``out[...] = a @ b`` for 2-D operands, split along out's longer axis."""

    m = a.shape[0]
    n = b.shape[1]
    pieces = 2 * threads
    if n >= m:
        parts = split_ranges(n, pieces, 64)

        def task(i: int) -> None:
            lo, hi = parts[i]
            _gemm(a, b[:, lo:hi], out=out[:, lo:hi])

    else:
        parts = split_ranges(m, pieces, 16)

        def task(i: int) -> None:
            lo, hi = parts[i]
            _gemm(a[lo:hi], b, out=out[lo:hi])

    parallel_for(task, len(parts), threads)
