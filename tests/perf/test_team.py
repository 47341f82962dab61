"""Compiled loops on MKL's OpenMP threads (onyx.runtime.team): a forked task runs once on every thread
of the team, only while MKL (loaded by a product) runs on Intel OpenMP, and every kernel that forks
gives exactly what its single-threaded call gives, over row counts that do not split evenly, biases,
activations, strides and batches."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import onyx
from onyx.errors import OnyxError
from onyx.ops import _native, _perf
from onyx.ops.contrib import _common as contrib_common
from onyx.ops.math import _erf
from onyx.ops.nn import conv as conv_mod
from onyx.runtime import blas, mkl, team, threads
from tests.perf.test_conv_channels_last import _block
from tests.runtime.test_mkl import _python

numba = pytest.importorskip("numba")
TASK = pytest.importorskip("onyx.ops._jit_team").TASK
pytestmark = pytest.mark.skipif(
    _perf.jit_module("onyx.ops.math._jit") is None, reason="the perf extra (numba) is not installed"
)


@pytest.fixture
def team3():
    """MKL loaded and on up to three threads (MKL caps it at the cores), restored afterwards."""
    blas.matmul(np.ones((256, 256), np.float32), np.ones((256, 256), np.float32))  # loads MKL if chosen
    if not mkl.active() or team._openmp() is None:
        pytest.skip("MKL with Intel OpenMP is not onyx's BLAS here")
    before = threads.get_blas_threads()
    threads.set_blas_threads(3)
    try:
        if team.size() < 2:
            pytest.skip("MKL runs one thread here")
        assert team.size() == threads.get_blas_threads()
        yield team.size()
    finally:
        threads.set_blas_threads(before)


def _single(monkeypatch):
    monkeypatch.setattr(team, "size", lambda: 1)


@numba.cfunc(TASK)
def _mark(gtid, tid, p):  # pragma: no cover - compiled
    p[1 + tid[0]] = 100 + tid[0] + 10 * p[0]


def test_a_task_runs_once_on_every_thread(team3):
    params = np.zeros(1 + team3 + 2, np.int64)
    team.fork(_mark.address, params, team3)
    assert params[0] == team3
    assert params[1 : 1 + team3].tolist() == [100 + t + 10 * team3 for t in range(team3)]
    assert not params[1 + team3 :].any()  # no thread past the team's size
    params[:] = 0
    team.fork(_mark.address, params, 1)  # a team of one: the caller alone
    assert params[1:].tolist() == [110] + [0] * (team3 + 1)


def test_parameters_must_be_a_contiguous_int64_block(team3):
    with pytest.raises(TypeError):
        team.fork(_mark.address, np.zeros(4, np.int32), 2)
    with pytest.raises(TypeError):
        team.fork(_mark.address, np.zeros(8, np.int64)[::2], 2)


def test_a_team_only_once_a_product_loaded_mkl():
    code = (
        "import numpy as np; from onyx.runtime import blas, mkl, team, threads;"
        "before = team.size(); loaded = mkl.loaded() is not None;"
        "blas.matmul(np.ones((300, 300), np.float32), np.ones((300, 300), np.float32));"
        "threads.set_blas_threads(2);"
        "print(before, loaded, mkl.active() and team._openmp() is not None, mkl.get_threads(), team.size())"
    )
    first, loaded, on_mkl, mkl_threads, after = _python(code).split()
    assert (first, loaded) == ("1", "False")  # asking never loads MKL
    assert after == (mkl_threads if on_mkl == "True" else "1")  # MKL caps its count at the cores
    assert _python(code, ONYX_BLAS="openblas").split() == ["1", "False", "False", "None", "1"]


GELU_SHAPES = [(7, 3072), (1, 3, 4096 * 5 + 17), (2, 5, 96)]


@pytest.mark.parametrize("shape", GELU_SHAPES)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("kernel", ["gelu32", "gelu_tanh32"])
def test_gelu_rows_on_the_team_match_one_thread(team3, monkeypatch, shape, bias, kernel):
    jit = _perf.jit_module("onyx.ops.math._jit")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.flat[::97] = np.nan
    x.flat[5::101] = np.inf
    b = rng.standard_normal(shape[-1]).astype(np.float32) if bias else None
    monkeypatch.setattr(_erf, "_JIT_PARALLEL", 64)
    got = _erf.map_rows_jit("_" + kernel + "_task", x, b)
    with monkeypatch.context() as m:
        _single(m)
        want = _erf.map_rows_jit("_" + kernel + "_task", x, b)
    np.testing.assert_array_equal(got, want)
    rows = x.reshape(-1, shape[-1]) if bias else None
    if rows is not None:  # and what the compiled loop gives called straight from numba
        direct = np.empty_like(rows)
        getattr(jit, kernel)(rows, b, direct, 0, rows.shape[0])
        np.testing.assert_array_equal(got.reshape(rows.shape), direct)


@pytest.mark.parametrize(
    "bias_shape", [None, (1, 1, 1, 37), (2, 1, 1, 37), (2, 1, 5, 37), (2, 3, 5, 37), (1, 3, 1, 37)]
)
@pytest.mark.parametrize("scale", [0.125, -0.5])
def test_softmax_rows_on_the_team_match_one_thread(team3, monkeypatch, bias_shape, scale):
    jit = _perf.jit_module("onyx.ops.math._jit")
    rng = np.random.default_rng(4)
    scores = (rng.standard_normal((2, 3, 5, 37)) * 5).astype(np.float32)
    scores[0, 1, 2] = -np.inf
    scores[1, 2, 3, 4] = np.nan
    bias = None if bias_shape is None else rng.standard_normal(bias_shape).astype(np.float32)
    monkeypatch.setattr(contrib_common, "_SOFTMAX_PARALLEL", 16)
    got = scores.copy()
    contrib_common._softmax_native(got, scale, bias, "test")
    want = scores.copy()
    with monkeypatch.context() as m:
        _single(m)
        contrib_common._softmax_native(want, scale, bias, "test")
    np.testing.assert_array_equal(got, want)
    bb = got if bias is None else contrib_common._bias_rows(bias, scores.shape, "test")
    direct = scores.copy()  # what the compiled loop gives called straight from numba
    jit.softmax_rows(direct, np.float32(scale), bb, bias is not None, 0, 30)
    np.testing.assert_array_equal(got, direct)


BLOCKS = [
    # (n, cin, expand, cout, hw, k, stride, pads, act, residual)
    (1, 8, 24, 8, (13, 11), (3, 3), 1, [1, 1, 1, 1], "Clip", True),
    (2, 6, 20, 10, (9, 12), (3, 3), 2, [1, 1, 1, 1], "Relu", False),
    (3, 4, 16, 4, (7, 7), (5, 5), 1, [2, 2, 2, 2], "LeakyRelu", True),
    (1, 5, 18, 7, (6, 10), (3, 3), 2, [0, 1, 1, 0], "Sigmoid", False),
    (1, 4, 12, 6, (2, 5), (3, 3), 1, [1, 1, 1, 1], "Relu", False),  # fewer rows than threads
]


@pytest.mark.parametrize("case", BLOCKS)
def test_channels_last_blocks_on_the_team_match_one_thread(team3, monkeypatch, case):
    n, cin, expand, cout, hw, k, stride, pads, act, residual = case
    model, feeds = _block(n, cin, expand, cout, hw, k, stride, pads, act, np.float32, residual)
    monkeypatch.setattr(conv_mod, "_TEAM_MIN", 8)
    forks = []
    real_fork = team.fork
    monkeypatch.setattr(team, "fork", lambda *a: (forks.append(a[0]), real_fork(*a)))
    sess = onyx.InferenceSession(model)
    got = [sess.run(None, feeds)[0] for _ in range(2)]  # the second run replays the recorded kernels
    nn = "onyx.ops.nn._jit"
    assert _native.task(nn, "_depthwise_cl_task") in forks and _native.task(nn, "_epilogue_cl_task") in forks
    with monkeypatch.context() as m:
        _single(m)
        want = onyx.InferenceSession(model).run(None, feeds)[0]
    for g in got:
        np.testing.assert_array_equal(g, want)


def test_float64_stays_on_one_thread(team3, monkeypatch):
    model, feeds = _block(1, 4, 12, 4, (8, 8), (3, 3), 1, [1, 1, 1, 1], "Relu", np.float64, True)
    monkeypatch.setattr(conv_mod, "_TEAM_MIN", 8)
    monkeypatch.setattr(team, "fork", lambda *a: (_ for _ in ()).throw(AssertionError("forked")))
    sess = onyx.InferenceSession(model)
    assert sess.run(None, feeds)[0].dtype == np.float64


def test_bad_feeds_still_raise_before_any_fork(team3, monkeypatch):
    model, feeds = _block(1, 4, 12, 4, (8, 8), (3, 3), 1, [1, 1, 1, 1], "Relu", np.float32, False)
    sess = onyx.InferenceSession(model)
    with pytest.raises(OnyxError):
        sess.run(None, {"x": np.ones((1, 5, 8, 8), np.float32)})


def test_sessions_on_several_python_threads_and_in_a_forked_child(team3, monkeypatch):
    """Each Python thread that forks is a root with a team of its own (as for MKL's GEMMs); a child
    process made by os.fork runs its tasks on one thread (the parent's team does not exist there:
    a fork call in the child waited for it forever) and gives the same values."""
    import threading

    model, feeds = _block(1, 8, 24, 8, (13, 11), (3, 3), 1, [1, 1, 1, 1], "Clip", np.float32, True)
    monkeypatch.setattr(conv_mod, "_TEAM_MIN", 8)
    sess = onyx.InferenceSession(model)
    want = sess.run(None, feeds)[0]
    same = []

    def work():
        for _ in range(10):
            same.append(np.array_equal(sess.run(None, feeds)[0], want))

    workers = [threading.Thread(target=work) for _ in range(3)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=120)
    assert same == [True] * 30
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = team.size() == 1 and np.array_equal(sess.run(None, feeds)[0], want)
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 120
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.read(read, 1) == b"1" and done[1] == 0


def test_one_intra_op_thread_means_no_team(team3, monkeypatch):
    model, feeds = _block(1, 8, 24, 8, (13, 11), (3, 3), 1, [1, 1, 1, 1], "Clip", np.float32, True)
    monkeypatch.setattr(conv_mod, "_TEAM_MIN", 8)
    want = onyx.InferenceSession(model).run(None, feeds)[0]
    monkeypatch.setattr(team, "fork", lambda *a: (_ for _ in ()).throw(AssertionError("forked")))
    opts = onyx.SessionOptions()
    opts.intra_op_num_threads = 1
    got = onyx.InferenceSession(model, opts).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("simplified", [False, True])
def test_norm_rows_from_cached_code_match_numba(skip, simplified):
    from onyx.ops.nn._norm import norm_rows_jit

    jit = _perf.jit_module("onyx.ops.nn._jit")
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((37, 96)) * 3).astype(np.float32)
    x[3, 5] = np.nan
    sk = rng.standard_normal((37, 96)).astype(np.float32) if skip else None
    g, b = rng.standard_normal(96).astype(np.float32), rng.standard_normal(96).astype(np.float32)
    bias = rng.standard_normal(96).astype(np.float32)
    y, s, mean, inv = norm_rows_jit(
        x, 1e-5, g, None if simplified else b, skip=sk, bias=bias, simplified=simplified, keep_sum=True
    )
    e1, e2 = np.zeros(0, np.float32), np.zeros((0, 0), np.float32)
    want = [np.empty_like(x), np.empty_like(x), np.empty(37, np.float32), np.empty(37, np.float32)]
    jit.norm_rows(x, e2 if sk is None else sk, bias, g, e1 if simplified else b, 1e-5, simplified, *want)
    for got, ref in zip((y, s, mean.ravel(), inv.ravel()), want):
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape", [(1, 5, 112, 112), (2, 3, 13, 11)])
def test_max_pool_planes_on_the_team_match_one_thread_and_numpy(team3, monkeypatch, shape):
    from onyx.ops.nn import _pool

    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[::13] = np.nan
    x[0, 0, :4] = np.nan  # whole windows of NaN
    x[0, -1, 5] = np.inf
    args = ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    out = tuple((d + 2 - 3) // 2 + 1 for d in shape[2:])
    monkeypatch.setattr(_pool, "_TEAM_MIN", 8)
    got = _pool.max_pool(x, *args, out)
    with monkeypatch.context() as m:
        _single(m)
        one = _pool.max_pool(x, *args, out)
    plain = _pool.blocked_reduce(x, (3, 3), (2, 2), (1, 1), (1, 1), out, np.maximum, -np.inf)
    np.testing.assert_array_equal(got, one)
    np.testing.assert_array_equal(got, plain)


def _conv_block(n, c, hw, seed):
    """3x3 convolution + bias + residual + ReLU, then a strided 1x1 convolution + bias (the two NCHW
    convolution paths whose epilogue is compiled), in float32."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) / 6).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b1"),
        numpy_helper.from_array((rng.standard_normal((2 * c, c, 1, 1)) / 4).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(2 * c).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("Conv", ["r", "w2", "b2"], ["y"], strides=[2, 2]),
    ]
    graph = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, hw, hw])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    x[0, 0, 0, :3] = np.nan
    return model.SerializeToString(), {"x": x}


@pytest.mark.parametrize("n, c, hw", [(1, 16, 14), (2, 24, 9), (1, 64, 56)])
def test_conv_epilogues_on_the_team_match_one_thread_and_numba(team3, monkeypatch, n, c, hw):
    model, feeds = _conv_block(n, c, hw, n * c + hw)
    monkeypatch.setattr(conv_mod, "_TEAM_MIN", 8)
    tasks = []
    real = team.run_rows
    monkeypatch.setattr(team, "run_rows", lambda *a: tasks.append(a[0]) or real(*a))
    got = onyx.InferenceSession(model).run(None, feeds)
    assert _native.task("onyx.ops.nn._jit", "_epilogue_task") in tasks
    with monkeypatch.context() as m:
        _single(m)
        one = onyx.InferenceSession(model).run(None, feeds)
    with monkeypatch.context() as m:  # numba's own loop (the float64 route), numba being loaded here
        m.setattr(conv_mod._native, "available", lambda: False)
        by_numba = onyx.InferenceSession(model).run(None, feeds)
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain = onyx.InferenceSession(model).run(None, feeds)
    for g, o, b, p in zip(got, one, by_numba, plain):
        np.testing.assert_array_equal(g, o)
        np.testing.assert_array_equal(g, b)
        np.testing.assert_allclose(g, p, rtol=1e-5, atol=1e-5)
