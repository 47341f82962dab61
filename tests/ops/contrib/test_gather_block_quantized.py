"""com.microsoft GatherBlockQuantized against onnxruntime on random quantized tables: int4 / uint4 /
uint8 (2, 4, 8 bits) / float8 / float4 data, with and without zero points, float and float16 scales,
every gather_axis / quantize_axis pair onnxruntime accepts, negative and out-of-range indices; and
onyx's errors on bad inputs."""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import OnyxError

MS = "com.microsoft"
_ELEM = {"int4": TensorProto.INT4, "uint4": TensorProto.UINT4}


def _tensor(name: str, a: np.ndarray):
    if a.dtype.name in _ELEM:
        return helper.make_tensor(name, _ELEM[a.dtype.name], a.shape, a.astype(np.int8).reshape(-1).tolist())
    return numpy_helper.from_array(a, name)


def _model(data, scales, zp, index_dtype, index_shape=None, **attrs) -> bytes:
    inits = [_tensor("data", data), _tensor("scales", scales)]
    names = ["data", "indices", "scales"]
    if zp is not None:
        inits.append(_tensor("zp", zp))
        names.append("zp")
    node = helper.make_node("GatherBlockQuantized", names, ["y"], domain=MS, **attrs)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(index_dtype))
    out = helper.np_dtype_to_tensor_dtype(scales.dtype)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("indices", elem, index_shape)],
        [helper.make_tensor_value_info("y", out, None)], inits,
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10).SerializeToString()


def _both(model: bytes, indices: np.ndarray):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"indices": indices})
    got = onyx.InferenceSession(model).run(None, {"indices": indices})
    return got[0], want[0]


def _table(rng, shape, qa, block, dtype, with_zp, scale_dtype=np.float32):
    kb = -(-shape[qa] // block)
    sshape = list(shape)
    sshape[qa] = kb
    lo, hi = (-8, 8) if dtype == "int4" else (0, 16)
    qt = getattr(ml_dtypes, dtype)
    data = rng.integers(lo, hi, shape).astype(qt)
    scales = (rng.random(sshape) * 0.2 + 0.01).astype(scale_dtype)
    zp = rng.integers(lo, hi, sshape).astype(qt) if with_zp else None
    return data, scales, zp


CASES = [  # shape, gather_axis, quantize_axis, block_size
    ((40, 64), 0, 1, 16),
    ((40, 70), 0, 1, 32),  # a partial last block
    ((40, 64), 0, -1, 128),
    ((33, 24), 1, 0, 16),
    ((33, 24), -1, 0, 16),
    ((6, 50), 1, 1, 16),  # gather along the quantized axis
    ((3, 20, 18), 1, 2, 16),
    ((3, 20, 18), 2, 1, 16),
    ((5, 4, 18), 0, 1, 16),
]


@pytest.mark.parametrize("shape,g,qa,block", CASES)
@pytest.mark.parametrize(
    "dtype,with_zp", [("int4", False), ("int4", True), ("uint4", True), ("uint4", False)]
)
def test_int4_matches_onnxruntime(shape, g, qa, block, dtype, with_zp):
    rng = np.random.default_rng(zlib.crc32(repr((shape, g, qa, block, dtype, with_zp)).encode()))
    data, scales, zp = _table(rng, shape, qa, block, dtype, with_zp)
    n = shape[g]
    indices = rng.integers(-n, n, (2, 3)).astype(np.int64)
    got, want = _both(_model(data, scales, zp, np.int64, gather_axis=g, quantize_axis=qa, block_size=block),
                      indices)  # fmt: skip
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_float16_scales_scalar_and_out_of_range_indices(index_dtype):
    """Out-of-range indices give zeros (the spec; Gather would fail); a scalar index drops the axis."""
    rng = np.random.default_rng(3)
    data, scales, zp = _table(rng, (12, 48), 1, 16, "uint4", True, np.float16)
    model = _model(data, scales, zp, index_dtype, block_size=16)
    for idx in (np.array([[0, 11], [-12, 12], [-13, 5]], index_dtype), np.array(7, index_dtype)):
        got, want = _both(model, idx)
        assert got.dtype == np.float16 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    got, _ = _both(model, np.array([12, -13], index_dtype))
    assert not got.any()


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("with_zp", [False, True])
def test_uint8_packed(bits, with_zp):
    rng = np.random.default_rng(bits * 2 + with_zp)
    per = 8 // bits
    rows, cols, block = 9, 80, 32  # 3 blocks a row, the last partial
    data = rng.integers(0, 256, (rows, cols // per), dtype=np.uint8)
    kb = -(-cols // block)
    scales = (rng.random((rows, kb)) + 0.1).astype(np.float32)
    zp = rng.integers(0, 256, (rows, -(-kb // per)), dtype=np.uint8) if with_zp else None
    model = _model(data, scales, zp, np.int64, bits=bits, block_size=block)
    got, want = _both(model, np.array([[8, 0, -1], [3, 3, 20]], np.int64))
    assert got.shape == want.shape == (2, 3, cols)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("code", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"])
@pytest.mark.parametrize("block,sshape", [(16, (10, 3)), (0, (10, 1)), (16, (1, 3))])
def test_float_codes(code, block, sshape):
    """Float8 / float4 tables: no zero point, block_size 0 spans the row, a scales dim of 1 broadcasts."""
    rng = np.random.default_rng(len(code) + block)
    data = rng.standard_normal((10, 40)).astype(getattr(ml_dtypes, code))
    scales = (rng.random(sshape) + 0.5).astype(np.float32)
    model = _model(data, scales, None, np.int64, block_size=block)
    got, want = _both(model, np.array([9, -10, 4], np.int64))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("packed", [False, True])
def test_shape_inference(packed):
    rng = np.random.default_rng(0)
    if packed:  # uint8, 4 bits: the last axis doubles
        data, scales = rng.integers(0, 256, (40, 32), dtype=np.uint8), np.ones((40, 4), np.float16)
        model = _model(data, scales, None, np.int64, [2, 3], block_size=16)
        want = [2, 3, 64]
    else:
        data, scales, _ = _table(rng, (40, 64), 0, 16, "int4", False)
        model = _model(data, scales, None, np.int64, [5], gather_axis=1, quantize_axis=0, block_size=16)
        want = [40, 5]
    out = onyx.infer_shapes(onyx.load(model)).graph.outputs[0].type
    assert out.elem_type == helper.np_dtype_to_tensor_dtype(scales.dtype)
    assert [d for d in out.shape.dims] == want


# -- bad inputs ----------------------------------------------------------------------------------------


def _run_direct(data, indices, scales, zp=None, **attrs):
    from onyx.ops.contrib.gather_block_quantized import gather_block_quantized

    return gather_block_quantized(data, indices, scales, zp, **attrs)


@pytest.mark.parametrize(
    "change,match",
    [
        (lambda a: {**a, "block_size": 24}, "block_size"),
        (lambda a: {**a, "block_size": 8}, "block_size"),
        (lambda a: {**a, "bits": 8}, "bits"),
        (lambda a: {**a, "scales": a["scales"][:, :1]}, "scales shape"),
        (lambda a: {**a, "scales": a["scales"][None]}, "rank"),
        (lambda a: {**a, "scales": a["scales"].astype(np.int32)}, "scales must be float"),
        (lambda a: {**a, "indices": a["indices"].astype(np.float32)}, "indices"),
        (lambda a: {**a, "data": a["data"].astype(np.float32)}, "data must be"),
        (lambda a: {**a, "zp": a["zp"].astype(np.int8)}, "zero_points must have data's type"),
        (lambda a: {**a, "zp": a["zp"][:, :1]}, "zero_points must have shape"),
        (lambda a: {**a, "gather_axis": 2}, "gather_axis"),
        (lambda a: {**a, "quantize_axis": -3}, "quantize_axis"),
    ],
)
def test_bad_inputs_raise_onyx_errors(change, match):
    rng = np.random.default_rng(1)
    data, scales, zp = _table(rng, (8, 64), 1, 16, "int4", True)
    args = change({"data": data, "indices": np.array([1], np.int64), "scales": scales, "zp": zp,
                   "block_size": 16})  # fmt: skip
    with pytest.raises(OnyxError, match=match):
        _run_direct(args.pop("data"), args.pop("indices"), args.pop("scales"), args.pop("zp"), **args)


def test_bad_uint8_layouts_and_float_zero_points():
    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, (6, 8), dtype=np.uint8)
    scales = np.ones((6, 1), np.float32)
    with pytest.raises(OnyxError, match="uint8 data needs gather_axis 0"):
        _run_direct(data, np.array([0]), np.ones((1, 8), np.float32), gather_axis=1, quantize_axis=0,
                    block_size=16)  # fmt: skip
    with pytest.raises(OnyxError, match="bits must be 2, 4 or 8"):
        _run_direct(data, np.array([0]), scales, bits=3, block_size=16)
    f8 = rng.standard_normal((6, 16)).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(OnyxError, match="zero_points must not be given"):
        _run_direct(f8, np.array([0]), scales, f8[:, :1], block_size=16)


def test_bad_block_size_fails_at_session_run_with_onyx_error():
    rng = np.random.default_rng(4)
    data, scales, _ = _table(rng, (8, 64), 1, 16, "int4", False)
    model = _model(data, scales, None, np.int64, block_size=48)
    with pytest.raises(OnyxError, match="block_size"):
        onyx.InferenceSession(model).run(None, {"indices": np.array([0], np.int64)})
