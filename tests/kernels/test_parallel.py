"""onyx's intra-op thread pool (onyx.kernels.parallel): parallel_for, split_ranges and the split matmul."""

import threading

import numpy as np
import pytest

from onyx.kernels import parallel as T
from onyx.kernels.blas_threads import blas_threads, limited


def test_split_ranges_cover_and_align():
    assert T.split_ranges(10, 2) == [(0, 5), (5, 10)]
    assert T.split_ranges(5, 8) == [(i, i + 1) for i in range(5)]
    assert T.split_ranges(0, 3) == []
    parts = T.split_ranges(1000, 3, 64)
    assert parts[0][0] == 0 and parts[-1][1] == 1000
    assert all(lo % 64 == 0 for lo, _ in parts)
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False))


def test_parallel_for_runs_every_task_once():
    seen = []
    lock = threading.Lock()

    def fn(i):
        with lock:
            seen.append(i)

    T.parallel_for(fn, 37, 3)
    assert sorted(seen) == list(range(37))


def test_parallel_for_reraises_and_nested_calls_run_serially():
    def bad(i):
        if i == 3:
            raise ValueError("task 3")

    with pytest.raises(ValueError, match="task 3"):
        T.parallel_for(bad, 8, 2)

    inner = []

    def outer(i):
        assert T.intra_op_threads() >= 1
        T.parallel_for(lambda j: inner.append((i, j)), 4, 4)

    T.parallel_for(outer, 4, 2)
    assert sorted(inner) == [(i, j) for i in range(4) for j in range(4)]


@pytest.fixture
def single_blas():
    with limited(1, openblas=1):
        yield


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((1, 128, 768), (768, 512)),
        ((1, 12, 128, 64), (1, 12, 64, 128)),
        ((4, 1, 64, 96), (1, 3, 96, 80)),
        ((300, 700), (700, 40)),
        ((64, 2000), (2000, 300)),
        ((3, 5), (5, 2)),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_matches_numpy(single_blas, sa, sb, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    ref = np.matmul(a, b)
    for threads in (1, 2, 3):
        r = T.matmul(a, b, threads=threads)
        assert r.shape == ref.shape and r.dtype == ref.dtype
        np.testing.assert_allclose(r, ref, rtol=1e-4, atol=1e-3)
    out = np.empty(ref.shape, dtype)
    assert T.matmul(a, b, out=out, threads=2) is out
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_matmul_transposed_views(single_blas):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, 128, 12, 64)).astype(np.float32).transpose(0, 2, 1, 3)
    k = rng.standard_normal((1, 128, 12, 64)).astype(np.float32).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(T.matmul(q, k, threads=2), np.matmul(q, k), rtol=1e-5, atol=1e-4)


def test_parallel_for_in_forked_child():
    import os

    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    T.parallel_for(lambda i: None, 4, 2)  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # child: must not wait on the parent's (absent) pool threads
        seen = []
        T.parallel_for(seen.append, 6, 2)
        os._exit(0 if sorted(seen) == list(range(6)) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_loop_threads_follow_blas(single_blas):
    # one BLAS thread: onyx's loops take the intra-op threads; BLAS's own threads: one (they spin
    # between GEMMs on the other cores)
    assert T.loop_threads() == T.intra_op_threads()
    with limited(2, openblas=2):
        assert T.loop_threads() == (1 if blas_threads() == 2 else T.intra_op_threads())
