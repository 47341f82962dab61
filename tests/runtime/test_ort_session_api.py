"""The rest of InferenceSession's and SessionOptions' API, the module functions and the error classes, with
onnxruntime side by side where it applies."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import Fail, InvalidArgument
from tests.runtime._util import make_model, tensor

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _add_w_model(ir_version: int = 8) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.full((2, 3), 10, np.float32), "w")
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add0")],
        [tensor("x", TensorProto.FLOAT, [2, 3])],
        [tensor("y", TensorProto.FLOAT, [2, 3])],
        initializers=[w],
        ir_version=ir_version,
    )


def _both(model: onnx.ModelProto, so_onyx=None, so_ort=None):
    data = model.SerializeToString()
    return onyx.InferenceSession(data, so_onyx), ort.InferenceSession(
        data, so_ort, providers=["CPUExecutionProvider"]
    )


# -- providers and fallback -------------------------------------------------------------------------


def test_set_providers_raises_on_an_unknown_provider():
    s, o = _both(_add_w_model())
    with pytest.raises(Fail, match="Unknown Provider Type: FooExecutionProvider"):
        s.set_providers(["FooExecutionProvider"])
    with (
        pytest.raises(RuntimeError, match="Unknown Provider Type: FooExecutionProvider"),
        pytest.warns(UserWarning),
    ):
        o.set_providers(["FooExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]  # the session still runs
    s.set_providers(["CPUExecutionProvider"])
    np.testing.assert_array_equal(s.run(None, {"x": X})[0], X + 10)
    with pytest.warns(UserWarning, match="FooExecutionProvider"):  # the constructor only warns
        onyx.InferenceSession(_add_w_model().SerializeToString(), providers=["FooExecutionProvider"])


def test_fallback_switches():
    s, o = _both(_add_w_model())
    assert s._enable_fallback is o._enable_fallback is True
    s.disable_fallback()
    o.disable_fallback()
    assert s._enable_fallback is o._enable_fallback is False
    s.enable_fallback()
    assert s._enable_fallback is True


def test_memory_infos_and_graph_assignment():
    so_onyx, so_ort = onyx.SessionOptions(), ort.SessionOptions()
    for so in (so_onyx, so_ort):
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    s, o = _both(_add_w_model(), so_onyx, so_ort)
    assert len(s.get_input_memory_infos()) == len(o.get_input_memory_infos()) == 1
    assert len(s.get_output_memory_infos()) == len(o.get_output_memory_infos()) == 1
    assert s.get_input_memory_infos()[0].name == o.get_input_memory_infos()[0].name == "Cpu"
    got, want = s.get_provider_graph_assignment_info(), o.get_provider_graph_assignment_info()
    assert [g.ep_name for g in got] == [w.ep_name for w in want] == ["CPUExecutionProvider"]
    assert [(n.name, n.op_type) for n in got[0].get_nodes()] == [
        (n.name, n.op_type) for n in want[0].get_nodes()
    ]
    plain = onyx.InferenceSession(_add_w_model().SerializeToString())
    with pytest.raises(Fail, match="record_ep_graph_assignment_info"):
        plain.get_provider_graph_assignment_info()


def test_attributes_libraries_read(tmp_path):
    path = str(tmp_path / "m.onnx")
    onnx.save(_add_w_model(), path)
    s = onyx.InferenceSession(path)
    o = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert s._model_path == o._model_path == path
    assert s._model_bytes is None and o._model_bytes is None
    assert s._sess_options is s.get_session_options()
    assert s._providers == o._providers == ["CPUExecutionProvider"]
    assert [a.name for a in s._inputs_meta] == [a.name for a in o._inputs_meta] == ["x"]
    assert [a.name for a in s._outputs_meta] == [a.name for a in o._outputs_meta]
    assert [a.name for a in s._overridable_initializers] == [a.name for a in o._overridable_initializers]
    # what libraries call on the C session
    np.testing.assert_array_equal(
        s._sess.run(["y"], {"x": X}, None)[0], o._sess.run(["y"], {"x": X}, None)[0]
    )
    assert [a.name for a in s._sess.get_inputs()] == ["x"]
    vals = s._sess.run_with_ort_values({"x": onyx.OrtValue.ortvalue_from_numpy(X)}, ["y"], None)
    np.testing.assert_array_equal(vals[0].numpy(), X + 10)
    assert s._sess.get_profiling_start_time_ns == 0
    data = _add_w_model().SerializeToString()
    assert onyx.InferenceSession(data)._model_bytes == data


def test_session_options_round_trip_and_profiling(tmp_path):
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    so.use_deterministic_compute = True
    s = onyx.InferenceSession(_add_w_model().SerializeToString(), so)
    assert s.get_session_options().use_deterministic_compute is True
    assert s.get_profiling_start_time_ns() > 0
    s.run(None, {"x": X})
    assert os.path.exists(s.end_profiling())


# -- SessionOptions: initializers given in memory ---------------------------------------------------


def test_add_initializer_matches_onnxruntime():
    w = np.full((2, 3), 3, np.float32)
    so_onyx, so_ort = onyx.SessionOptions(), ort.SessionOptions()
    keep = [onyx.OrtValue.ortvalue_from_numpy(w), ort.OrtValue.ortvalue_from_numpy(w)]
    so_onyx.add_initializer("w", keep[0])
    so_ort.add_initializer("w", keep[1])
    s, o = _both(_add_w_model(), so_onyx, so_ort)
    np.testing.assert_array_equal(s.run(None, {"x": X})[0], o.run(None, {"x": X})[0])
    np.testing.assert_array_equal(s.run(None, {"x": X})[0], X + 3)


def test_add_initializer_errors():
    so = onyx.SessionOptions()
    with pytest.raises(InvalidArgument, match="OrtValue"):
        so.add_initializer("w", np.zeros(3))
    so.add_initializer("nope", onyx.OrtValue.ortvalue_from_numpy(np.zeros(3, np.float32)))
    with pytest.raises(InvalidArgument, match="nope"):
        onyx.InferenceSession(_add_w_model().SerializeToString(), so)
    so = onyx.SessionOptions()
    so.add_initializer("w", onyx.OrtValue.ortvalue_from_numpy(np.zeros(3, np.float32)))
    with pytest.raises(InvalidArgument, match="'w'.*\\[2, 3\\].*\\[3\\]"):
        onyx.InferenceSession(_add_w_model().SerializeToString(), so)


def _external_model(tmp_path) -> tuple[bytes, bytes]:
    """A model whose initializer w lives in weights.bin (the model bytes and the file's bytes)."""
    model = _add_w_model()
    onnx.save(
        model,
        str(tmp_path / "ext.onnx"),
        save_as_external_data=True,
        location="weights.bin",
        size_threshold=0,
    )
    ext = onnx.load(str(tmp_path / "ext.onnx"), load_external_data=False)
    return ext.SerializeToString(), (tmp_path / "weights.bin").read_bytes()


def test_external_initializers_from_memory(tmp_path):
    model_bytes, weights = _external_model(tmp_path)
    w = np.full((2, 3), 10, np.float32)
    # by name (add_external_initializers)
    so_onyx, so_ort = onyx.SessionOptions(), ort.SessionOptions()
    keep = [onyx.OrtValue.ortvalue_from_numpy(w), ort.OrtValue.ortvalue_from_numpy(w)]
    so_onyx.add_external_initializers(["w"], [keep[0]])
    so_ort.add_external_initializers(["w"], [keep[1]])
    s = onyx.InferenceSession(model_bytes, so_onyx)
    o = ort.InferenceSession(model_bytes, so_ort, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(s.run(None, {"x": X})[0], o.run(None, {"x": X})[0])
    # by file (add_external_initializers_from_files_in_memory)
    so_onyx, so_ort = onyx.SessionOptions(), ort.SessionOptions()
    buf = np.frombuffer(weights, np.uint8)
    so_onyx.add_external_initializers_from_files_in_memory(["weights.bin"], [buf], [len(weights)])
    so_ort.add_external_initializers_from_files_in_memory(["weights.bin"], [buf], [len(weights)])
    s = onyx.InferenceSession(model_bytes, so_onyx)
    o = ort.InferenceSession(model_bytes, so_ort, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(s.run(None, {"x": X})[0], o.run(None, {"x": X})[0])
    np.testing.assert_array_equal(s.run(None, {"x": X})[0], X + 10)
    short = onyx.SessionOptions()
    short.add_external_initializers_from_files_in_memory(["weights.bin"], [buf[:8]], [8])
    with pytest.raises(InvalidArgument, match="past the end"):
        onyx.InferenceSession(model_bytes, short)
    with pytest.raises(InvalidArgument, match="same length"):
        short.add_external_initializers_from_files_in_memory(["a", "b"], [buf], [1])


def test_optimized_model_with_external_initializers(tmp_path):
    so = onyx.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "opt.bin")
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "16")
    onyx.InferenceSession(_add_w_model().SerializeToString(), so)
    assert (tmp_path / "opt.bin").stat().st_size >= 24
    saved = onnx.load(str(tmp_path / "opt.onnx"), load_external_data=False)
    assert any(t.data_location == TensorProto.EXTERNAL for t in saved.graph.initializer)
    o = ort.InferenceSession(str(tmp_path / "opt.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(o.run(None, {"x": X})[0], X + 10)


def test_register_custom_ops_library_explains(tmp_path):
    with pytest.raises(onyx.errors.NotImplemented, match="custom_op"):
        onyx.SessionOptions().register_custom_ops_library(str(tmp_path / "libcustom.so"))


def test_free_dimension_override_by_denotation():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [x], [tensor("y", TensorProto.FLOAT, ["n", 3])]
    )
    so_onyx, so_ort = onyx.SessionOptions(), ort.SessionOptions()
    so_onyx.add_free_dimension_override_by_denotation("DATA_BATCH", 2)
    so_ort.add_free_dimension_override_by_denotation("DATA_BATCH", 2)
    s, o = _both(model, so_onyx, so_ort)
    assert s.get_inputs()[0].shape == o.get_inputs()[0].shape == [2, 3]


def test_ort_config_from_model(monkeypatch):
    model = _add_w_model()
    conf = {"session_options": {"intra_op_num_threads": 2, "graph_optimization_level": 1}}
    helper.set_model_props(model, {"ort_config": json.dumps(conf)})
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    so = onyx.SessionOptions()
    s, o = _both(model, so)
    for sess in (s, o):
        got = sess.get_session_options()
        assert got.intra_op_num_threads == 2 and int(got.graph_optimization_level) == 1
    assert so.intra_op_num_threads == 0  # the caller's options are left as they were
    helper.set_model_props(model, {"ort_config": json.dumps({"session_options": {"nope": 1}})})
    with pytest.raises(InvalidArgument, match="nope"):
        onyx.InferenceSession(model.SerializeToString())
    monkeypatch.delenv("ORT_LOAD_CONFIG_FROM_MODEL")
    assert onyx.InferenceSession(model.SerializeToString()).get_session_options().intra_op_num_threads == 0


def test_global_thread_pool():
    from onyx.runtime.session_api import session_threads

    onyx.set_global_thread_pool_sizes(intra_op_num_threads=1, inter_op_num_threads=1)
    try:
        so = onyx.SessionOptions()
        so.intra_op_num_threads = 2
        assert session_threads(so) == 2
        so.add_session_config_entry("session.use_per_session_threads", "0")
        assert session_threads(so) == 1
        so2 = onyx.SessionOptions()
        so2.use_per_session_threads = False
        assert session_threads(so2) == 1
        s = onyx.InferenceSession(_add_w_model().SerializeToString(), so)
        assert s._blas_threads == 1
    finally:
        onyx.set_global_thread_pool_sizes(0, 0)


def test_set_seed_makes_random_ops_reproducible():
    model = make_model(
        [
            helper.make_node("RandomNormal", [], ["a"], shape=[4], dtype=TensorProto.FLOAT),
            helper.make_node("RandomNormal", [], ["b"], shape=[4], dtype=TensorProto.FLOAT),
        ],
        [],
        [tensor("a", TensorProto.FLOAT, [4]), tensor("b", TensorProto.FLOAT, [4])],
    ).SerializeToString()
    onyx.set_seed(1234)
    try:
        first, second = onyx.InferenceSession(model), onyx.InferenceSession(model)
        runs = [first.run(None, {}), first.run(None, {})]
        again = [second.run(None, {}), second.run(None, {})]
    finally:
        onyx.runtime.session_api._seed[0] = None
    for r, g in zip(runs, again):  # the same sequence in every session seeded alike
        np.testing.assert_array_equal(r[0], g[0])
        np.testing.assert_array_equal(r[1], g[1])
    assert not np.array_equal(runs[0][0], runs[0][1])  # two nodes draw different values
    assert not np.array_equal(runs[0][0], runs[1][0])  # so do two runs, as in onnxruntime
    assert ort.set_seed(1234) is None


# -- module functions and error classes -------------------------------------------------------------


def test_module_functions():
    assert onyx.get_device() == ort.get_device() == "CPU"
    assert "CPUExecutionProvider" in onyx.get_available_providers()
    assert "CPUExecutionProvider" in onyx.get_all_providers()
    assert onyx.get_version_string() == onyx.__version__
    assert "onyx" in onyx.get_build_info()
    assert onyx.has_collective_ops() is ort.has_collective_ops() is False
    for f in (onyx.disable_telemetry_events, onyx.enable_telemetry_events):
        assert f() is None
    import logging

    onyx.set_default_logger_severity(3)
    assert logging.getLogger("onyx").level == logging.ERROR
    onyx.set_default_logger_severity(2)
    with pytest.raises(InvalidArgument):
        onyx.set_default_logger_severity(9)
    onyx.set_default_logger_verbosity(1)
    got = []
    onyx.set_default_logger_callback(lambda *a: got.append(a))
    logging.getLogger("onyx").warning("hello")
    onyx.set_default_logger_callback(None)
    assert got and got[0][0] == 2 and got[0][-1] == "hello"
    src = [onyx.OrtValue.ortvalue_from_numpy(X)]
    dst = [onyx.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)]
    onyx.copy_tensors(src, dst)
    np.testing.assert_array_equal(dst[0].numpy(), X)


def test_error_classes_at_onnxruntime_paths():
    import onyx.capi._pybind_state as P
    import onyx.capi.onnxruntime_pybind11_state as C

    names = [
        "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
        "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail", "NotFound",
        "ModelLoadCanceled", "ModelRequiresCompilation", "DeviceReset",
    ]  # fmt: skip
    import onnxruntime.capi.onnxruntime_pybind11_state as OC

    for name in names:
        assert hasattr(OC, name), name
        cls = getattr(C, name)
        assert cls is getattr(onyx.errors, name) is getattr(P, name)
        assert issubclass(cls, onyx.OnyxError)
    with pytest.raises(C.InvalidArgument):
        onyx.InferenceSession(_add_w_model().SerializeToString()).run(None, {"x": X[0]})
    with pytest.raises(C.NoSuchFile):
        onyx.InferenceSession("/no/such/model.onnx")


@pytest.mark.parametrize(
    "feeds, ort_text",
    [
        ({}, "Required inputs (['x']) are missing from input feed ([])"),
        (
            {"x": X.astype(np.float64)},
            "Unexpected input data type. Actual: (tensor(double)) , expected: (tensor(float))",
        ),
        ({"x": X[0]}, "Invalid rank for input: x Got: 1 Expected: 2"),
        ({"x": X, "q": X}, "Invalid input name: q"),
        ({"x": X[:1]}, "Got invalid dimensions for input: x for the following indices"),
    ],
)
def test_messages_say_what_onnxruntimes_say(feeds, ort_text):
    s, o = _both(_add_w_model())
    with pytest.raises(Exception) as want:  # noqa: B017 - onnxruntime raises ValueError or its own classes
        o.run(None, feeds)
    assert ort_text in str(want.value)
    with pytest.raises(InvalidArgument) as got:
        s.run(None, feeds)
    assert ort_text in str(got.value)
