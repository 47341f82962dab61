"""onyx's compiled loops on MKL's OpenMP threads.

Once MKL runs the GEMMs, its Intel OpenMP threads spin between products (for KMP_BLOCKTIME, 200 ms by
default) and hold the other cores, so a thread of onyx's own shares a core with one of them and
compiled loops ran fastest on one thread (:func:`onyx.runtime.threads.loop_threads`). This module
hands such a loop to that same team of threads instead: ``__kmpc_fork_call``, the entry point a
compiler emits for ``#pragma omp parallel``, runs a compiled task (a numba ``cfunc``) on every thread
of the team, the caller's included, and returns when all are done. The threads are already awake,
so a fork costs a few microseconds.

A task has the C signature ``void task(int32 *gtid, int32 *tid, int64 *params)``: ``*tid`` is the
thread's index in the team and ``params[0]`` the team's size (set by :func:`fork`); the rest of
``params`` is the task's own (array addresses, shapes), packed by its caller. Tasks must not raise.

Forks happen on Linux only, and only while MKL (loaded by a product, never by this module) runs with
Intel OpenMP on more than one thread; otherwise :func:`size` is 1 and :func:`run_rows` calls the task
itself: once, or as several parts over onyx's own threads while BLAS runs none (:func:`run_parts`).
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

import numpy as np

from onyx.runtime import mkl


class _Ident(ctypes.Structure):
    """OpenMP's ``ident_t``: where a parallel region comes from (read for diagnostics only)."""

    _fields_ = [
        ("reserved_1", ctypes.c_int32),
        ("flags", ctypes.c_int32),
        ("reserved_2", ctypes.c_int32),
        ("reserved_3", ctypes.c_int32),
        ("psource", ctypes.c_char_p),
    ]


_KMP_IDENT_KMPC = 0x02
_LOC = _Ident(0, _KMP_IDENT_KMPC, 0, 0, b";onyx;team;0;0;;")
_LOC_REF = ctypes.byref(_LOC)


@cache
def _openmp() -> ctypes.CDLL | None:
    """The Intel OpenMP runtime MKL loaded (found among this process's mappings), or None."""
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "libiomp5" in line and "/" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            thread_num = lib.__kmpc_global_thread_num
            push = lib.__kmpc_push_num_threads
            fork_call = lib.__kmpc_fork_call
        except (OSError, AttributeError):
            continue
        thread_num.argtypes = [ctypes.c_void_p]
        thread_num.restype = ctypes.c_int32
        push.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32]
        push.restype = None
        fork_call.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p]
        fork_call.restype = None
        return lib
    return None


#: set in a child process made by os.fork: the parent's team does not exist there (Intel OpenMP's
#: workers are not copied by fork, and a fork call in the child waited for them forever)
_FORKED = [False]


def _forget_team_in_child() -> None:
    _FORKED[0] = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_team_in_child)


def size() -> int:
    """Threads a forked task runs on now: MKL's thread count while MKL (already loaded) runs on
    Intel OpenMP, else 1 (and 1 in a child process made by os.fork)."""
    lib = mkl.loaded()
    if lib is None or _FORKED[0]:
        return 1
    n = int(lib.MKL_Get_Max_Threads())
    if n <= 1 or _openmp() is None:
        return 1
    return n


_TASK_CALL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_IDS = [(ctypes.c_int32 * n)(*range(n)) for n in range(17)]  # thread ids 0..n-1, kept alive
_CALLABLES: dict[int, ctypes._CFuncPtr] = {}


def run_rows(task_address: int, params: np.ndarray, rows: int, parallel: bool) -> None:
    """Run a compiled task whose work is ``rows`` rows: on MKL's team when ``parallel`` and MKL's
    threads are there, else on onyx's own threads when ``parallel`` and BLAS runs none of its own
    (onyx.runtime.threads.loop_threads), else in one call on this thread."""
    members = size() if parallel else 1
    if members > 1:
        fork(task_address, params, min(members, rows))
        return
    from onyx.runtime.threads import loop_threads

    threads = loop_threads() if parallel else 1
    run_parts(task_address, params, min(2 * threads, rows) if threads > 1 else 1, threads)


def run_parts(task_address: int, params: np.ndarray, parts: int, threads: int) -> None:
    """Run the compiled task at ``task_address`` as ``parts`` calls, call i acting as thread i of
    ``parts``, over ``threads`` of onyx's own threads (onyx.runtime.threads.parallel_for; each call
    releases the GIL): for when BLAS runs no threads of its own to fork onto."""
    _check(params)
    parts = max(1, parts)
    params[0] = parts
    call = _CALLABLES.get(task_address)
    if call is None:
        call = _CALLABLES[task_address] = _TASK_CALL(task_address)
    ids = _IDS[parts] if parts < len(_IDS) else (ctypes.c_int32 * parts)(*range(parts))
    base = ctypes.addressof(ids)
    if parts == 1:
        call(base, base, params.ctypes.data)
        return
    from onyx.runtime.threads import parallel_for

    parallel_for(lambda i: call(base, base + 4 * i, params.ctypes.data), parts, threads)


def _check(params: np.ndarray) -> None:
    if params.dtype != np.int64 or not params.flags.c_contiguous:
        raise TypeError("a team task's parameters are a contiguous int64 array")


def fork(task_address: int, params: np.ndarray, threads: int) -> None:
    """Run the compiled task at ``task_address`` on ``threads`` threads of MKL's OpenMP team (see the
    module docstring); ``params`` is its int64 parameter block, whose first entry this sets. Blocks
    until every thread is done. ``threads`` comes from :func:`size`, at most the task's rows."""
    omp = _openmp()
    if omp is None:
        raise RuntimeError("no Intel OpenMP runtime in this process: run_rows runs tasks without one")
    _check(params)
    threads = max(1, threads)  # a task splits its work by params[0]: never zero, even for no rows
    params[0] = threads
    omp.__kmpc_push_num_threads(_LOC_REF, omp.__kmpc_global_thread_num(_LOC_REF), threads)
    omp.__kmpc_fork_call(_LOC_REF, 1, task_address, params.ctypes.data)
