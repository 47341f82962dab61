"""Session and run options that change behaviour: threads, profiling, optimized model output, terminate."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.ir.builder import GraphBuilder
from tests.runtime._util import assert_same, make_model, ort_session, tensor


def _model():
    rs = np.random.RandomState(1)
    w = rs.randn(6, 5).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["y"], name="neg"),
        helper.make_node("Identity", ["y"], ["z"]),  # no name
    ]
    return make_model(
        nodes,
        [tensor("x", TensorProto.FLOAT, ["N", 6])],
        [tensor("z", TensorProto.FLOAT, ["N", 5])],
        initializers=[helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel())],
    )


X = np.random.RandomState(2).randn(3, 6).astype(np.float32)


def test_intra_op_num_threads_one():
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = onyx.InferenceSession(_model().SerializeToString(), so)
    assert s.get_session_options().intra_op_num_threads == 1
    assert_same(s.run(None, {"x": X})[0], ort_session(_model()).run(None, {"x": X})[0], rtol=1e-5, atol=1e-6)


def test_profiling_writes_one_event_per_node(tmp_path):
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    s = onyx.InferenceSession(_model().SerializeToString(), so)
    assert s.get_profiling_start_time_ns() > 0
    s.run(None, {"x": X})
    path = s.end_profiling()
    assert path and os.path.dirname(path) == str(tmp_path) and os.path.basename(path).startswith("prof")
    events = json.loads(open(path).read())
    nodes = [e for e in events if e["cat"] == "Node"]
    # one event per node of the model the session runs (the optimizer may have removed the Identity)
    ran = s.model.graph.nodes
    assert len(nodes) == len(ran) >= 3
    assert [e["args"]["op_name"] for e in nodes] == [n.op_type for n in ran]
    assert [e["name"] for e in nodes][:3] == ["mm_kernel_time", "relu_kernel_time", "neg_kernel_time"]
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0 and e["pid"] == os.getpid()
    assert [e["name"] for e in events if e["cat"] == "Session"] == ["model_run"]
    # profiling stops at end_profiling, as in onnxruntime
    s.run(None, {"x": X})
    assert s.end_profiling() == ""


def test_profiling_several_runs_and_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    s = onyx.InferenceSession(_model().SerializeToString(), so)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: s.run(None, {"x": X}), range(8)))
    events = json.loads(open(s.end_profiling()).read())
    assert sum(e["cat"] == "Node" for e in events) == 8 * len(s.model.graph.nodes)
    assert sum(e["name"] == "model_run" for e in events) == 8


def test_profiling_off_by_default():
    s = onyx.InferenceSession(_model().SerializeToString())
    s.run(None, {"x": X})
    assert s.end_profiling() == ""
    assert s.get_profiling_start_time_ns() == 0


def test_two_profiles_in_the_same_moment_get_two_files(tmp_path):
    paths = set()
    for _ in range(3):
        so = onyx.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / "p")
        s = onyx.InferenceSession(_model().SerializeToString(), so)
        s.run(None, {"x": X})
        paths.add(s.end_profiling())
    assert len(paths) == 3 and all(os.path.exists(p) for p in paths)


@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_ALL"])
def test_optimized_model_filepath(tmp_path, level):
    out = tmp_path / "optimized.onnx"
    so = onyx.SessionOptions()
    so.graph_optimization_level = getattr(onyx.GraphOptimizationLevel, level)
    so.optimized_model_filepath = str(out)
    s = onyx.InferenceSession(_model().SerializeToString(), so)
    saved = onnx.load(str(out))
    onnx.checker.check_model(saved)
    # the saved model runs and gives the same answers, in onnxruntime and in onyx
    want = s.run(None, {"x": X})[0]
    assert_same(ort_session(saved).run(None, {"x": X})[0], want, rtol=1e-5, atol=1e-6)
    assert_same(onyx.InferenceSession(str(out)).run(None, {"x": X})[0], want)


def test_run_options_terminate():
    s = onyx.InferenceSession(_model().SerializeToString())
    ro = onyx.RunOptions()
    ro.terminate = True
    with pytest.raises(onyx.Fail, match="terminate"):
        s.run(None, {"x": X}, ro)
    ro.terminate = False
    assert s.run(None, {"x": X}, ro)[0].shape == (3, 5)


_SEEN: list = []


@onyx.custom_op("RecordBlasThreads", domain="test.runtime.options")
def _record_blas_threads(x):
    from onyx.kernels.blas_threads import openblas_threads

    _SEEN.append(openblas_threads())
    return x


def test_intra_op_num_threads_applies_during_the_run_and_never_leaks():
    """A session's intra_op_num_threads is BLAS's count while it runs; the process's count is the same
    before and after every run, of that session or another."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"]

    if not blas_threads():
        pytest.skip("numpy is not linked with OpenBLAS")
    before = blas_threads()
    if 1 in before:
        pytest.skip("BLAS already runs one thread")
    b = GraphBuilder(opset=17)
    b.opsets["test.runtime.options"] = 1
    x = b.input("x", np.float32, [2])
    b.output(b.op("RecordBlasThreads", x, domain="test.runtime.options"), "y", np.float32, [2])
    model = b.model()
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 1
    one = onyx.InferenceSession(model, so)
    default = onyx.InferenceSession(model)
    for _ in range(2):
        _SEEN.clear()
        one.run(None, {"x": np.ones(2, np.float32)})
        assert _SEEN == [1]
        assert blas_threads() == before
        default.run(None, {"x": np.ones(2, np.float32)})
        assert blas_threads() == before


_STOP = {"ro": None, "after": 0, "calls": 0}


@onyx.custom_op("CountAndStop", domain="test.runtime.options")
def _count_and_stop(x):
    _STOP["calls"] += 1
    if _STOP["calls"] >= _STOP["after"] and _STOP["ro"] is not None:
        _STOP["ro"].terminate = True  # as another thread would, while the run is in flight
    return x + np.float32(1)


def _loop_model(body_nodes):
    body = helper.make_graph(
        body_nodes + [helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [
            tensor("i", TensorProto.INT64, []),
            tensor("cond_in", TensorProto.BOOL, []),
            tensor("a", TensorProto.FLOAT, None),
        ],
        [tensor("cond_out", TensorProto.BOOL, []), tensor("b", TensorProto.FLOAT, None)],
    )
    return make_model(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body, name="the_loop")],
        [tensor("n", TensorProto.INT64, []), tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={"test.runtime.options": 1},
    )


def test_run_options_terminate_stops_a_run_in_flight():
    model = _loop_model([helper.make_node("CountAndStop", ["a"], ["b"], domain="test.runtime.options")])
    s = onyx.InferenceSession(model.SerializeToString())
    feeds = {"n": np.array(1000, np.int64), "x": np.zeros(2, np.float32)}
    ro = onyx.RunOptions()
    _STOP.update(ro=ro, after=3, calls=0)
    try:
        with pytest.raises(onyx.Fail, match="terminate"):
            s.run(None, feeds, ro)
        assert _STOP["calls"] == 3  # stopped inside the Loop, not after 1000 iterations
        _STOP.update(ro=None)
        assert s.run(None, feeds)[0].tolist() == [1000.0, 1000.0]
    finally:
        _STOP.update(ro=None)


def test_profiling_times_subgraph_nodes(tmp_path):
    model = _loop_model(
        [helper.make_node("Neg", ["a"], ["m"], name="inner_neg"), helper.make_node("Neg", ["m"], ["b"])]
    )
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    s = onyx.InferenceSession(model.SerializeToString(), so)
    assert s.run(None, {"n": np.array(3, np.int64), "x": np.ones(2, np.float32)})[0].tolist() == [1.0, 1.0]
    events = json.loads(open(s.end_profiling()).read())
    names = [e["name"] for e in events if e["cat"] == "Node"]
    assert names.count("the_loop_kernel_time") == 1
    assert names.count("inner_neg_kernel_time") == 3
    assert len(names) >= 1 + 2 * 3  # the Loop, and every body node of every iteration
