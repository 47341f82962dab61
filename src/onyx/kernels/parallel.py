"""onyx's own intra-op threads: a small shared pool of Python threads for numpy kernels split in a few
coarse pieces (numpy releases the GIL), and the thread counts a kernel may use."""

from __future__ import annotations

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


def _gemm(a, b, out=None):
    """onyx.kernels.blas.matmul (imported on first use: blas imports this module's neighbours)."""
    from onyx.kernels.blas import matmul

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
    n = int(getattr(ctx, "intra_op_num_threads", 0) or 0) if ctx is not None else 0
    return pool_threads(n)


def pool_threads(threads: int = 0) -> int:
    """The thread count a kernel may use for a session's ``intra_op_num_threads`` of ``threads``
    (0: the default); 1 inside a pool worker (see :func:`intra_op_threads`)."""
    if getattr(_local, "worker", False):
        return 1
    return threads if threads > 0 else default_threads()


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


def loop_threads(ctx=None) -> int:
    """Threads for the numpy kernels split over onyx's own pool: :func:`intra_op_threads`, but 1 while
    BLAS runs threads of its own. Those spin between GEMMs and keep the other cores, so a second thread
    of ours shares a core with one (in models one thread was faster: BERT's GELUs 7.9 against 6.9 ms a
    run). Compiled kernels run on OpenMP's threads instead (:func:`onyx.kernels._threads.resolve`)."""
    return loop_pool_threads(int(getattr(ctx, "intra_op_num_threads", 0) or 0) if ctx is not None else 0)


def loop_pool_threads(threads: int = 0) -> int:
    """:func:`loop_threads` for a session's ``intra_op_num_threads`` of ``threads`` (0: the default)."""
    from onyx.kernels.blas_threads import single_threaded

    return pool_threads(threads) if single_threaded() else 1


#: Below this many multiply-adds a GEMM is not worth splitting over threads.
GEMM_SPLIT_MACS = 1 << 23


def matmul(a, b, out=None, threads: int | None = None):
    """``np.matmul(a, b, out=out)``, split over ``threads`` threads (default: the intra-op default)
    when BLAS is single-threaded, the operands are float arrays of rank >= 2 and the product is big
    enough: over rows of the flattened ``a`` (or columns of ``b``) when ``b`` is a matrix, else over
    the first batch axis longer than 1. Returns the result (``out`` when given)."""
    import numpy as np

    from onyx.kernels.blas_threads import single_threaded

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
    if math.prod(batch) * m * n * k < GEMM_SPLIT_MACS or not single_threaded():
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
