"""com.microsoft quantized kernels (DynamicQuantizeMatMul, MatMulIntegerToFloat, QGemm, QLinearAdd,
QLinearMul, QLinearSigmoid, QLinearLeakyRelu) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import OnyxError
from tests.ops.quant._qhelpers import MS, both, one_node, rand, rng, run_onyx

U8, S8 = np.uint8, np.int8


def _bound(got, want, terms):
    """float32 results computed in another order: |diff| <= a few ulps of the largest term."""
    np.testing.assert_allclose(
        got, want, rtol=0, atol=4 * np.finfo(np.float32).eps * float(np.max(np.abs(terms)))
    )


@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bdt", [S8, U8])
def test_dynamic_quantize_matmul(per_column, bdt):
    n = 48
    bs = (rng.random(n) * 0.01).astype(np.float32) if per_column else np.float32(0.01)
    bz = (np.zeros(n, bdt) if bdt == S8 else rand((n,), bdt)) if per_column else rand((), bdt)
    feeds = {"A": rng.standard_normal((2, 5, 64)).astype(np.float32)}
    inits = {"B": rand((64, n), bdt), "bs": bs, "bz": bz, "bias": rng.standard_normal(n).astype(np.float32)}
    model = one_node(
        "DynamicQuantizeMatMul", feeds, inits, ["A", "B", "bs", "bz", "bias"], np.float32, domain=MS
    )
    got, want = both(model, feeds)
    _bound(got, want, want)


@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("adt,bdt", [(U8, S8), (U8, U8), (S8, S8)])
def test_matmul_integer_to_float(per_column, adt, bdt):
    n = 40
    bs = (rng.random(n) * 0.01).astype(np.float32) if per_column else np.float32(0.01)
    bz = np.zeros(n, bdt) if per_column else rand((), bdt)
    feeds = {"A": rand((3, 7, 50), adt)}
    inits = {
        "B": rand((50, n), bdt),
        "as": np.float32(0.03),
        "bs": bs,
        "az": rand((), adt),
        "bz": bz,
        "bias": rng.standard_normal(n).astype(np.float32),
    }
    model = one_node(
        "MatMulIntegerToFloat",
        feeds,
        inits,
        ["A", "B", "as", "bs", "az", "bz", "bias"],
        np.float32,
        domain=MS,
    )
    got, want = both(model, feeds)
    _bound(got, want, want)


@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("quantized_out", [False, True])
def test_qgemm(per_column, quantized_out):
    a = rand((6, 40), U8)
    bs = (rng.random(24) * 0.01).astype(np.float32) if per_column else np.float32(0.01)
    inits = {
        "as": np.float32(0.02),
        "az": np.uint8(100),
        "B": rand((24, 40), S8),
        "bs": bs,
        "bz": np.zeros(24 if per_column else (), S8),
        "C": rng.integers(-500, 500, 24).astype(np.int32),
    }
    names = ["A", "as", "az", "B", "bs", "bz", "C"]
    if quantized_out:
        inits.update(ys=np.float32(0.7), yz=np.uint8(120))
        names += ["ys", "yz"]
    model = one_node(
        "QGemm", {"A": a}, inits, names, U8 if quantized_out else np.float32, domain=MS, transB=1
    )
    got, want = both(model, {"A": a})
    if quantized_out:
        np.testing.assert_array_equal(got, want)
    else:
        _bound(got, want, want)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dt", [U8, S8])
def test_qlinear_binary_within_one_step(op, dt):
    """onnxruntime's MLAS kernels use fixed-point ratios for Add: a few results differ by one step."""
    feeds = {"a": rand((4, 1, 30), dt), "b": rand((5, 30), dt)}
    inits = {
        "as": np.float32(0.02),
        "az": rand((), dt),
        "bs": np.float32(0.013),
        "bz": rand((), dt),
        "cs": np.float32(0.05 if op == "QLinearAdd" else 0.9),
        "cz": rand((), dt),
    }
    model = one_node(op, feeds, inits, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], dt, domain=MS)
    got, want = both(model, feeds)
    diff = np.abs(got.astype(np.int32) - want)
    assert got.shape == want.shape == (4, 5, 30)
    assert diff.max() <= 1 and np.mean(diff > 0) < 0.02


@pytest.mark.parametrize("op,attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.1})])
@pytest.mark.parametrize("dt", [U8, S8])
def test_qlinear_lookup_ops_equal_onnxruntime(op, attrs, dt):
    info = np.iinfo(dt)
    feeds = {"x": np.arange(info.min, info.max + 1).astype(dt)}
    inits = {
        "xs": np.float32(0.05),
        "xz": rand((), dt),
        "ys": np.float32(0.01 if "Sig" in op else 0.04),
        "yz": rand((), dt),
    }
    model = one_node(op, feeds, inits, ["x", "xs", "xz", "ys", "yz"], dt, domain=MS, **attrs)
    got, want = both(model, feeds)
    np.testing.assert_array_equal(got, want)


# -- bad inputs -------------------------------------------------------------------------------------


def test_dynamic_quantize_matmul_bad_inputs():
    feeds = {"A": rng.standard_normal((2, 8)).astype(np.float32)}
    model = one_node(
        "DynamicQuantizeMatMul",
        feeds,
        {"B": rand((8, 4), S8), "bs": np.ones(3, np.float32)},
        ["A", "B", "bs"],
        np.float32,
        domain=MS,
    )
    with pytest.raises(OnyxError, match="b_scale of shape"):
        run_onyx(model, feeds)
    model = one_node(
        "DynamicQuantizeMatMul",
        feeds,
        {"B": rand((8, 4), S8), "bs": np.float32(1), "bz": np.uint8(0)},
        ["A", "B", "bs", "bz"],
        np.float32,
        domain=MS,
    )
    with pytest.raises(OnyxError, match="b_zero_point is uint8 but its input is int8"):
        run_onyx(model, feeds)
    model = one_node(
        "DynamicQuantizeMatMul",
        feeds,
        {"B": rand((8, 4), S8), "bs": np.float32(1), "bias": np.ones(5, np.float32)},
        ["A", "B", "bs", "", "bias"],
        np.float32,
        domain=MS,
    )
    with pytest.raises(OnyxError, match="bias must be float32 of shape"):
        run_onyx(model, feeds)


def test_qlinear_add_type_mismatch():
    feeds = {"a": rand((3,), U8), "b": rand((3,), S8)}
    inits = {
        "as": np.float32(1),
        "az": np.uint8(0),
        "bs": np.float32(1),
        "bz": np.int8(0),
        "cs": np.float32(1),
        "cz": np.uint8(0),
    }
    model = one_node(
        "QLinearAdd", feeds, inits, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], U8, domain=MS
    )
    with pytest.raises(OnyxError, match="A is uint8 but B is int8"):
        run_onyx(model, feeds)


def test_qgemm_bad_c():
    a = rand((2, 4), U8)
    inits = {
        "as": np.float32(1),
        "az": np.uint8(0),
        "B": rand((4, 3), S8),
        "bs": np.float32(1),
        "bz": np.int8(0),
        "C": np.zeros(3, np.float32),
    }
    model = one_node("QGemm", {"A": a}, inits, ["A", "as", "az", "B", "bs", "bz", "C"], np.float32, domain=MS)
    with pytest.raises(OnyxError, match="C must be int32"):
        run_onyx(model, {"A": a})


@pytest.mark.parametrize("dt", [U8, S8])
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("shape", [(2, 5, 7, 7), (1, 3, 4, 6, 5), (1, 8, 1, 1)])
def test_qlinear_global_average_pool_equals_onnxruntime(dt, channels_last, shape):
    feeds = {"x": rand(shape, dt)}
    inits = {"xs": np.float32(0.05), "xz": rand((), dt), "ys": np.float32(0.013), "yz": rand((), dt)}
    model = one_node(
        "QLinearGlobalAveragePool",
        feeds,
        inits,
        ["x", "xs", "xz", "ys", "yz"],
        dt,
        domain=MS,
        channels_last=channels_last,
    )
    got, want = both(model, feeds)
    np.testing.assert_array_equal(got, want)


def test_qlinear_global_average_pool_bad_inputs():
    feeds = {"x": rand((1, 2), U8)}
    inits = {"xs": np.float32(0.05), "xz": np.uint8(0), "ys": np.float32(0.1), "yz": np.uint8(0)}
    model = one_node("QLinearGlobalAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS)
    with pytest.raises(OnyxError, match="rank >= 3"):
        run_onyx(model, feeds)
    inits["yz"] = np.int8(0)
    feeds = {"x": rand((1, 2, 3, 3), U8)}
    model = one_node("QLinearGlobalAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS)
    with pytest.raises(OnyxError, match="y_zero_point is int8 but X is uint8"):
        run_onyx(model, feeds)


def _concat_model(dt, inits):
    import onnx

    tp = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    names = ["ys", "yz", "a", "as", "az", "b", "bs", "bz", "c", "cs", "cz"]
    node = onnx.helper.make_node("QLinearConcat", names, ["y"], domain=MS, axis=1)
    shapes = {"a": (2, 3, 4), "b": (2, 5, 4), "c": (2, 1, 4)}
    graph = onnx.helper.make_graph(
        [node],
        "g",
        [onnx.helper.make_tensor_value_info(n, tp, s) for n, s in shapes.items()],
        [onnx.helper.make_tensor_value_info("y", tp, None)],
        [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    opsets = [onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid(MS, 1)]
    model = onnx.helper.make_model(graph, opset_imports=opsets, ir_version=9).SerializeToString()
    return model, {n: rand(s, dt) for n, s in shapes.items()}


@pytest.mark.parametrize("dt", [U8, S8])
def test_qlinear_concat_equals_onnxruntime(dt):
    yz = rand((), dt)
    inits = {
        "ys": np.float32(0.05),
        "yz": yz,
        "as": np.float32(0.05),
        "az": yz,
        "bs": np.float32(0.013),
        "bz": rand((), dt),
        "cs": np.float32(0.2),
        "cz": rand((), dt),
    }
    model, feeds = _concat_model(dt, inits)
    got, want = both(model, feeds)
    assert got.shape == (2, 9, 4)
    np.testing.assert_array_equal(got, want)


def test_qlinear_concat_bad_inputs():
    inits = {
        "ys": np.float32(0.05),
        "yz": np.uint8(0),
        "as": np.float32(0.05),
        "az": np.uint8(0),
        "bs": np.float32(0.013),
        "bz": np.int8(0),
        "cs": np.float32(0.2),
        "cz": np.uint8(0),
    }
    model, feeds = _concat_model(U8, inits)
    with pytest.raises(OnyxError, match="is int8 but input 1 is uint8"):
        run_onyx(model, feeds)
