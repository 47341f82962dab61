"""convert_float_to_float16: torch-exported models converted run in onnxruntime and in onyx close to
float32, the file halves, keep_io_types keeps float32 I/O, the spec's float32 inputs stay float32,
existing Cast(to=FLOAT) nodes are rewritten, subgraphs and block lists are handled, bad input fails."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import OnyxError
from onyx.float16 import convert_float_to_float16, convert_float_to_float16_model_path, to_float16

torch = pytest.importorskip("torch")


def _export(module, example, **kw) -> bytes:
    f = io.BytesIO()
    torch.onnx.export(
        module.eval(),
        (example,),
        f,
        dynamo=False,
        input_names=["x"],
        output_names=["y"],
        opset_version=17,
        **kw,
    )
    return f.getvalue()


class _Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.c2 = torch.nn.Conv2d(16, 64, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.c1(x)))
        x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
        return torch.softmax(self.fc(x.mean(dim=(2, 3))), dim=-1)


class _Transformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Linear(16, 64)
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(64, 4)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


def _models():
    torch.manual_seed(0)
    cnn = _export(_Cnn(), torch.randn(2, 3, 16, 16))
    tr = _export(_Transformer(), torch.randn(2, 5, 16))
    rng = np.random.default_rng(0)
    return [
        ("cnn", cnn, rng.standard_normal((2, 3, 16, 16)).astype(np.float32)),
        ("transformer", tr, rng.standard_normal((2, 5, 16)).astype(np.float32)),
    ]


MODELS = _models()


def _ort(data: bytes, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("name,data,x", MODELS, ids=[m[0] for m in MODELS])
def test_runs_close_to_float32(name, data, x):
    want = _ort(data, x)
    model = convert_float_to_float16(onyx.load(data))
    half = onyx.serialize(model)
    assert len(half) < 0.6 * len(data)  # the weights halve; the graph's structure stays
    weights = [sum(t.ByteSize() for t in onnx.load_from_string(d).graph.initializer) for d in (data, half)]
    assert weights[1] < 0.51 * weights[0]
    x16 = x.astype(np.float16)
    got_ort = _ort(half, x16)
    got_onyx = onyx.InferenceSession(half).run(None, {"x": x16})[0]
    assert got_ort.dtype == np.float16 and got_onyx.dtype == np.float16
    # float16 keeps 11 significant bits: a few units of 2**-11 relative through a few layers
    scale = float(np.abs(want).max())
    tol = 2e-2 * scale + 1e-3
    np.testing.assert_allclose(got_ort.astype(np.float32), want, rtol=0, atol=tol)
    np.testing.assert_allclose(got_onyx.astype(np.float32), want, rtol=0, atol=tol)
    onnx.checker.check_model(onnx.load_from_string(half))


def test_keep_io_types_and_model_path(tmp_path):
    name, data, x = MODELS[1]
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    model = convert_float_to_float16_model_path(str(path), keep_io_types=True)
    half = onyx.serialize(model)
    proto = onnx.load_from_string(half)
    assert proto.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert proto.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert [o.name for o in proto.graph.output] == ["y"]
    got = onyx.InferenceSession(half).run(None, {"x": x})[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _ort(half, x), rtol=0, atol=1e-2)


def _resize_model(cast_to_float: bool = False) -> bytes:
    """x -> Mul(w) -> Resize(scales) [-> Cast(to=FLOAT)] -> y."""
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["m"], name="mul"),
        helper.make_node("Resize", ["m", "", "scales"], ["r"], mode="nearest", name="resize"),
    ]
    nodes.append(helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT, name="cast") if cast_to_float
                 else helper.make_node("Relu", ["r"], ["y"], name="relu"))  # fmt: skip
    inits = [
        numpy_helper.from_array(np.array([1.5, -2.0, 1e-9, 1e6], np.float32).reshape(1, 1, 2, 2), "w"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
    ]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])], inits,
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_resize_scales_stay_float32_and_values_clamped():
    model = convert_float_to_float16(onyx.load(_resize_model()), op_block_list=[])  # Resize runs float16
    proto = onnx.load_from_string(onyx.serialize(model))
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert inits["scales"].dtype == np.float32
    w = inits["w"]
    assert w.dtype == np.float16
    assert w.reshape(-1)[2] == np.float16(5.96e-08) and w.reshape(-1)[3] == np.float16(65504.0)
    x = np.ones((1, 1, 2, 2), np.float16)
    got = onyx.InferenceSession(proto.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, _ort(proto.SerializeToString(), x))


def test_blocked_resize_gets_casts():
    model = convert_float_to_float16(onyx.load(_resize_model()))  # Resize in the default block list
    proto = onnx.load_from_string(onyx.serialize(model))
    ops = [n.op_type for n in proto.graph.node]
    assert ops == ["Mul", "Cast", "Resize", "Cast", "Relu"]
    casts = [helper.get_attribute_value(n.attribute[0]) for n in proto.graph.node if n.op_type == "Cast"]
    assert casts == [TensorProto.FLOAT, TensorProto.FLOAT16]
    x = np.full((1, 1, 2, 2), 0.5, np.float16)
    got = onyx.InferenceSession(proto.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, _ort(proto.SerializeToString(), x))


def test_existing_cast_to_float_rewritten_unless_blocked():
    model = convert_float_to_float16(onyx.load(_resize_model(cast_to_float=True)))
    proto = onnx.load_from_string(onyx.serialize(model))
    cast = [n for n in proto.graph.node if n.name == "cast"][0]
    assert helper.get_attribute_value(cast.attribute[0]) == TensorProto.FLOAT16
    assert proto.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    model = convert_float_to_float16(onyx.load(_resize_model(cast_to_float=True)), node_block_list=["cast"])
    proto = onnx.load_from_string(onyx.serialize(model))
    cast = [n for n in proto.graph.node if n.name == "cast"][0]
    assert helper.get_attribute_value(cast.attribute[0]) == TensorProto.FLOAT
    assert proto.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    x = np.ones((1, 1, 2, 2), np.float16)
    assert _ort(proto.SerializeToString(), x).dtype == np.float16


def test_subgraph_and_constants():
    """An If whose branches hold a float constant feeding a blocked Max (its float32 result is cast for
    the branch's output) and a MatMul reading an outer weight; a ConstantOfShape of float."""
    then = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value_float=0.5),
         helper.make_node("Max", ["x", "c"], ["t"])],
        "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])],
    )  # fmt: skip
    other = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["e0"]), helper.make_node("Relu", ["e0"], ["e"])],
        "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])],
    )  # fmt: skip
    shape = numpy_helper.from_array(np.array([2, 3], np.int64), "shape")
    two = numpy_helper.from_array(np.full(1, 2.0, np.float32))
    g = helper.make_graph(
        [
            helper.make_node("If", ["cond"], ["i"], then_branch=then, else_branch=other),
            helper.make_node("ConstantOfShape", ["shape"], ["k"], value=two),
            helper.make_node("Add", ["i", "k"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.eye(3, dtype=np.float32) * 3, "w"), shape],
    )  # fmt: skip
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    half = onyx.serialize(convert_float_to_float16(onyx.load(data)))
    onnx.checker.check_model(onnx.load_from_string(half), full_check=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    for cond in (True, False):
        want = ort.InferenceSession(data).run(None, {"x": x, "cond": np.array(cond)})[0]
        feeds = {"x": x.astype(np.float16), "cond": np.array(cond)}
        for got in (ort.InferenceSession(half).run(None, feeds)[0],
                    onyx.InferenceSession(half).run(None, feeds)[0]):  # fmt: skip
            assert got.dtype == np.float16
            np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-3)


def test_quantized_model_keeps_float32_scales():
    """QuantizeLinear / DequantizeLinear are blocked: their scales stay float32 initializers, the
    activations are cast around them."""
    g = helper.make_graph(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
            helper.make_node("Relu", ["d"], ["y"]),
        ],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.uint8(128), "z")],
    )  # fmt: skip
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    half = onyx.serialize(convert_float_to_float16(onyx.load(data)))
    proto = onnx.load_from_string(half)
    assert {t.name: t.data_type for t in proto.graph.initializer} == {
        "s": TensorProto.FLOAT,
        "z": TensorProto.UINT8,
    }
    assert [n.op_type for n in proto.graph.node] == [
        "Cast",
        "QuantizeLinear",
        "DequantizeLinear",
        "Cast",
        "Relu",
    ]
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    want = ort.InferenceSession(data).run(None, {"x": x})[0]
    for got in (
        _ort(half, x.astype(np.float16)),
        onyx.InferenceSession(half).run(None, {"x": x.astype(np.float16)})[0],
    ):
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-3, atol=1e-3)


def test_to_float16_clamps():
    a = np.array([0, 1e-10, -1e-10, 7e4, -7e4, np.inf, -np.inf, np.nan, 1.5], np.float32)
    b = to_float16(a)
    assert b[0] == 0 and b[1] == np.float16(5.96e-08) and b[2] == -np.float16(5.96e-08)
    assert b[3] == 65504 and b[4] == -65504 and np.isposinf(b[5]) and np.isneginf(b[6]) and np.isnan(b[7])
    assert b[8] == 1.5


def test_bad_input(tmp_path):
    data = _resize_model()
    with pytest.raises(OnyxError, match="expects an onyx Model or a model path"):
        convert_float_to_float16(data)
    with pytest.raises(OnyxError, match="does not exist"):
        convert_float_to_float16(str(tmp_path / "missing.onnx"))
    with pytest.raises(OnyxError, match="min_positive_val"):
        convert_float_to_float16(onyx.load(data), min_positive_val=0)
    with pytest.raises(OnyxError, match="max_finite_val"):
        convert_float_to_float16(onyx.load(data), max_finite_val=1e6)
    with pytest.raises(OnyxError, match="op_block_list must be a list"):
        convert_float_to_float16(onyx.load(data), op_block_list="Resize")
    with pytest.raises(OnyxError, match="node_block_list must hold strings"):
        convert_float_to_float16(onyx.load(data), node_block_list=[1])
    with pytest.raises(OnyxError, match="model_path must be a path"):
        convert_float_to_float16_model_path(onyx.load(data))
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage")
    with pytest.raises(OnyxError):
        convert_float_to_float16_model_path(str(tmp_path / "bad.onnx"))
