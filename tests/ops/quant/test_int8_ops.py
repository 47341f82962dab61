"""QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger on the exact integer kernels, against
onnxruntime: integer outputs equal exactly (onnxruntime's CPU kernels are exact here: the requantization
is float32 scale times the int32 sum, rounded half to even)."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import OnyxError
from tests.ops.quant._qhelpers import both, one_node, rand, rng, run_onyx

U8, S8 = np.uint8, np.int8
CONVS = [  # x shape, w shape, attributes
    ((1, 8, 9, 9), (16, 8, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 8, 9, 9), (16, 8, 3, 3), {"pads": [1, 0, 1, 2], "strides": [2, 1]}),
    ((1, 6, 10, 7), (9, 2, 3, 3), {"group": 3, "dilations": [2, 1]}),
    ((1, 16, 5, 5), (7, 16, 1, 1), {}),
    ((1, 16, 6, 6), (7, 16, 1, 1), {"strides": [2, 2]}),
    ((1, 3, 17, 17), (5, 3, 7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),
    # strided, packed from the input's stride phases: odd sizes, uneven pads, groups, dilations
    (
        (2, 6, 11, 10),
        (6, 2, 3, 3),
        {"group": 3, "pads": [1, 2, 0, 1], "strides": [3, 2], "dilations": [2, 1]},
    ),
    ((1, 4, 9, 8), (5, 4, 1, 1), {"pads": [1, 0, 0, 1], "strides": [2, 3]}),
    # channels in fours (read in place, every tap a shift): groups, strides, dilations, uneven pads, a padded
    # width whose rows cross the GEMM's 32-column panels
    (
        (2, 8, 11, 10),
        (8, 4, 3, 3),
        {"group": 2, "pads": [1, 2, 0, 1], "strides": [3, 2], "dilations": [2, 1]},
    ),
    ((1, 4, 13, 12), (6, 4, 5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),
    ((1, 12, 20, 23), (40, 12, 3, 3), {"pads": [1, 1, 1, 1]}),
    # small images: output positions as the GEMM's rows (int8 weights), plain and strided with groups
    ((2, 8, 7, 6), (32, 8, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 16, 13, 13), (64, 8, 3, 3), {"group": 2, "pads": [1, 0, 1, 1], "strides": [2, 2]}),
    ((1, 4, 12), (6, 4, 3), {"pads": [1, 1]}),  # 1-D: numpy's im2col
    ((1, 2, 4, 5, 5), (3, 2, 2, 3, 3), {"auto_pad": "SAME_UPPER"}),  # 3-D
]


@pytest.mark.parametrize("xdt,wdt", [(U8, S8), (U8, U8), (S8, S8)])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("xs,ws,attrs", CONVS)
def test_qlinear_conv_equals_onnxruntime(xdt, wdt, per_channel, xs, ws, attrs):
    m = ws[0]
    w_scale = (rng.random(m) * 0.01 + 0.001).astype(np.float32) if per_channel else np.float32(0.004)
    if per_channel:
        w_zp = np.zeros(m, wdt) if wdt == S8 else rand((m,), wdt)
    else:
        w_zp = rand((), wdt)
    inits = {
        "xs": np.float32(0.02),
        "xz": rand((), xdt),
        "w": rand(ws, wdt),
        "ws": w_scale,
        "wz": w_zp,
        "ys": np.float32(0.25),
        "yz": rand((), xdt),
        "B": rng.integers(-3000, 3000, m).astype(np.int32),
    }
    feeds = {"x": rand(xs, xdt)}
    model = one_node(
        "QLinearConv", feeds, inits, ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"], xdt, **attrs
    )
    got, want = both(model, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("xdt,wdt", [(U8, S8), (U8, U8), (S8, S8), (S8, U8)])
@pytest.mark.parametrize("xs,ws,attrs", CONVS[:6])
def test_conv_integer_equals_onnxruntime(xdt, wdt, xs, ws, attrs):
    feeds = {"x": rand(xs, xdt)}
    inits = {"w": rand(ws, wdt), "xz": rand((), xdt), "wz": rand((), wdt)}
    model = one_node("ConvInteger", feeds, inits, ["x", "w", "xz", "wz"], np.int32, opset=17, **attrs)
    got, want = both(model, feeds)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("adt,bdt", [(U8, S8), (U8, U8), (S8, S8)])
@pytest.mark.parametrize(
    "a_shape,b_shape", [((3, 5, 37), (37, 19)), ((1, 300), (300, 64)), ((2, 4, 8), (2, 8, 3))]
)
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinear_matmul_equals_onnxruntime(adt, bdt, a_shape, b_shape, per_column):
    n = b_shape[-1]
    if per_column and len(b_shape) != 2:
        pytest.skip("per-column parameters: 2-D b only")
    bs = (rng.random(n) * 0.02 + 0.001).astype(np.float32) if per_column else np.float32(0.01)
    bz = (np.zeros(n, bdt) if bdt == S8 else rand((n,), bdt)) if per_column else rand((), bdt)
    inits = {
        "as": np.float32(0.02),
        "az": rand((), adt),
        "b": rand(b_shape, bdt),
        "bs": bs,
        "bz": bz,
        "ys": np.float32(1.7),
        "yz": rand((), adt),
    }
    feeds = {"a": rand(a_shape, adt)}
    model = one_node("QLinearMatMul", feeds, inits, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], adt)
    got, want = both(model, feeds)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("adt,bdt", [(U8, S8), (U8, U8), (S8, S8), (S8, U8)])
def test_matmul_integer_equals_onnxruntime(adt, bdt):
    feeds = {"a": rand((2, 7, 300), adt)}
    for bz in (rand((), bdt), rand((33,), bdt)):
        inits = {"b": rand((300, 33), bdt), "az": rand((), adt), "bz": bz}
        model = one_node("MatMulInteger", feeds, inits, ["a", "b", "az", "bz"], np.int32, opset=17)
        got, want = both(model, feeds)
        np.testing.assert_array_equal(got, want)


def test_matmul_integer_per_row_a_zero_point_matches_definition():
    a, b = rand((4, 6, 10), U8), rand((10, 5), S8)
    az = rand((6,), U8)
    model = one_node("MatMulInteger", {"a": a}, {"b": b, "az": az}, ["a", "b", "az"], np.int32, opset=17)
    want = (a.astype(np.int64) - az[:, None].astype(np.int64)) @ b.astype(np.int64)
    np.testing.assert_array_equal(run_onyx(model, {"a": a}), want)


def test_saturation_at_both_ends():
    """A product far outside the output range saturates to 0 / 255 (uint8) as onnxruntime does."""
    a = np.full((2, 64), 255, U8)
    a[1] = 0
    inits = {
        "as": np.float32(1.0),
        "az": np.uint8(0),
        "b": np.full((64, 4), 127, S8),
        "bs": np.float32(1.0),
        "bz": np.int8(0),
        "ys": np.float32(0.5),
        "yz": np.uint8(128),
    }
    model = one_node("QLinearMatMul", {"a": a}, inits, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], U8)
    got, want = both(model, {"a": a})
    np.testing.assert_array_equal(got, want)
    assert (got[0] == 255).all() and (got[1] == 128).all()


# -- bad inputs -------------------------------------------------------------------------------------


def _conv_inits(**over):
    base = {
        "xs": np.float32(0.02),
        "xz": np.uint8(3),
        "w": rand((4, 2, 3, 3), S8),
        "ws": np.float32(0.01),
        "wz": np.int8(0),
        "ys": np.float32(0.1),
        "yz": np.uint8(5),
    }
    base.update(over)
    return base


@pytest.mark.parametrize(
    "over,message",
    [
        ({"xz": np.int8(3)}, "x_zero_point is int8 but its input is uint8"),
        ({"ws": np.ones(3, np.float32)}, "w_scale of shape (3,)"),
        ({"wz": np.zeros(5, np.int8)}, "w_zero_point of shape (5,)"),
        ({"yz": np.zeros(2, np.uint8)}, "y_zero_point must hold one value"),
        ({"w": rand((4, 2, 3, 3), np.int16)}, "w must be uint8 or int8"),
        ({"xs": np.int32(1)}, "x_scale must be a float tensor"),
    ],
)
def test_qlinear_conv_bad_parameters(over, message):
    inits = _conv_inits(**over)
    feeds = {"x": rand((1, 2, 5, 5), U8)}
    model = one_node("QLinearConv", feeds, inits, ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], U8)
    with pytest.raises(OnyxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_onyx(model, feeds)


def test_qlinear_conv_bad_bias_and_shapes():
    feeds = {"x": rand((1, 2, 5, 5), U8)}
    inits = _conv_inits(B=np.zeros(4, np.float32))
    model = one_node("QLinearConv", feeds, inits, ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"], U8)
    with pytest.raises(OnyxError, match="B must be int32"):
        run_onyx(model, feeds)
    feeds = {"x": rand((1, 3, 5, 5), U8)}
    model = one_node("QLinearConv", feeds, _conv_inits(), ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], U8)
    with pytest.raises(OnyxError):
        run_onyx(model, feeds)


def test_matmul_integer_bad_inputs():
    feeds = {"a": rand((3, 4), U8)}
    model = one_node("MatMulInteger", feeds, {"b": rand((5, 2), S8)}, ["a", "b"], np.int32, opset=17)
    with pytest.raises(OnyxError, match="cannot be multiplied"):
        run_onyx(model, feeds)
    model = one_node(
        "MatMulInteger",
        feeds,
        {"b": rand((4, 2), S8), "az": np.int8(1)},
        ["a", "b", "az"],
        np.int32,
        opset=17,
    )
    with pytest.raises(OnyxError, match="a_zero_point is int8 but its input is uint8"):
        run_onyx(model, feeds)
    model = one_node(
        "MatMulInteger",
        feeds,
        {"b": rand((4, 2), S8), "az": np.zeros(5, U8)},
        ["a", "b", "az"],
        np.int32,
        opset=17,
    )
    with pytest.raises(OnyxError, match="a_zero_point of shape"):
        run_onyx(model, feeds)


def test_qlinear_matmul_bad_scale_shape():
    feeds = {"a": rand((3, 4), U8)}
    inits = {
        "as": np.float32(0.1),
        "az": np.uint8(0),
        "b": rand((4, 6), S8),
        "bs": np.ones(5, np.float32),
        "bz": np.int8(0),
        "ys": np.float32(1.0),
        "yz": np.uint8(0),
    }
    model = one_node("QLinearMatMul", feeds, inits, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], U8)
    with pytest.raises(OnyxError, match="b_scale of shape"):
        run_onyx(model, feeds)
