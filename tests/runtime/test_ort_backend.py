"""onyx.backend (onnxruntime.backend's API) and onyx.datasets (onnxruntime.datasets' example models)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime.backend as ort_backend
import onnxruntime.datasets as ort_datasets
import pytest

import onyx
import onyx.backend as backend
import onyx.datasets as datasets
from onyx.errors import InvalidArgument, NoSuchFile

X = np.arange(6, dtype=np.float32).reshape(3, 2)


@pytest.mark.parametrize("name", ["mul_1.onnx", "sigmoid.onnx", "logreg_iris.onnx"])
def test_examples_ship_with_the_names_onnxruntime_uses(name):
    path = datasets.get_example(name)
    sess = onyx.InferenceSession(path)
    theirs = ort.InferenceSession(ort_datasets.get_example(name), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == [i.name for i in theirs.get_inputs()]
    assert [o.name for o in sess.get_outputs()] == [o.name for o in theirs.get_outputs()]
    assert [o.type for o in sess.get_outputs()] == [o.type for o in theirs.get_outputs()]


def test_examples_run_as_onnxruntime_runs_them():
    for name, feed in [
        ("mul_1.onnx", {"X": X}),
        ("sigmoid.onnx", {"x": np.linspace(-3, 3, 60, dtype=np.float32).reshape(3, 4, 5)}),
    ]:
        path = datasets.get_example(name)
        got = onyx.InferenceSession(path).run(None, feed)[0]
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    iris = np.array([[5.1, 3.5], [6.0, 2.2], [7.7, 3.0]], np.float32)
    path = datasets.get_example("logreg_iris.onnx")
    label, probs = onyx.InferenceSession(path).run(None, {"float_input": iris})
    want_label, want_probs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"float_input": iris}
    )
    np.testing.assert_array_equal(label, want_label)
    assert label.tolist() == [0, 1, 2]  # setosa, versicolor, virginica: the classifier is trained
    for got_row, want_row in zip(probs, want_probs):
        assert got_row.keys() == want_row.keys()
        np.testing.assert_allclose(list(got_row.values()), list(want_row.values()), rtol=1e-5)


def test_unknown_example():
    with pytest.raises(NoSuchFile, match="nope.onnx.*mul_1.onnx"):
        datasets.get_example("nope.onnx")
    with pytest.raises(NoSuchFile):
        datasets.get_example("../backend.py")


@pytest.mark.parametrize("form", ["path", "bytes", "proto", "onyx_model", "session"])
def test_prepare_takes_what_onnxruntime_takes(form):
    path = datasets.get_example("mul_1.onnx")
    model = {
        "path": path,
        "bytes": open(path, "rb").read(),
        "proto": onnx.load(path),
        "onyx_model": onyx.load(path),
        "session": onyx.InferenceSession(path),
    }[form]
    rep = backend.prepare(model)
    assert backend.prepare(rep) is rep
    got = rep.run([X])[0]
    want = (
        ort_backend.prepare(onnx.load(path)).run([X])[0]
        if form != "session"
        else X * np.arange(1, 7).reshape(3, 2)
    )
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(backend.run_model(path, [X])[0], got)
    np.testing.assert_array_equal(backend.run(path, {"X": X})[0], got)


def test_prepare_options_and_devices():
    path = datasets.get_example("mul_1.onnx")
    rep = backend.prepare(path, "CPU", graph_optimization_level=0, intra_op_num_threads=1)
    opts = rep.session.get_session_options()
    assert int(opts.graph_optimization_level) == 0 and opts.intra_op_num_threads == 1
    with pytest.raises(InvalidArgument, match="not permitted"):
        backend.prepare(path, optimized_model_filepath="x.onnx")
    with pytest.raises(InvalidArgument, match="Incompatible device"):
        backend.prepare(path, "CUDA")
    with pytest.raises(InvalidArgument, match="int"):
        backend.prepare(12)
    assert backend.supports_device("CPU") and ort_backend.supports_device("CPU")
    assert not backend.supports_device("CUDA") and not ort_backend.supports_device("CUDA")
    assert backend.is_compatible(onnx.load(path)) and ort_backend.is_compatible(onnx.load(path))
