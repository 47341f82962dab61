"""MatMulNBitsQuantizer with "Gather" in op_types_to_quantize, against onnxruntime's: an embedding
Gather + MatMul model quantized by both gives the same initializers byte for byte (INT4 / UINT4 tables,
block sizes 16/32/128, rows not a multiple of the block, quant_axes 0 and 1, float16 tables), the same
nodes and opsets, and the quantized model runs in onyx like in onnxruntime. onnxruntime's refusals
(QDQ, a bad quantize axis) are onyx errors; what it leaves alone (8 bits, non-constant data) stays."""

from __future__ import annotations

import logging

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import OnyxError
from onyx.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

ortq = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
from onnxruntime.quantization.quant_utils import QuantFormat  # noqa: E402

logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.CRITICAL)
logging.getLogger("onyx.quantization.matmul_nbits_quantizer").setLevel(logging.CRITICAL)


def _embedding_model(table: np.ndarray, w: np.ndarray | None, axis: int = 0, opset: int = 21):
    """ids -> Gather(table, axis) [-> MatMul(w)] -> y."""
    nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed", axis=axis)]
    inits = [numpy_helper.from_array(table, "table")]
    out = "emb"
    if w is not None:
        inits.append(numpy_helper.from_array(w, "W"))
        nodes.append(helper.make_node("MatMul", ["emb", "W"], ["y"], name="proj"))
        out = "y"
    dt = helper.np_dtype_to_tensor_dtype(table.dtype)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, None)],
        [helper.make_tensor_value_info(out, dt, None)], inits,
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 21 else 10
    return m


def _both(model: onnx.ModelProto, tmp_path, **kw):
    """(onnxruntime's quantized ModelProto, onyx's quantized model saved and read back by onnx)."""
    fmt = kw.pop("quant_format", "QOperator")
    theirs = ortq.MatMulNBitsQuantizer(onnx.ModelProto.FromString(model.SerializeToString()),
                                       quant_format=getattr(QuantFormat, fmt), **kw)  # fmt: skip
    with np.errstate(all="ignore"):  # onnxruntime divides by the zero scales it then discards
        theirs.process()
    path = tmp_path / "float.onnx"
    onnx.save(model, path)
    ours = MatMulNBitsQuantizer(str(path), quant_format=fmt, **kw)
    ours.process()
    out = tmp_path / "q.onnx"
    ours.model.save_model_to_file(str(out))
    return theirs.model.model, onnx.load(out)


def _raw(t: onnx.TensorProto) -> tuple:
    data = t.raw_data if t.HasField("raw_data") else numpy_helper.to_array(t).tobytes()
    return t.data_type, tuple(t.dims), data


def _same(theirs: onnx.ModelProto, ours: onnx.ModelProto) -> None:
    a = {t.name: _raw(t) for t in theirs.graph.initializer}
    b = {t.name: _raw(t) for t in ours.graph.initializer}
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    assert [(n.op_type, n.domain, n.name, list(n.input)) for n in theirs.graph.node] == [
        (n.op_type, n.domain, n.name, list(n.input)) for n in ours.graph.node
    ]
    for x, y in zip(theirs.graph.node, ours.graph.node):
        assert {at.name: helper.get_attribute_value(at) for at in x.attribute} == {
            at.name: helper.get_attribute_value(at) for at in y.attribute
        }
    assert sorted((o.domain, o.version) for o in theirs.opset_import) == sorted(
        (o.domain, o.version) for o in ours.opset_import
    )
    assert theirs.ir_version == ours.ir_version
    assert [i.name for i in theirs.graph.input] == [i.name for i in ours.graph.input]


def _outputs(theirs, ours, ids):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(theirs.SerializeToString(), so).run(None, {"ids": ids})[0]
    got = onyx.InferenceSession(ours.SerializeToString()).run(None, {"ids": ids})[0]
    return got, want


@pytest.mark.parametrize("sym", [False, True])
@pytest.mark.parametrize("block,shape,qaxis", [(16, (50, 48), 1), (32, (37, 100), 1), (128, (20, 300), 1),
                                               (32, (70, 24), 0), (16, (33, 40), -1)])  # fmt: skip
def test_bytes_and_outputs_equal_onnxruntime(tmp_path, sym, block, shape, qaxis):
    rng = np.random.default_rng(block + shape[0] + qaxis)
    table = rng.standard_normal(shape).astype(np.float32)
    table[3] = 0  # an all-zero row: scale 0
    table[5, :20] = 0.5  # ties in x / scale
    model = _embedding_model(table, None)
    theirs, ours = _both(
        model, tmp_path, block_size=block, is_symmetric=sym, op_types_to_quantize=("Gather",),
        quant_axes=(("Gather", qaxis),),
    )  # fmt: skip
    _same(theirs, ours)
    assert [n.op_type for n in ours.graph.node] == ["GatherBlockQuantized"]
    ids = rng.integers(-shape[0], shape[0], (2, 5)).astype(np.int64)
    got, want = _outputs(theirs, ours, ids)
    np.testing.assert_array_equal(got, want)  # the same float32 products, element for element


@pytest.mark.parametrize("sym", [False, True])
def test_embedding_and_matmul_together(tmp_path, sym):
    """The issue's case: a model whose float embedding table dominates its size; both ops quantized,
    opset raised to 21 and IR to 10 as onnxruntime does, and the file several times smaller."""
    rng = np.random.default_rng(7)
    table = rng.standard_normal((512, 64)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    model = _embedding_model(table, w, opset=17)
    theirs, ours = _both(
        model, tmp_path, block_size=32, is_symmetric=sym, op_types_to_quantize=("MatMul", "Gather")
    )
    _same(theirs, ours)
    assert [n.op_type for n in ours.graph.node] == ["GatherBlockQuantized", "MatMulNBits"]
    assert len(ours.SerializeToString()) * 5 < len(model.SerializeToString())
    ids = rng.integers(0, 512, (3, 7)).astype(np.int64)
    got, want = _outputs(theirs, ours, ids)
    emb = np.abs(got).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=64 * np.finfo(np.float32).eps * emb * 8 + 1e-6)


def test_float16_table_and_gather_axis(tmp_path):
    rng = np.random.default_rng(9)
    table = rng.standard_normal((40, 64)).astype(np.float16)
    model = _embedding_model(table, None, axis=1)
    theirs, ours = _both(
        model, tmp_path, block_size=16, op_types_to_quantize=("Gather",), quant_axes=(("Gather", 0),)
    )
    _same(theirs, ours)
    ids = np.array([[0, 63, -1]], np.int64)
    got, want = _outputs(theirs, ours, ids)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_left_alone_as_onnxruntime_leaves_it(tmp_path):
    """8 bits: onnxruntime logs and keeps the Gather (the MatMul is still quantized); nodes_to_exclude."""
    rng = np.random.default_rng(5)
    model = _embedding_model(rng.standard_normal((64, 32)).astype(np.float32),
                             rng.standard_normal((32, 16)).astype(np.float32))  # fmt: skip
    theirs, ours = _both(model, tmp_path, bits=8, block_size=32, op_types_to_quantize=("MatMul", "Gather"))
    _same(theirs, ours)
    assert [n.op_type for n in ours.graph.node] == ["Gather", "MatMulNBits"]
    theirs, ours = _both(
        model, tmp_path, block_size=32, op_types_to_quantize=("Gather",), nodes_to_exclude=["embed"]
    )
    _same(theirs, ours)
    assert [n.op_type for n in ours.graph.node] == ["Gather", "MatMul"]


def test_gather_of_a_graph_input_is_left_alone(tmp_path):
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="g")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("table", TensorProto.FLOAT, [10, 32]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    theirs, ours = _both(model, tmp_path, block_size=16, op_types_to_quantize=("Gather",))
    _same(theirs, ours)
    assert [n.op_type for n in ours.graph.node] == ["Gather"]


def test_refusals_are_onyx_errors(tmp_path):
    """onnxruntime asserts on these (AssertionError); onyx raises its own errors, naming the node."""
    rng = np.random.default_rng(6)
    model = _embedding_model(rng.standard_normal((20, 32)).astype(np.float32), None)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(AssertionError):
        ortq.MatMulNBitsQuantizer(onnx.load(path), op_types_to_quantize=("Gather",),
                                  quant_format=QuantFormat.QDQ).process()  # fmt: skip
    q = MatMulNBitsQuantizer(str(path), op_types_to_quantize=("Gather",), quant_format="QDQ")
    with pytest.raises(OnyxError, match="QOperator format only"):
        q.process()
    with pytest.raises(AssertionError):
        ortq.MatMulNBitsQuantizer(onnx.load(path), op_types_to_quantize=("Gather",),
                                  quant_axes=(("Gather", 2),)).process()  # fmt: skip
    q = MatMulNBitsQuantizer(str(path), op_types_to_quantize=("Gather",), quant_axes=(("Gather", 2),))
    with pytest.raises(OnyxError, match="quant_axes"):
        q.process()
    from onyx.quantization.matmul_nbits_quantizer import RTNWeightOnlyQuantConfig

    with pytest.raises(OnyxError, match="not implemented"):
        MatMulNBitsQuantizer(
            str(path), algo_config=RTNWeightOnlyQuantConfig(op_types_to_quantize=("Gather",))
        )
