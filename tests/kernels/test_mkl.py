"""MKL as onyx's GEMM library (onyx.kernels.mkl) where the perf extra installed it, numpy's BLAS else."""

import os
import subprocess
import sys

import numpy as np
import pytest

from onyx.kernels import blas, blas_threads, mkl

LAYOUTS = ["c", "f", "rows-window", "stack"]


def _operand(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "f":
        return np.asfortranarray(x)
    if layout == "rows-window":  # a window of a wider array: rows of a larger stride
        wide = np.zeros((x.shape[0], x.shape[1] + 7), x.dtype)
        wide[:, 3 : 3 + x.shape[1]] = x
        return wide[:, 3 : 3 + x.shape[1]]
    if layout == "stack":
        return x[None]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_matmul_matches_numpy(dtype, la, lb):
    rng = np.random.default_rng(0)
    for m, k, n in [(96, 80, 70), (1, 512, 300), (3, 4, 5), (50, 0, 40)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        A, B = _operand(a, la), _operand(b, lb)
        want = np.matmul(A, B)
        got = blas.matmul(A, B)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        out = np.full(want.shape, np.nan, dtype)
        assert blas.matmul(A, B, out=out) is out
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_matmul_into_windows_and_stacks():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((96, 80)).astype(np.float32)
    wide = np.zeros((64, 100), np.float32)
    blas.matmul(a, b, out=wide[:, 10:90])  # a row-major window of a wider array
    np.testing.assert_allclose(wide[:, 10:90], a @ b, rtol=1e-5, atol=1e-4)
    assert not wide[:, :10].any() and not wide[:, 90:].any()
    a3 = rng.standard_normal((3, 64, 96)).astype(np.float32)  # a C-contiguous stack of rows
    np.testing.assert_allclose(blas.matmul(a3, b), a3 @ b, rtol=1e-5, atol=1e-4)
    # strided (non-contiguous) stacks, several matrices on the right, integers: numpy's own result
    np.testing.assert_allclose(blas.matmul(a3[:, ::2], b), a3[:, ::2] @ b, rtol=1e-5, atol=1e-4)
    b3 = rng.standard_normal((3, 96, 8)).astype(np.float32)
    np.testing.assert_allclose(blas.matmul(a3, b3), a3 @ b3, rtol=1e-5, atol=1e-4)
    ai = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(blas.matmul(ai, ai.T), ai @ ai.T)


def test_matmul_bad_shapes_raise_as_numpy_does():
    with pytest.raises(ValueError):
        blas.matmul(np.ones((300, 40), np.float32), np.ones((50, 300), np.float32))
    with pytest.raises(ValueError):
        blas.matmul(np.ones((300, 40), np.float32), np.ones((40, 300), np.float32), out=np.empty((300, 2)))


def test_big_products_skip_numpy_on_mkl(monkeypatch):
    if not mkl.active():
        pytest.skip("MKL is not onyx's BLAS here")
    a = np.ones((128, 256), np.float32)
    b = np.ones((256, 64), np.float32)

    def refuse(*args, **kwargs):
        raise AssertionError("np.matmul ran")

    monkeypatch.setattr(blas.np, "matmul", refuse)
    np.testing.assert_array_equal(blas.matmul(a, b), np.full((128, 64), 256, np.float32))


def test_thread_counts_are_scoped_to_the_call():
    """MKL's count changes for this thread only, numpy's OpenBLAS's for the scope, and both are back
    afterwards (threadpoolctl, the ecosystem's tool, reads them)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def counts():
        return sorted((i["internal_api"], i["num_threads"]) for i in threadpoolctl.threadpool_info())

    before = counts()
    with blas_threads.limited(1, openblas=1):
        assert blas_threads.blas_threads() == 1
        assert blas_threads.openblas_threads() in (1, None)
        assert blas_threads.single_threaded()
    assert counts() == before
    if mkl.active():
        assert mkl.threading_layer() in ("gnu", "intel")


def test_sessions_leave_the_process_blas_threads_as_they_found_them():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import onyx
    from onyx.ir.builder import GraphBuilder

    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [64, 256])
    w = b.initializer("w", np.ones((256, 256), np.float32))
    b.output(b.MatMul(x, w), "y", np.float32, [64, 256])
    model = b.model()
    before = sorted((i["internal_api"], i["num_threads"]) for i in threadpoolctl.threadpool_info())
    for threads in (0, 1, 2):
        opts = onyx.SessionOptions()
        opts.intra_op_num_threads = threads
        s = onyx.InferenceSession(model, opts)
        assert (s.run(None, {"x": np.ones((64, 256), np.float32)})[0] == 256).all()
    after = sorted((i["internal_api"], i["num_threads"]) for i in threadpoolctl.threadpool_info())
    assert [c for c in after if c[0] == "openblas"] == [c for c in before if c[0] == "openblas"]


def test_concurrent_scopes_restore_the_first_count():
    """Two scopes open at once on two threads (two sessions running) leave OpenBLAS's count as it was
    when the first opened, whichever closes last; each thread's MKL count is its own. The steps are
    sequenced with events, not left to the scheduler."""
    import threading

    before = blas_threads.openblas_threads()
    if before is None:
        pytest.skip("no readable OpenBLAS")
    mkl_before = blas_threads.blas_threads()
    step = [threading.Event() for _ in range(4)]
    seen = {}

    def first():
        with blas_threads.limited(1, openblas=1):
            step[0].set()
            step[1].wait(30)
        step[2].set()  # closed while the second is still open

    def second():
        step[0].wait(30)
        with blas_threads.limited(1, openblas=2):
            step[1].set()
            step[2].wait(30)
            seen["while_second_open"] = blas_threads.openblas_threads()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen["while_second_open"] == 2
    assert blas_threads.openblas_threads() == before
    assert blas_threads.blas_threads() == mkl_before  # this thread's count was never touched


def _python(code: str, **env) -> str:
    full = dict(os.environ, **env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full
    ).stdout.strip()


def test_switches_keep_numpys_blas():
    code = (
        "import numpy as np; from onyx.kernels import blas, blas_threads, mkl;"
        "a = np.ones((200, 300), np.float32);"
        "assert (blas.matmul(a, a.T) == 300).all();"
        "print(mkl.active(), blas_threads.blas_threads() == blas_threads.openblas_threads())"
    )
    assert _python(code, ONYX_BLAS="openblas") == "False True"
    assert _python(code, ONYX_NO_PERF="1") == "False True"


def test_without_mkl_installed_numpy_runs_everything():
    code = (
        "import numpy as np; from onyx.kernels import blas, mkl;"
        "mkl._candidates = lambda: [];"
        "a = np.ones((200, 300), np.float32);"
        "assert (blas.matmul(a, a.T) == 300).all();"
        "print(mkl.active(), mkl.loaded(), mkl.gemm_function('s'))"
    )
    assert _python(code) == "False None None"


def test_stacks_go_one_product_a_call(monkeypatch):
    """A batched convolution's column GEMM (one weight, a stack of images): one BLAS call per image on
    MKL, the same values as numpy's loop, into a strided output window too."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((1, 64, 96)).astype(np.float32)
    cols = rng.standard_normal((3, 1, 96, 200)).astype(np.float32)
    want = np.matmul(w, cols)
    y = np.zeros((3, 1, 64, 10, 40), np.float32)
    dst = y[:, :, :, 2:7].reshape(3, 1, 64, 200)  # whole rows of y: a view
    assert np.may_share_memory(dst, y)
    if mkl.active():
        real = blas.np.matmul

        def refuse(a, b, **kwargs):
            if a.ndim > 2 or b.ndim > 2:
                raise AssertionError("numpy's loop ran the stack")
            return real(a, b, **kwargs)

        monkeypatch.setattr(blas.np, "matmul", refuse)
    np.testing.assert_allclose(blas.matmul(w, cols), want, rtol=1e-5, atol=1e-4)
    assert blas.matmul(w, cols, out=dst) is dst
    np.testing.assert_allclose(y[:, :, :, 2:7].reshape(3, 1, 64, 200), want, rtol=1e-5, atol=1e-4)
    assert not y[:, :, :, :2].any() and not y[:, :, :, 7:].any()
    monkeypatch.undo()
    # broadcasting that does not agree: numpy's error
    with pytest.raises(ValueError):
        blas.matmul(np.ones((2, 64, 96), np.float32), np.ones((3, 96, 200), np.float32))


def test_a_foreign_mkl_or_openmp_keeps_numpys_blas():
    """Another copy of MKL or Intel OpenMP in the process (numpy built on MKL, a conda environment's
    own): loading a second would abort the process, so onyx leaves BLAS to numpy."""
    ours = "/env/lib"
    assert (
        mkl.foreign_runtime(ours, ["/env/lib/libmkl_rt.so.3", "/env/lib/libiomp5.so", "/usr/lib/libc.so.6"])
        is None
    )
    assert mkl.foreign_runtime(ours, ["/opt/conda/lib/libiomp5.so"]) == "/opt/conda/lib/libiomp5.so"
    assert mkl.foreign_runtime(ours, ["/opt/conda/lib/libmkl_core.so.2"]) == "/opt/conda/lib/libmkl_core.so.2"
    assert (
        mkl.foreign_runtime(ours, ["/usr/lib/x86_64-linux-gnu/libgomp.so.1"]) is None
    )  # GNU OpenMP: no clash
    code = (
        "from onyx.kernels import mkl, blas_threads;"
        "blas_threads.openblas_libraries = lambda: ();"  # numpy on another BLAS
        "print(mkl.active())"
    )
    assert _python(code) == "False"


def test_dimensions_past_32_bits_are_not_handed_to_an_lp64_blas():
    """MKL's LP64 interface takes 32-bit integers (ctypes would wrap larger ones silently): such
    products are declined (numpy's path) or refused with a clear error, never passed on."""
    import ctypes

    lp64 = type("F", (), {"argtypes": [ctypes.c_int] * 14})()
    ilp64 = type("F", (), {"argtypes": [ctypes.c_int] * 3 + [ctypes.c_int64] * 11})()
    assert blas._ints_fit(lp64, 3, 2**31 - 1)
    assert not blas._ints_fit(lp64, 3, 2**31)
    assert blas._ints_fit(ilp64, 3, 2**40)


def test_creation_decides_without_loading_mkl():
    """A session's creation asks whether MKL will run its GEMMs (weights keep their layout then) without
    loading it; the first product loads it."""
    code = (
        "import numpy as np, onyx; from onyx.kernels import mkl;"
        "from onyx.ir.builder import GraphBuilder;"
        "b = GraphBuilder(opset=17); x = b.input('x', np.float32, [64, 256]);"
        "w = b.initializer('w', np.ones((256, 256), np.float32));"
        "b.output(b.MatMul(x, w), 'y', np.float32, [64, 256]);"
        "s = onyx.InferenceSession(b.model());"
        "before = mkl.library.cache_info().currsize;"
        "y = s.run(None, {'x': np.ones((64, 256), np.float32)})[0];"
        "assert (y == 256).all();"
        "print(before, mkl.expected() == mkl.active(), mkl.library.cache_info().currsize)"
    )
    assert _python(code) == "0 True 1"


def test_the_distribution_list_is_the_fallback(monkeypatch):
    monkeypatch.setattr(mkl.glob, "glob", lambda pattern: [])
    listed = mkl._candidates()
    assert listed == sorted({os.path.realpath(p) for p in mkl._listed_candidates() if os.path.exists(p)})
    if mkl.active():
        assert listed  # the wheel's file list names libmkl_rt too
