"""onyx's MatMulNBitsQuantizer against onnxruntime's: the same float model quantized by both gives the
same initializers byte for byte (symmetric and asymmetric, block sizes 16/32/128, K not a multiple of
the block, 2/4/8 bits, QOperator and QDQ), and the quantized model runs in onyx like in onnxruntime."""

from __future__ import annotations

import logging

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import onyx
from onyx.errors import OnyxError
from onyx.quantization.matmul_nbits_quantizer import (
    DefaultWeightOnlyQuantConfig,
    MatMulNBitsQuantizer,
    RTNWeightOnlyQuantConfig,
)

ortq = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
from onnxruntime.quantization.quant_utils import QuantFormat  # noqa: E402

logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.ERROR)
logging.getLogger("onyx.quantization.matmul_nbits_quantizer").setLevel(logging.ERROR)


def _float_model(weights: list[np.ndarray], opset: int = 21) -> onnx.ModelProto:
    """x -> MatMul(W0) -> Relu -> MatMul(W1) ... (one MatMul per weight)."""
    nodes, inits = [], []
    cur = "x"
    for i, w in enumerate(weights):
        inits.append(numpy_helper.from_array(w, f"W{i}"))
        out = f"h{i}" if i < len(weights) - 1 else "y"
        nodes.append(
            helper.make_node("MatMul", [cur, f"W{i}"], [f"m{i}" if out != "y" else "y"], name=f"mm{i}")
        )
        if out != "y":
            nodes.append(helper.make_node("Relu", [f"m{i}"], [out], name=f"relu{i}"))
        cur = out
    k, n = weights[0].shape[0], weights[-1].shape[1]
    dt = helper.np_dtype_to_tensor_dtype(weights[0].dtype)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", dt, ["b", k])],
        [helper.make_tensor_value_info("y", dt, ["b", n])], inits,
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _initializers(m: onnx.ModelProto) -> dict:
    return {
        t.name: (t.data_type, tuple(t.dims), numpy_helper.to_array(t).tobytes()) for t in m.graph.initializer
    }


def _both(model: onnx.ModelProto, tmp_path, **kw):
    """(onnxruntime's quantized ModelProto, onyx's quantized model saved and read back by onnx)."""
    fmt = kw.pop("quant_format", "QOperator")
    theirs = ortq.MatMulNBitsQuantizer(onnx.ModelProto.FromString(model.SerializeToString()),
                                       quant_format=getattr(QuantFormat, fmt), **kw)  # fmt: skip
    theirs.process()
    path = tmp_path / "float.onnx"
    onnx.save(model, path)
    ours = MatMulNBitsQuantizer(str(path), quant_format=fmt, **kw)
    ours.process()
    out = tmp_path / "q.onnx"
    ours.model.save_model_to_file(str(out))
    return theirs.model.model, onnx.load(out)


def _same(theirs: onnx.ModelProto, ours: onnx.ModelProto) -> None:
    a, b = _initializers(theirs), _initializers(ours)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    assert [(n.op_type, n.domain, n.name) for n in theirs.graph.node] == [
        (n.op_type, n.domain, n.name) for n in ours.graph.node
    ]
    for x, y in zip(theirs.graph.node, ours.graph.node):
        assert {at.name: helper.get_attribute_value(at) for at in x.attribute} == {
            at.name: helper.get_attribute_value(at) for at in y.attribute
        }


@pytest.mark.parametrize("fmt", ["QOperator", "QDQ"])
@pytest.mark.parametrize("sym", [False, True])
@pytest.mark.parametrize("block,k", [(16, 48), (32, 100), (128, 300)])
def test_bytes_equal_onnxruntime(tmp_path, fmt, sym, block, k):
    rng = np.random.default_rng(block + k)
    w = [rng.standard_normal((k, 24)).astype(np.float32), rng.standard_normal((24, 7)).astype(np.float32)]
    w[0][:, 3] = 0  # an all-zero column: scale 0 (its sign follows onnxruntime)
    theirs, ours = _both(_float_model(w), tmp_path, block_size=block, is_symmetric=sym, quant_format=fmt)
    _same(theirs, ours)
    x = rng.standard_normal((3, k)).astype(np.float32)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(theirs.SerializeToString(), so).run(None, {"x": x})[0]
    got = onyx.InferenceSession(ours.SerializeToString()).run(None, {"x": x})[0]
    scale = float(np.abs(x).max()) * k * 4
    np.testing.assert_allclose(got, want, rtol=0, atol=scale * k * np.finfo(np.float32).eps + 1e-5)


@pytest.mark.parametrize("bits", [2, 8])
@pytest.mark.parametrize("sym", [False, True])
def test_other_bit_widths(tmp_path, bits, sym):
    rng = np.random.default_rng(bits)
    w = [rng.standard_normal((70, 20)).astype(np.float32)]
    theirs, ours = _both(_float_model(w), tmp_path, bits=bits, block_size=32, is_symmetric=sym)
    _same(theirs, ours)


def test_float16_weights(tmp_path):
    rng = np.random.default_rng(11)
    w = [rng.standard_normal((96, 40)).astype(np.float16)]
    for fmt in ("QOperator", "QDQ"):
        theirs, ours = _both(_float_model(w), tmp_path, block_size=32, quant_format=fmt)
        _same(theirs, ours)


def test_accuracy_level_exclude_include_and_opset(tmp_path):
    rng = np.random.default_rng(2)
    w = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(3)]
    model = _float_model(w, opset=17)
    theirs, ours = _both(model, tmp_path, block_size=32, accuracy_level=4, nodes_to_exclude=["mm1"])
    _same(theirs, ours)
    assert [n.op_type for n in ours.graph.node if n.name == "mm1"] == ["MatMul"]
    assert ("com.microsoft", 1) in [(o.domain, o.version) for o in ours.opset_import]
    theirs, ours = _both(model, tmp_path, block_size=32, quant_format="QDQ")
    _same(theirs, ours)
    assert [o.version for o in ours.opset_import if o.domain == ""] == [21]


def test_rtn_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(4)
    w = [rng.standard_normal((128, 32)).astype(np.float32)]
    model = _float_model(w)
    theirs = ortq.MatMulNBitsQuantizer(onnx.ModelProto.FromString(model.SerializeToString()), block_size=32,
                                       algo_config=ortq.RTNWeightOnlyQuantConfig())  # fmt: skip
    theirs.process()
    ours = MatMulNBitsQuantizer(model, block_size=32, algo_config=RTNWeightOnlyQuantConfig())  # a ModelProto
    ours.process()
    a = _initializers(theirs.model.model)
    b = _initializers(onnx.load_from_string(onyx.serialize(ours.model.model)))
    assert a == b


def test_subgraph_and_onyx_model_in_place():
    """A MatMul inside an If branch reading an outer initializer is quantized (the weight stays in the
    graph that holds it); an onyx Model is quantized in place; the result runs."""
    from onyx.ir.builder import GraphBuilder

    rng = np.random.default_rng(5)
    w = rng.standard_normal((40, 8)).astype(np.float32)
    b = GraphBuilder(opset=21)
    x = b.input("x", np.float32, ["n", 40])
    c = b.input("c", np.bool_, [])
    wv = b.initializer("W", w)
    then_b = b.subgraph("then")
    then_b.output(then_b.MatMul(x, wv), "t")
    else_b = b.subgraph("else")
    else_b.output(else_b.Relu(else_b.MatMul(x, wv)), "e")
    b.output(b.If(c, then_branch=then_b.graph, else_branch=else_b.graph), "y", np.float32, ["n", 8])
    model = b.model()
    q = MatMulNBitsQuantizer(model, block_size=16)
    q.process()
    assert q.model.model is model
    ops = [n.op_type for n in model.graph.walk()]
    assert ops.count("MatMulNBits") == 2 and "MatMul" not in ops
    xv = rng.standard_normal((2, 40)).astype(np.float32)
    got = onyx.InferenceSession(onyx.serialize(model)).run(None, {"x": xv, "c": np.array(True)})[0]
    # each weight is off by at most half a step, (block max - block min) / 15 / 2 <= the whole range / 30
    half_step = float(max(w.max(), 0) - min(w.min(), 0)) / 30
    bound = np.abs(xv).sum(axis=1, keepdims=True) * half_step * 1.001 + 1e-5
    assert np.all(np.abs(got - xv @ w) <= bound)


@pytest.mark.parametrize("a_rank", [1, 2, 3])
def test_weight_with_leading_ones(tmp_path, a_rank):
    """A (1, K, N) weight: quantized as (K, N); the output keeps MatMul's rank (onnxruntime reshapes at
    run time, onyx unsqueezes by A's known rank); the initializers equal onnxruntime's."""
    rng = np.random.default_rng(a_rank)
    w = rng.standard_normal((1, 64, 16)).astype(np.float32)
    dims = [[64], ["b", 64], ["s", "b", 64]][a_rank - 1]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", 1, dims)], [helper.make_tensor_value_info("y", 1, None)],
        [numpy_helper.from_array(w, "W")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    theirs, ours = _both(model, tmp_path, block_size=32)
    a, b = _initializers(theirs), _initializers(ours)
    assert {k: a[k] for k in ("W_Q4", "W_scales", "W_zero_points")} == {
        k: b[k] for k in ("W_Q4", "W_scales", "W_zero_points")
    }
    x = rng.standard_normal([2, 3, 64][3 - a_rank :]).astype(np.float32)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(theirs.SerializeToString(), so).run(None, {"x": x})[0]
    got = onyx.InferenceSession(ours.SerializeToString()).run(None, {"x": x})[0]
    assert got.shape == want.shape == np.matmul(x, w).shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_save_external_data_and_quant_format_enums(tmp_path):
    """save_model_to_file(path, True) writes the weights beside the model as onnxruntime names them;
    onnxruntime's and onyx's QuantFormat enums are both accepted."""
    from onyx.quantization.types import QuantFormat as OnyxQuantFormat

    rng = np.random.default_rng(9)
    path = tmp_path / "m.onnx"
    onnx.save(_float_model([rng.standard_normal((256, 64)).astype(np.float32)]), path)
    for fmt in (QuantFormat.QDQ, OnyxQuantFormat.QDQ):
        q = MatMulNBitsQuantizer(str(path), block_size=32, quant_format=fmt)
        q.process()
        assert [n.op_type for n in q.model.nodes()] == ["DequantizeLinear", "MatMul"]
    out = tmp_path / "q.onnx"
    q.model.save_model_to_file(str(out), use_external_data_format=True)
    assert (tmp_path / "q.onnx.data").exists()
    x = rng.standard_normal((2, 256)).astype(np.float32)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(str(out), so).run(None, {"x": x})[0]
    np.testing.assert_allclose(
        onyx.InferenceSession(str(out)).run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-4
    )


def test_bad_arguments(tmp_path):
    w = [np.ones((32, 8), np.float32)]
    path = tmp_path / "m.onnx"
    onnx.save(_float_model(w), path)
    with pytest.raises(OnyxError, match="bits must be 2, 4 or 8"):
        MatMulNBitsQuantizer(str(path), bits=3)
    with pytest.raises(OnyxError, match="block_size must be a power of two"):
        MatMulNBitsQuantizer(str(path), block_size=24)
    with pytest.raises(OnyxError, match="QDQ format quantizes MatMul weights to 4 bits"):
        MatMulNBitsQuantizer(str(path), bits=8, quant_format="QDQ")
    with pytest.raises(OnyxError, match="quant_format"):
        MatMulNBitsQuantizer(str(path), quant_format="QLinear")
    with pytest.raises(OnyxError, match="does not exist"):
        MatMulNBitsQuantizer(str(tmp_path / "missing.onnx"))
    with pytest.raises(OnyxError, match="expects a model path"):
        MatMulNBitsQuantizer(42)
    with pytest.raises(OnyxError, match="not implemented"):
        MatMulNBitsQuantizer(str(path), op_types_to_quantize=("Conv",))
    with pytest.raises(OnyxError):
        DefaultWeightOnlyQuantConfig(channel_wised_quantize=True)
    with pytest.raises(OnyxError, match="QOperator"):
        RTNWeightOnlyQuantConfig(quant_format="QDQ")
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage")
    with pytest.raises(OnyxError):
        MatMulNBitsQuantizer(str(tmp_path / "bad.onnx"))
