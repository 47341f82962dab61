"""IOBinding, run_with_iobinding, run_with_ort_values, run_with_ortvaluevector and run_async, as onnxruntime's
onnxruntime_test_python.py exercises them (testIOBinding*, testRunModelWithOrtValues, testRunAsync), with
onnxruntime side by side."""

from __future__ import annotations

import threading

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onyx
import onyx.datasets
from onyx.errors import EPFail, InvalidArgument
from tests.runtime._util import make_model, tensor

X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2


@pytest.fixture(scope="module")
def model():
    return make_model(
        [helper.make_node("Add", ["x", "y"], ["z"]), helper.make_node("Relu", ["z"], ["r"])],
        [tensor("x", TensorProto.FLOAT, ["N", 3]), tensor("y", TensorProto.FLOAT, ["N", 3])],
        [tensor("z", TensorProto.FLOAT, ["N", 3]), tensor("r", TensorProto.FLOAT, ["N", 3])],
    ).SerializeToString()


@pytest.fixture(params=["ort", "onyx"])
def sess(request, model):
    if request.param == "ort":
        return ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return onyx.InferenceSession(model)


def _mod(sess):
    return onyx if isinstance(sess, onyx.InferenceSession) else ort


def test_bind_cpu_input_and_fresh_outputs(sess):
    b = sess.io_binding()
    b.bind_cpu_input("x", X)
    b.bind_cpu_input("y", X)
    b.bind_output("z")
    b.bind_output("r")
    sess.run_with_iobinding(b)
    outs = b.get_outputs()
    assert len(outs) == 2 and all(isinstance(o, _mod(sess).OrtValue) for o in outs)
    np.testing.assert_array_equal(outs[0].numpy(), X + X)
    np.testing.assert_array_equal(outs[1].numpy(), np.maximum(X + X, 0))
    cpu = b.copy_outputs_to_cpu()
    np.testing.assert_array_equal(cpu[1], np.maximum(X + X, 0))
    assert len(b.get_outputs_as_ortvaluevector()) == 2


def test_preallocated_output_is_written_in_place(sess):
    out = np.empty((2, 3), np.float32)
    b = sess.io_binding()
    b.bind_cpu_input("x", X)
    b.bind_cpu_input("y", X)
    b.bind_output("r", "cpu", 0, np.float32, [2, 3], out.ctypes.data)
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(out, np.maximum(X + X, 0))
    assert b.get_outputs()[0].data_ptr() == out.ctypes.data
    # a second run with new input values writes into the same memory
    x2 = np.ones((2, 3), np.float32)
    b.bind_cpu_input("x", x2)
    b.bind_cpu_input("y", x2)
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(out, 2 * x2)


def test_bind_input_by_pointer_and_ortvalue_output(sess):
    mod = _mod(sess)
    x = X.copy()
    b = sess.io_binding()
    b.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    b.bind_ortvalue_input("y", mod.OrtValue.ortvalue_from_numpy(x))
    target = mod.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    b.bind_ortvalue_output("z", target)
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(target.numpy(), x + x)
    x[...] = 1  # the binding reads the memory at the pointer, not a copy made when binding
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(target.numpy(), np.full((2, 3), 2, np.float32))


def test_preallocated_output_of_the_wrong_shape(sess):
    out = np.empty((3, 3), np.float32)
    b = sess.io_binding()
    b.bind_cpu_input("x", X)
    b.bind_cpu_input("y", X)
    b.bind_output("r", "cpu", 0, np.float32, [3, 3], out.ctypes.data)
    with pytest.raises(RuntimeError if _mod(sess) is ort else InvalidArgument, match="shape"):
        sess.run_with_iobinding(b)


def test_no_output_bound_and_clearing(sess):
    b = sess.io_binding()
    assert b.get_outputs() == [] or len(b.get_outputs()) == 0
    b.bind_cpu_input("x", X)
    b.bind_cpu_input("y", X)
    with pytest.raises((RuntimeError, InvalidArgument), match="At least one output"):
        sess.run_with_iobinding(b)
    b.bind_output("r")
    sess.run_with_iobinding(b)
    b.clear_binding_outputs()
    with pytest.raises((RuntimeError, InvalidArgument), match="At least one output"):
        sess.run_with_iobinding(b)
    b.bind_output("r")
    b.clear_binding_inputs()
    with pytest.raises((RuntimeError, InvalidArgument)):
        sess.run_with_iobinding(b)
    b.synchronize_inputs()
    b.synchronize_outputs()


def test_binding_errors_name_what_is_wrong(model):
    s = onyx.InferenceSession(model)
    b = s.io_binding()
    with pytest.raises(InvalidArgument, match="nope.*'x'"):
        b.bind_cpu_input("nope", X)
    with pytest.raises(InvalidArgument, match="nope.*'z'"):
        b.bind_output("nope")
    with pytest.raises(EPFail, match="CPU"):
        b.bind_output("r", "cuda", 0)
    with pytest.raises(InvalidArgument, match="element_type"):
        b.bind_output("r", "cpu", 0, None, None, X.ctypes.data)
    with pytest.raises(InvalidArgument, match="null"):
        b.bind_input("x", "cpu", 0, np.float32, [2, 3], 0)
    b.bind_cpu_input("x", X.astype(np.float64))
    b.bind_cpu_input("y", X)
    b.bind_output("r")
    with pytest.raises(InvalidArgument, match="tensor\\(double\\)"):
        s.run_with_iobinding(b)
    other = onyx.InferenceSession(model)
    with pytest.raises(InvalidArgument, match="session that created it"):
        other.run_with_iobinding(b)


def test_run_with_ort_values(sess):
    mod = _mod(sess)
    feeds = {"x": mod.OrtValue.ortvalue_from_numpy(X), "y": mod.OrtValue.ortvalue_from_numpy(X)}
    outs = sess.run_with_ort_values(["r"], feeds)
    assert isinstance(outs[0], mod.OrtValue)
    np.testing.assert_array_equal(outs[0].numpy(), np.maximum(X + X, 0))
    # OrtValues are accepted by run() too
    np.testing.assert_array_equal(sess.run(["r"], feeds)[0], np.maximum(X + X, 0))


def test_run_with_ortvaluevector(model):
    s = onyx.InferenceSession(model)
    feeds = onyx.capi.onnxruntime_pybind11_state.OrtValueVector()
    feeds.push_back(onyx.OrtValue.ortvalue_from_numpy(X))
    feeds.push_back(onyx.OrtValue.ortvalue_from_numpy(X))
    fetches = onyx.capi.onnxruntime_pybind11_state.OrtValueVector()
    s.run_with_ortvaluevector(
        onyx.RunOptions(), ["x", "y"], feeds, ["r"], fetches, [onyx.OrtDevice.make("cpu")]
    )
    assert len(fetches) == 1
    np.testing.assert_array_equal(fetches[0].numpy(), np.maximum(X + X, 0))


def _run_async(sess, feeds):
    done = threading.Event()
    got = {}

    def callback(results, user_data, err):
        got.update(results=results, user_data=user_data, err=err)
        done.set()

    assert sess.run_async(None, feeds, callback, "my data") is None
    assert done.wait(30)
    return got


def test_run_async(sess):
    got = _run_async(sess, {"x": X, "y": X})
    assert got["err"] == "" and got["user_data"] == "my data"
    np.testing.assert_array_equal(got["results"][1], np.maximum(X + X, 0))
    bad = _run_async(sess, {"x": X, "y": X[0]})
    assert bad["results"] == [] and "Invalid rank for input: y" in bad["err"]


def test_get_outputs_keeps_results_alive_and_ordered(model):
    s = onyx.InferenceSession(model)
    b = s.io_binding()
    b.bind_cpu_input("x", X)
    b.bind_cpu_input("y", X)
    b.bind_output("r")
    b.bind_output("z")
    s.run_with_iobinding(b)
    r, z = b.get_outputs()
    np.testing.assert_array_equal(r.numpy(), np.maximum(X + X, 0))
    np.testing.assert_array_equal(z.numpy(), X + X)


def test_ort_values_of_sequences_and_maps_report_the_declared_types():
    path = onyx.datasets.get_example("logreg_iris.onnx")
    x = np.array([[5.1, 3.5], [6.0, 2.2]], np.float32)
    got = onyx.InferenceSession(path).run_with_ort_values(
        None, {"float_input": onyx.OrtValue.ortvalue_from_numpy(x)}
    )
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run_with_ort_values(
        None, {"float_input": ort.OrtValue.ortvalue_from_numpy(x)}
    )
    assert [v.data_type() for v in got] == [v.data_type() for v in want]
    assert [v.is_tensor_sequence() for v in got] == [v.is_tensor_sequence() for v in want] == [False, False]
    seq = onyx.InferenceSession(
        make_model(
            [helper.make_node("SequenceConstruct", ["x", "x"], ["s"])],
            [tensor("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])],
        ).SerializeToString()
    ).run_with_ort_values(None, {"x": onyx.OrtValue.ortvalue_from_numpy(np.ones(2, np.float32))})[0]
    assert seq.is_tensor_sequence() and seq.data_type() == "seq(tensor(float))"
