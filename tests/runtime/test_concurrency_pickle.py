"""One session shared by threads, and sessions pickled and sent to other processes."""

from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
from onnx import TensorProto, helper

import onyx
from tests.runtime._util import assert_same, make_model, ort_session, tensor


def _mlp_model():
    rs = np.random.RandomState(0)
    w1 = rs.randn(8, 16).astype(np.float32)
    w2 = rs.randn(16, 4).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["o"]),
        helper.make_node("Softmax", ["o"], ["p"], axis=-1),
        helper.make_node("ReduceSum", ["h", "axes"], ["s"], keepdims=0),
    ]
    inits = [
        helper.make_tensor("w1", TensorProto.FLOAT, w1.shape, w1.ravel()),
        helper.make_tensor("w2", TensorProto.FLOAT, w2.shape, w2.ravel()),
        helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
    ]
    return make_model(
        nodes,
        [tensor("x", TensorProto.FLOAT, ["N", 8])],
        [tensor("p", TensorProto.FLOAT, ["N", 4]), tensor("s", TensorProto.FLOAT, ["N"])],
        initializers=inits,
    )


def _inputs(k: int) -> np.ndarray:
    return np.random.RandomState(100 + k).randn(1 + k % 5, 8).astype(np.float32)


def test_one_session_many_threads():
    model = _mlp_model()
    s = onyx.InferenceSession(model.SerializeToString())
    n_threads, n_runs = 8, 50
    feeds = [[_inputs(t * n_runs + i) for i in range(n_runs)] for t in range(n_threads)]
    expected = [[s.run(None, {"x": x}) for x in per_thread] for per_thread in feeds]

    def work(t):
        return [s.run(None, {"x": x}) for x in feeds[t]]

    with ThreadPoolExecutor(n_threads) as pool:
        results = list(pool.map(work, range(n_threads)))
    for t in range(n_threads):
        for i in range(n_runs):
            for got, want in zip(results[t][i], expected[t][i]):
                np.testing.assert_array_equal(got, want)
    # and the single-threaded answers are right
    ref = ort_session(model)
    for x, want in zip(feeds[0][:5], expected[0][:5]):
        for g, w in zip(want, ref.run(None, {"x": x})):
            assert_same(g, w, rtol=1e-5, atol=1e-5)


def test_threads_with_a_loop_subgraph():
    # subgraph plans are shared between threads too
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            tensor("i", TensorProto.INT64, []),
            tensor("cond_in", TensorProto.BOOL, []),
            tensor("acc_in", TensorProto.FLOAT, None),
        ],
        [tensor("cond_out", TensorProto.BOOL, []), tensor("acc_out", TensorProto.FLOAT, None)],
    )
    model = make_model(
        [helper.make_node("Loop", ["n", "", "a0"], ["acc"], body=body)],
        [
            tensor("n", TensorProto.INT64, []),
            tensor("a0", TensorProto.FLOAT, [None]),
            tensor("x", TensorProto.FLOAT, [None]),
        ],
        [tensor("acc", TensorProto.FLOAT, [None])],
    )
    s = onyx.InferenceSession(model.SerializeToString())

    def work(t):
        out = []
        for i in range(20):
            x = np.full(3, t + i, np.float32)
            out.append(
                (
                    t,
                    i,
                    s.run(None, {"n": np.array(i % 4, np.int64), "a0": np.zeros(3, np.float32), "x": x})[0],
                )
            )
        return out

    with ThreadPoolExecutor(8) as pool:
        for chunk in pool.map(work, range(8)):
            for t, i, got in chunk:
                np.testing.assert_array_equal(got, np.full(3, (t + i) * (i % 4), np.float32))


def _run_pickled(blob: bytes, x: np.ndarray):
    s = pickle.loads(blob)
    return s.run(None, {"x": x})


def test_pickle_session_from_path_and_bytes(tmp_path):
    model = _mlp_model()
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    x = _inputs(3)
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 1
    so.add_session_config_entry("a.b", "c")
    for source in (str(path), model.SerializeToString()):
        s = onyx.InferenceSession(source, so)
        want = s.run(None, {"x": x})
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.get_providers() == s.get_providers()
        assert s2.get_session_options().intra_op_num_threads == 1
        assert s2.get_session_options().get_session_config_entry("a.b") == "c"
        assert [a.name for a in s2.get_inputs()] == ["x"]
        for g, w in zip(s2.run(None, {"x": x}), want):
            np.testing.assert_array_equal(g, w)


def test_pickle_after_the_file_is_gone(tmp_path):
    model = _mlp_model()
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    s = onyx.InferenceSession(str(path))
    path.unlink()
    x = _inputs(1)
    for g, w in zip(pickle.loads(pickle.dumps(s)).run(None, {"x": x}), s.run(None, {"x": x})):
        np.testing.assert_array_equal(g, w)


def test_session_sent_to_a_spawned_process(tmp_path):
    model = _mlp_model()
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    sessions = [onyx.InferenceSession(str(path)), onyx.InferenceSession(model.SerializeToString())]
    xs = [_inputs(2), _inputs(4)]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        futures = [(s, x, pool.submit(_run_pickled, pickle.dumps(s), x)) for s in sessions for x in xs]
        for s, x, fut in futures:
            for g, w in zip(fut.result(timeout=120), s.run(None, {"x": x})):
                np.testing.assert_array_equal(g, w)


def test_pickle_after_the_file_is_rewritten(tmp_path):
    path = tmp_path / "m.onnx"
    neg = make_model(
        [helper.make_node("Neg", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
    )
    path.write_bytes(neg.SerializeToString())
    s = onyx.InferenceSession(str(path))
    absm = make_model(
        [helper.make_node("Abs", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
    )
    path.write_bytes(absm.SerializeToString() + b"")  # another model, so another size
    x = np.array([1.0, -2.0], np.float32)
    assert pickle.loads(pickle.dumps(s)).run(None, {"x": x})[0].tolist() == [-1.0, 2.0]


def test_pickle_session_with_external_data(tmp_path):
    import onnx
    from onnx import numpy_helper

    model = _mlp_model()
    for i, t in enumerate(list(model.graph.initializer)):  # raw_data, which external data needs
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))
    onnx.save_model(
        model, str(tmp_path / "ext.onnx"), save_as_external_data=True, location="ext.data", size_threshold=16
    )
    assert (tmp_path / "ext.data").exists()
    s = onyx.InferenceSession(str(tmp_path / "ext.onnx"))
    blob = pickle.dumps(s)
    (tmp_path / "ext.data").rename(tmp_path / "moved.data")  # the pickle carries the weights
    x = _inputs(0)
    for g, w in zip(pickle.loads(blob).run(None, {"x": x}), s.run(None, {"x": x})):
        np.testing.assert_array_equal(g, w)


def test_pickle_session_from_a_bytearray_changed_afterwards():
    data = bytearray(_mlp_model().SerializeToString())
    s = onyx.InferenceSession(data)
    data[:] = b"\0" * len(data)
    x = _inputs(0)
    for g, w in zip(pickle.loads(pickle.dumps(s)).run(None, {"x": x}), s.run(None, {"x": x})):
        np.testing.assert_array_equal(g, w)
