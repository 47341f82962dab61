"""QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear / QLinearMatMul against onnxruntime."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.reference import ReferenceEvaluator

from onyx.errors import InvalidArgument
from tests.conformance.harness import run_model


def model_of(op, inputs, n_out=1, opset=21, **attrs):
    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(
        op,
        [n if v is not None else "" for n, v in zip(names, inputs)],
        [f"o{k}" for k in range(n_out)],
        **attrs,
    )
    gi = [
        helper.make_tensor_value_info(n, np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for n, v in zip(names, inputs)
        if v is not None
    ]
    go = [onnx.ValueInfoProto(name=f"o{k}") for k in range(n_out)]
    m = helper.make_model(
        helper.make_graph([node], "g", gi, go), opset_imports=[helper.make_opsetid("", opset)]
    )
    m.ir_version = 10
    m = onnx.shape_inference.infer_shapes(m)
    return m, [v for v in inputs if v is not None]


def _exotic(a):
    return (
        a.dtype.kind == "V" or a.dtype.name in ("int4", "uint4", "int2", "uint2") or "float8" in a.dtype.name
    )


def ort_run(m, feeds):
    """onnxruntime, or onnx's reference evaluator where ml_dtypes types cross the Python boundary."""
    exotic = any(_exotic(np.asarray(f)) for f in feeds) or any(
        o.type.tensor_type.elem_type > 16 for o in m.graph.output
    )
    if exotic:
        return ReferenceEvaluator(m).run(None, {i.name: v for i, v in zip(m.graph.input, feeds)})
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: v for i, v in zip(s.get_inputs(), feeds)})


def same(m, feeds, exact=True):
    exp = ort_run(m, feeds)
    got = run_model(m, feeds)
    for g, e in zip(got, exp):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.shape == e.shape
        if exact:
            np.testing.assert_array_equal(g.astype(np.float64), e.astype(np.float64))
        else:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-5, atol=1e-6)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    "zp_dtype", [np.uint8, np.int8, np.uint16, np.int16, ml_dtypes.int4, ml_dtypes.uint4]
)
@pytest.mark.parametrize("mode", ["tensor", "axis", "neg_axis"])
def test_quantize_int(zp_dtype, mode):
    x = (RNG.standard_normal((3, 4, 5)) * 40).astype(np.float32)
    x[0, 0, :3] = [0.5, 1.5, 2.5]  # ties round to even
    if mode == "tensor":
        scale = np.array(0.5, np.float32)
        zp = np.array(3, zp_dtype)
        attrs = {}
    else:
        scale = np.array([0.5, 1.0, 0.25, 2.0], np.float32)
        zp = np.array([1, 2, 0, 3], zp_dtype)
        attrs = {"axis": 1 if mode == "axis" else -2}
    m, feeds = model_of("QuantizeLinear", [x, scale, zp], **attrs)
    same(m, feeds)
    m, feeds = model_of("DequantizeLinear", [run_model(m, feeds)[0], scale, zp], **attrs)
    same(m, feeds, exact=False)


@pytest.mark.parametrize("zp_dtype", [np.int8, ml_dtypes.int4, ml_dtypes.uint4])
def test_blocked(zp_dtype):
    x = (RNG.standard_normal((4, 7)) * 10).astype(np.float32)
    scale = (RNG.random((4, 3)) + 0.5).astype(np.float32)
    zp = np.ones((4, 3), zp_dtype)
    m, feeds = model_of("QuantizeLinear", [x, scale, zp], axis=1, block_size=3)
    same(m, feeds)
    q = run_model(m, feeds)[0]
    m, feeds = model_of("DequantizeLinear", [q, scale, zp], axis=1, block_size=3)
    same(m, feeds, exact=False)


def test_blocked_bad_block_size():
    x = np.ones((4, 7), np.float32)
    scale = np.ones((4, 3), np.float32)
    m, feeds = model_of("QuantizeLinear", [x, scale, np.zeros((4, 3), np.int8)], axis=1, block_size=1)
    with pytest.raises(InvalidArgument):
        run_model(m, feeds)


@pytest.mark.parametrize(
    "fdt",
    [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz],
)
@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize_float8(fdt, saturate):
    x = np.array([0.0, 1.0, -3.3, 1e5, -1e5, np.inf, -np.inf, 448.0, 500.0, 0.013], np.float32)
    scale = np.array(1.0, np.float32)
    zp = np.array(0, fdt)
    m, feeds = model_of("QuantizeLinear", [x, scale, zp], saturate=saturate)
    exp = ort_run(m, feeds)[0]
    got = run_model(m, feeds)[0]
    assert got.dtype == exp.dtype
    np.testing.assert_array_equal(got.astype(np.float32), exp.astype(np.float32))


def test_quantize_no_zero_point_is_uint8_and_output_dtype():
    x = np.linspace(-3, 300, 20).astype(np.float32)
    m, feeds = model_of("QuantizeLinear", [x, np.array(1.5, np.float32)])
    same(m, feeds)
    m, feeds = model_of("QuantizeLinear", [x, np.array(1.5, np.float32)], output_dtype=TensorProto.INT8)
    got = run_model(m, feeds)[0]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.clip(np.rint(x / 1.5), -128, 127).astype(np.int8))


@pytest.mark.parametrize("opset", [10, 13, 19, 23])
def test_versions(opset):
    x = (RNG.standard_normal((2, 3)) * 50).astype(np.float32)
    m, feeds = model_of(
        "QuantizeLinear", [x, np.array(0.7, np.float32), np.array(128, np.uint8)], opset=opset
    )
    same(m, feeds)
    q = run_model(m, feeds)[0]
    m, feeds = model_of(
        "DequantizeLinear", [q, np.array(0.7, np.float32), np.array(128, np.uint8)], opset=opset
    )
    same(m, feeds, exact=False)


def test_int32_dequantize_and_float16_scale():
    x = np.array([-5, 0, 7, 2**20], np.int32)
    m, feeds = model_of("DequantizeLinear", [x, np.array(0.25, np.float32)])
    same(m, feeds, exact=False)
    q = np.array([[1, 200], [3, 4]], np.uint8)
    m, feeds = model_of("DequantizeLinear", [q, np.array(0.1, np.float16), np.array(2, np.uint8)], opset=19)
    same(m, feeds, exact=False)
    xf = np.array([[1.0, -2.0], [3.5, 70.0]], np.float16)
    m, feeds = model_of("QuantizeLinear", [xf, np.array(0.5, np.float16), np.array(0, np.int8)], opset=19)
    same(m, feeds)


def test_empty():
    x = np.zeros((0, 3), np.float32)
    m, feeds = model_of("QuantizeLinear", [x, np.array(0.5, np.float32), np.array(0, np.int8)])
    assert run_model(m, feeds)[0].shape == (0, 3)


@pytest.mark.parametrize(
    "x",
    [
        np.array([[0.0, 0.0], [0.0, 0.0]], np.float32),
        np.array([1.0, 2.5, 3.7], np.float32),
        np.array([-1.0, -2.5, -3.7], np.float32),
        RNG.standard_normal((5, 7)).astype(np.float32),
    ],
)
def test_dynamic_quantize(x):
    m, feeds = model_of("DynamicQuantizeLinear", [x], n_out=3, opset=11)
    same(m, feeds)


@pytest.mark.parametrize("qt", [np.uint8, np.int8])
@pytest.mark.parametrize("opset", [10, 21])
def test_qlinear_matmul_random(qt, opset):
    info = np.iinfo(qt)
    a = RNG.integers(info.min, info.max + 1, size=(2, 5, 64)).astype(qt)
    b = RNG.integers(info.min, info.max + 1, size=(64, 9)).astype(qt)
    ins = [
        a,
        np.array(0.02, np.float32),
        np.array(3, qt),
        b,
        np.array(0.03, np.float32),
        np.array(-1 if qt == np.int8 else 5, qt),
        np.array(0.9, np.float32),
        np.array(7, qt),
    ]
    m, feeds = model_of("QLinearMatMul", ins, opset=opset)
    exp = ort_run(m, feeds)[0]
    got = run_model(m, feeds)[0]
    assert got.dtype == exp.dtype and got.shape == exp.shape
    assert np.abs(got.astype(int) - exp.astype(int)).max() <= 1


def test_qlinear_matmul_per_row_column():
    a = RNG.integers(0, 256, size=(3, 8)).astype(np.uint8)
    b = RNG.integers(0, 256, size=(8, 4)).astype(np.uint8)
    ins = [
        a,
        np.array([0.01, 0.02, 0.03], np.float32),
        np.array([1, 2, 3], np.uint8),
        b,
        np.array([0.05, 0.01, 0.02, 0.03], np.float32),
        np.array([4, 3, 2, 1], np.uint8),
        np.array(0.5, np.float32),
        np.array(10, np.uint8),
    ]
    m, feeds = model_of("QLinearMatMul", ins, opset=10)
    got = run_model(m, feeds)[0]
    acc = (a.astype(np.float64) - [[1], [2], [3]]) @ (b.astype(np.float64) - [4, 3, 2, 1])
    ref = np.clip(np.rint(acc * np.outer([0.01, 0.02, 0.03], [0.05, 0.01, 0.02, 0.03]) / 0.5) + 10, 0, 255)
    assert np.abs(got.astype(int) - ref).max() <= 1


def test_dequantize_bad_axis():
    m, feeds = model_of("DequantizeLinear", [np.ones((2, 3), np.uint8), np.ones(3, np.float32)], axis=0)
    with pytest.raises(InvalidArgument):
        run_model(m, feeds)


def test_qlinear_matmul_float8_v21():
    f8 = ml_dtypes.float8_e4m3fn
    a = (RNG.standard_normal((3, 4)) * 2).astype(f8)
    b = (RNG.standard_normal((4, 2)) * 2).astype(f8)
    ins = [
        a,
        np.array(0.5, np.float32),
        np.array(0, f8),
        b,
        np.array(0.25, np.float32),
        np.array(0, f8),
        np.array(0.1, np.float32),
        np.array(0, f8),
    ]
    m, feeds = model_of("QLinearMatMul", ins, opset=21)
    got = run_model(m, feeds)[0]
    assert got.dtype == f8
    exp = (a.astype(np.float32) @ b.astype(np.float32)) * (0.5 * 0.25 / 0.1)
    exp = np.clip(exp, -448, 448).astype(f8)
    np.testing.assert_array_equal(got.astype(np.float32), exp.astype(np.float32))


def test_quantize_precision_attribute_and_mixed_types():
    # opset 23: x float32 with a float16 scale; the division runs in float16 unless precision says float32
    x = np.array([1.0, 100.3, -7.77, 3.3333], np.float32)
    scale = np.array(0.3, np.float16)
    m, feeds = model_of("QuantizeLinear", [x, scale, np.array(0, np.int16)], opset=23)
    got = run_model(m, feeds)[0]
    exp = np.rint((x.astype(np.float16) / scale).astype(np.float32)).astype(np.int16)
    np.testing.assert_array_equal(got, exp)
    m, feeds = model_of(
        "QuantizeLinear", [x, scale, np.array(0, np.int16)], opset=23, precision=TensorProto.FLOAT
    )
    got = run_model(m, feeds)[0]
    np.testing.assert_array_equal(got, np.rint(x / np.float32(scale)).astype(np.int16))


def test_dequantize_float8e8m0_scale_and_output_dtype():
    x = np.array([[1, -2], [3, 4]], np.int8)
    scale = np.array([0.5, 4.0]).astype(ml_dtypes.float8_e8m0fnu)
    m, feeds = model_of("DequantizeLinear", [x, scale], opset=24, axis=1, output_dtype=TensorProto.FLOAT16)
    got = run_model(m, feeds)[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.array([[0.5, -8], [1.5, 16]], np.float16))


@pytest.mark.parametrize("qt", [ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.float4_e2m1fn])
def test_small_types_round_trip(qt):
    x = np.array([-3.0, -1.0, 0.0, 0.4, 1.0, 2.0, 7.0], np.float32)
    m, feeds = model_of("QuantizeLinear", [x, np.array(1.0, np.float32), np.array(0, qt)], opset=25)
    q = run_model(m, feeds)[0]
    exp = ort_run(m, feeds)[0]
    assert q.dtype == np.dtype(qt)
    np.testing.assert_array_equal(q.astype(np.float32), exp.astype(np.float32))
