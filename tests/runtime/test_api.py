"""The session's API surface compared with onnxruntime's: NodeArgs, metadata, providers, options."""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx
from tests.runtime._util import assert_same, make_model, onyx_session, ort_session, tensor


def _args(nodeargs):
    return [(a.name, a.type, a.shape) for a in nodeargs]


def _assert_same_surface(model):
    want = ort_session(model)
    got = onyx_session(model)
    for method in ("get_inputs", "get_outputs", "get_overridable_initializers"):
        assert _args(getattr(got, method)()) == _args(getattr(want, method)()), method
    return got, want


def test_nodeargs_for_many_element_types_and_shapes():
    ins = [
        tensor("f", TensorProto.FLOAT, ["batch", 3]),
        tensor("i", TensorProto.INT64, [None, 2]),
        tensor("s", TensorProto.STRING, [2]),
        tensor("b", TensorProto.BOOL, []),
        tensor("h", TensorProto.FLOAT16, ["N", "unk_x", 4]),
        tensor("noshape", TensorProto.FLOAT, None),
        tensor("d", TensorProto.DOUBLE, [1]),
        tensor("u8", TensorProto.UINT8, [1]),
        tensor("bf", TensorProto.BFLOAT16, [1]),
        tensor("i8", TensorProto.INT8, [1, 1]),
    ]
    nodes = [helper.make_node("Identity", [x.name], [x.name + "_o"]) for x in ins]
    outs = [helper.make_value_info(x.name + "_o", x.type) for x in ins]
    nodes.append(helper.make_node("SequenceConstruct", ["f", "f"], ["seq"]))
    outs.append(helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None))
    nodes.append(helper.make_node("Optional", ["f"], ["opt"]))
    opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, ["batch", 3]))
    outs.append(helper.make_value_info("opt", opt_t))
    # an initializer that is also a graph input is overridable
    ins.append(tensor("w", TensorProto.FLOAT, [2]))
    nodes.append(helper.make_node("Identity", ["w"], ["w_o"]))
    outs.append(tensor("w_o", TensorProto.FLOAT, [2]))
    init = [helper.make_tensor("w", TensorProto.FLOAT, [2], [1, 2])]
    model = make_model(nodes, ins, outs, initializers=init, opset=18)
    got, _ = _assert_same_surface(model)
    assert [a.name for a in got.get_overridable_initializers()] == ["w"]
    assert "w" not in [a.name for a in got.get_inputs()]


def test_nodeargs_for_optional_and_sequence_inputs():
    opt_in = helper.make_value_info(
        "oi", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    )
    seq_in = helper.make_value_info(
        "si", helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, None))
    )
    model = make_model(
        [
            helper.make_node("OptionalHasElement", ["oi"], ["has"]),
            helper.make_node("SequenceLength", ["si"], ["n"]),
        ],
        [opt_in, seq_in],
        [tensor("has", TensorProto.BOOL, []), tensor("n", TensorProto.INT64, [])],
        opset=18,
    )
    got, want = _assert_same_surface(model)
    feeds = {"oi": np.ones(2, np.float32), "si": [np.arange(3), np.arange(2)]}
    for g, w in zip(got.run(None, feeds), want.run(None, feeds)):
        assert_same(g, w)


@pytest.mark.parametrize("labels", ["int", "str"])
def test_zipmap_classifier_outputs_seq_of_maps(labels):
    from skl2onnx import to_onnx
    from sklearn.tree import DecisionTreeClassifier

    rs = np.random.RandomState(0)
    x = rs.randn(40, 4).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    if labels == "str":
        y = np.array(["a", "b", "c"])[y]
    clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x, y)
    model = to_onnx(clf, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    got, want = _assert_same_surface(model)
    key = "int64" if labels == "int" else "string"
    assert got.get_outputs()[1].type == f"seq(map({key},tensor(float)))"
    feeds = {"X": x[:5]}
    g, w = got.run(None, feeds), want.run(None, feeds)
    assert_same(g[0], w[0])
    assert_same(g[1], w[1])
    assert all(type(k) is type(next(iter(w[1][0]))) for k in g[1][0])


def test_modelmeta_matches_onnxruntime():
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [1])],
        [tensor("y", TensorProto.FLOAT, [1])],
        name="my_graph",
        producer_name="unit-test",
        producer_version="1.2",
        domain="org.example",
        model_version=7,
        doc_string="a model for tests",
    )
    model.graph.doc_string = "the graph"
    helper.set_model_props(model, {"author": "me", "license": "MIT"})
    want = ort_session(model).get_modelmeta()
    got = onyx_session(model).get_modelmeta()
    for field in (
        "producer_name",
        "graph_name",
        "domain",
        "description",
        "graph_description",
        "version",
        "custom_metadata_map",
    ):
        assert getattr(got, field) == getattr(want, field), field


def _identity_model():
    return make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
    )


def test_providers():
    assert "CPUExecutionProvider" in onyx.get_available_providers()
    assert onyx.get_available_providers()[-1] == "CPUExecutionProvider"
    assert onyx.get_device() == "CPU"
    data = _identity_model().SerializeToString()
    s = onyx.InferenceSession(data)
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert list(s.get_provider_options()) == ["CPUExecutionProvider"]
    s = onyx.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    s = onyx.InferenceSession(data, providers=[("CPUExecutionProvider", {})])
    assert s.get_providers() == ["CPUExecutionProvider"]


def test_unknown_provider_warns_and_falls_back_to_cpu():
    data = _identity_model().SerializeToString()
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        s = onyx.InferenceSession(data, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    with pytest.warns(UserWarning, match="NoSuchExecutionProvider"):
        s = onyx.InferenceSession(data, providers=["NoSuchExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(s.run(None, {"x": np.ones(2, np.float32)})[0], np.ones(2, np.float32))


def test_session_options_fields_and_enums_match_onnxruntime():
    want = onnxruntime.SessionOptions()
    got = onyx.SessionOptions()
    for name in (
        "graph_optimization_level",
        "intra_op_num_threads",
        "inter_op_num_threads",
        "execution_mode",
        "execution_order",
        "optimized_model_filepath",
        "enable_profiling",
        "profile_file_prefix",
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
        "enable_mem_reuse",
        "use_deterministic_compute",
        "use_per_session_threads",
    ):
        assert hasattr(got, name), name
        value = getattr(want, name)
        if name in ("graph_optimization_level", "execution_mode", "execution_order"):
            assert int(getattr(got, name)) == int(value), name
            value = type(getattr(got, name))(int(value))
        elif name not in ("profile_file_prefix", "log_severity_level"):
            assert getattr(got, name) == value, name
        setattr(got, name, value)  # settable
    for enum_name in ("GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder"):
        ort_enum = getattr(onnxruntime, enum_name)
        onyx_enum = getattr(onyx, enum_name)
        for member in dir(ort_enum):
            if member.isupper():
                assert int(getattr(onyx_enum, member)) == int(getattr(ort_enum, member)), member
    for name in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"):
        so = onyx.SessionOptions()
        so.graph_optimization_level = getattr(onyx.GraphOptimizationLevel, name)
        s = onyx.InferenceSession(_identity_model().SerializeToString(), so)
        assert s.run(None, {"x": np.ones(2, np.float32)})[0].tolist() == [1, 1]


def test_session_config_entries():
    so = onyx.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    so.add_session_config_entry("session.intra_op.allow_spinning", "1")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    with pytest.raises(RuntimeError, match="not.set"):  # onnxruntime raises RuntimeError
        so.get_session_config_entry("not.set")
    with pytest.raises(onyx.Fail):
        onyx.RunOptions().get_run_config_entry("not.set")
    s = onyx.InferenceSession(_identity_model().SerializeToString(), so)
    assert s.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "1"


def test_run_options_fields():
    want = onnxruntime.RunOptions()
    got = onyx.RunOptions()
    for name in (
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "terminate",
        "only_execute_path_to_fetches",
    ):
        assert hasattr(got, name), name
    assert got.terminate is False
    assert got.logid == want.logid
    got.add_run_config_entry("k", "v")
    assert got.get_run_config_entry("k") == "v"
    s = onyx.InferenceSession(_identity_model().SerializeToString())
    assert s.run(None, {"x": np.ones(2, np.float32)}, got)[0].tolist() == [1, 1]


def test_output_names_subset_and_order():
    model = make_model(
        [
            helper.make_node("Neg", ["x"], ["a"]),
            helper.make_node("Abs", ["x"], ["b"]),
            helper.make_node("Exp", ["x"], ["c"]),
        ],
        [tensor("x", TensorProto.FLOAT, [3])],
        [
            tensor("a", TensorProto.FLOAT, [3]),
            tensor("b", TensorProto.FLOAT, [3]),
            tensor("c", TensorProto.FLOAT, [3]),
        ],
    )
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    got, want = onyx_session(model), ort_session(model)
    for names in (None, ["c", "a"], ["b"], ["c", "b", "a"], ["a", "a"], []):
        g = got.run(names, {"x": x})
        w = want.run(names, {"x": x})
        assert len(g) == len(w), names
        for gi, wi in zip(g, w):
            assert_same(gi, wi)


def test_graph_input_that_is_also_output():
    model = make_model(
        [helper.make_node("Neg", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2]), tensor("x", TensorProto.FLOAT, [2])],
    )
    x = np.array([1.0, 2.0], np.float32)
    for g, w in zip(onyx_session(model).run(None, {"x": x}), ort_session(model).run(None, {"x": x})):
        assert_same(g, w)


def test_overridable_initializer_can_be_fed():
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2]), tensor("w", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
        initializers=[helper.make_tensor("w", TensorProto.FLOAT, [2], [10, 20])],
    )
    x = np.array([1.0, 2.0], np.float32)
    got, want = onyx_session(model), ort_session(model)
    assert_same(got.run(None, {"x": x})[0], want.run(None, {"x": x})[0])
    feeds = {"x": x, "w": np.array([5.0, 6.0], np.float32)}
    assert_same(got.run(None, feeds)[0], want.run(None, feeds)[0])
    # and the default comes back on the next run
    assert_same(got.run(None, {"x": x})[0], want.run(None, {"x": x})[0])


def test_session_from_path_and_from_onyx_model(tmp_path):
    model = _identity_model()
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    x = np.array([1.0, 2.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for source in (str(path), path, onyx.load(str(path)), bytearray(path.read_bytes())):
            assert onyx.InferenceSession(source).run(None, {"x": x})[0].tolist() == [1, 2]


def test_outputs_never_alias_weights_or_feeds():
    init = [
        helper.make_tensor("w", TensorProto.FLOAT, [2], [1, 2]),
        helper.make_tensor("wi", TensorProto.INT64, [2], [3, 4]),
    ]
    nodes = [
        helper.make_node("Identity", ["w"], ["a"]),
        helper.make_node("Identity", ["wi"], ["b"]),
        helper.make_node(
            "Constant", [], ["c"], value=helper.make_tensor("cv", TensorProto.FLOAT, [2], [5, 6])
        ),
        helper.make_node("Reshape", ["w", "shape"], ["d"]),  # a view of the weight
        helper.make_node("Identity", ["x"], ["e"]),  # the feed itself
        helper.make_node("Reshape", ["x", "shape"], ["f"]),  # a view of the feed
        helper.make_node("SequenceConstruct", ["w", "c"], ["g"]),
    ]
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [1, 2])
    model = make_model(
        [helper.make_node("Constant", [], ["shape"], value=shape)] + nodes,
        [tensor("x", TensorProto.FLOAT, [2])],
        [
            tensor("a", TensorProto.FLOAT, [2]),
            tensor("b", TensorProto.INT64, [2]),
            tensor("c", TensorProto.FLOAT, [2]),
            tensor("d", TensorProto.FLOAT, [1, 2]),
            tensor("e", TensorProto.FLOAT, [2]),
            tensor("f", TensorProto.FLOAT, [1, 2]),
            helper.make_tensor_sequence_value_info("g", TensorProto.FLOAT, None),
        ],
        initializers=init,
    )
    x = np.array([7.0, 8.0], np.float32)
    s = onyx_session(model)
    first = s.run(None, {"x": x})
    want = ort_session(model).run(None, {"x": x})
    for g, w in zip(first, want):
        assert_same(g, w)
    for out in first[:6] + first[6]:
        assert out.flags.writeable
        assert not np.shares_memory(out, x)
        out[...] = 0
    assert x.tolist() == [7.0, 8.0]
    for g, w in zip(s.run(None, {"x": x}), want):
        assert_same(g, w)


def test_ir3_initializers_listed_as_inputs_are_constants():
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2]), tensor("w", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
        initializers=[helper.make_tensor("w", TensorProto.FLOAT, [2], [1, 2])],
        ir_version=3,
        opset=8,
    )
    got, want = _assert_same_surface(model)
    assert got.get_overridable_initializers() == []
    x = np.ones(2, np.float32)
    assert_same(got.run(None, {"x": x})[0], want.run(None, {"x": x})[0])
    with pytest.raises(onyx.InvalidArgument, match="'w'"):
        got.run(None, {"x": x, "w": x})


def test_free_dimension_overrides():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, ["batch", 3])],
        [tensor("y", TensorProto.FLOAT, ["batch", 3])],
    )
    model.graph.input[0].type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    for how, key, value in (("name", "batch", 4), ("denotation", "DATA_BATCH", 5)):
        sessions = []
        for mod in (onnxruntime, onyx):
            so = mod.SessionOptions()
            getattr(so, f"add_free_dimension_override_by_{how}")(key, value)
            sessions.append(mod.InferenceSession(model.SerializeToString(), so))
        want, got = sessions
        assert _args(got.get_inputs()) == _args(want.get_inputs()) == [("x", "tensor(float)", [value, 3])]
        assert _args(got.get_outputs()) == _args(want.get_outputs())
        assert got.run(None, {"x": np.ones((value, 3), np.float32)})[0].shape == (value, 3)
        with pytest.raises(onyx.InvalidArgument, match=f"dimension 0 must be {value}"):
            got.run(None, {"x": np.ones((2, 3), np.float32)})


def test_optional_input_may_be_left_out():
    opt_in = helper.make_value_info(
        "oi", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    )
    model = make_model(
        [helper.make_node("OptionalHasElement", ["oi"], ["has"])],
        [opt_in],
        [tensor("has", TensorProto.BOOL, [])],
        opset=18,
    )
    got, want = onyx_session(model), ort_session(model)
    for feeds in ({}, {"oi": None}, {"oi": np.ones(2, np.float32)}):
        assert_same(got.run(None, feeds)[0], want.run(None, feeds)[0])


def test_modelmeta_and_provider_options_defaults_match_onnxruntime():
    model = _identity_model()
    model.ClearField("producer_name")
    want, got = ort_session(model), onyx_session(model)
    for field in ("producer_name", "graph_name", "domain", "description", "version", "custom_metadata_map"):
        assert getattr(got.get_modelmeta(), field) == getattr(want.get_modelmeta(), field), field
    assert got.get_provider_options() == want.get_provider_options()
    assert got.get_providers() == want.get_providers()
    assert str(got.get_inputs()[0]) == str(want.get_inputs()[0])


def test_outputs_declared_without_shape_get_inferred_ones():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Shape", ["x"], ["s"])],
        [tensor("x", TensorProto.FLOAT, ["N", 2])],
        [tensor("y", TensorProto.FLOAT, None), tensor("s", TensorProto.INT64, None)],
    )
    got, _ = _assert_same_surface(model)
    assert _args(got.get_outputs()) == [("y", "tensor(float)", ["N", 2]), ("s", "tensor(int64)", [2])]
