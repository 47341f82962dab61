"""com.microsoft QLinearSoftmax, QLinearAveragePool, QLinearWhere and QAttention against onnxruntime:
the 8-bit outputs equal onnxruntime's exactly (onyx reproduces its float32 steps and lookup tables),
QAttention's float output within float32 rounding; plus a QOperator model from quantize_static."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import OnyxError
from tests.ops.quant._qhelpers import MS, both, one_node, rand, rng, run_onyx

U8, S8 = np.uint8, np.int8


def _model(op_type, feeds, inits, inputs, outputs, **attrs) -> bytes:
    """One com.microsoft node (attributes may be named ``opset``, which one_node takes for itself)."""
    node = helper.make_node(op_type, inputs, [name for name, _ in outputs], domain=MS, **attrs)
    g_in = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for k, v in feeds.items()
    ]
    g_out = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    inits_ = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()]
    graph = helper.make_graph([node], "g", g_in, g_out, inits_)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10).SerializeToString()


def _all(model: bytes, feeds: dict) -> tuple[list, list]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    return onyx.InferenceSession(model).run(None, feeds), want


def _softmax(x, xs, xz, ys, yz, **attrs) -> bytes:
    """QLinearSoftmax of ``x``; ``xz`` None: x_zero_point absent."""
    dt = helper.np_dtype_to_tensor_dtype(x.dtype)
    inits = {"xs": np.float32(xs), "ys": np.float32(ys), "yz": np.asarray(yz, x.dtype)}
    if xz is not None:
        inits["xz"] = np.asarray(xz, x.dtype)
    inputs = ["x", "xs", "xz" if xz is not None else "", "ys", "yz"]
    return _model("QLinearSoftmax", {"x": x}, inits, inputs, [("y", dt)], **attrs)


@pytest.mark.parametrize("dt,ys,yz", [(U8, 1 / 256, 0), (S8, 1 / 256, -128), (U8, 0.0037, 3), (S8, 0.01, 5)])
@pytest.mark.parametrize(
    "opset,axis,shape", [(13, -1, (3, 5, 40)), (13, 1, (3, 17, 4)), (12, 1, (2, 3, 20)), (13, 0, (6, 7))]
)
def test_qlinear_softmax_equals_onnxruntime(dt, ys, yz, opset, axis, shape):
    x = rand(shape, dt)
    model = _softmax(x, rng.random() * 0.2 + 0.01, rand((), dt), ys, yz, opset=opset, axis=axis)
    got, want = both(model, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_qlinear_softmax_long_rows_and_saturation():
    # a long row (the table's headroom depends on its length), and one certain value: 1.0 saturates
    x = rand((4, 1000), U8)
    got, want = both(_softmax(x, 0.05, 0, 1 / 256, 0, opset=13), {"x": x})
    np.testing.assert_array_equal(got, want)
    x = np.array([[-128] * 5 + [100]] * 3, S8)
    got, want = both(_softmax(x, 0.5, 0, 1 / 256, -128, opset=13), {"x": x})
    np.testing.assert_array_equal(got, want)
    assert (got[:, -1] == 127).all()


def test_qlinear_softmax_default_axis_and_absent_zero_point():
    # axis absent: -1 (the schema's default) even at opset 12, where it flattens nothing more
    x = rand((2, 3, 4), U8)
    got, want = both(_softmax(x, 0.1, None, 1 / 256, 0, opset=12), {"x": x})
    np.testing.assert_array_equal(got, want)


def test_qlinear_softmax_bad_inputs():
    x = rand((2, 4), U8)
    feeds = {"x": x}
    inits = {"xs": np.float32(0.1), "xz": np.int8(0), "ys": np.float32(1 / 256), "yz": np.uint8(0)}
    model = _model("QLinearSoftmax", feeds, inits, ["x", "xs", "xz", "ys", "yz"], [("y", TensorProto.UINT8)],
                   opset=13)  # fmt: skip
    with pytest.raises(OnyxError, match="x_zero_point is int8 but X is uint8"):
        run_onyx(model, feeds)
    inits = {"xs": np.ones(2, np.float32), "xz": np.uint8(0), "ys": np.float32(1 / 256), "yz": np.uint8(0)}
    model = _model("QLinearSoftmax", feeds, inits, ["x", "xs", "xz", "ys", "yz"], [("y", TensorProto.UINT8)],
                   opset=13)  # fmt: skip
    with pytest.raises(OnyxError, match="X_scale of shape"):
        run_onyx(model, feeds)
    model = _softmax(x, 0.1, 0, 1 / 256, 0, opset=13, axis=2)
    with pytest.raises(OnyxError, match="axis 2 is out of range"):
        run_onyx(model, feeds)


POOLS = [
    dict(kernel_shape=[3, 3]),
    dict(kernel_shape=[2, 3], strides=[2, 1], pads=[1, 1, 1, 0]),
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
    dict(kernel_shape=[3], strides=[2]),
    dict(kernel_shape=[2, 2], auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(kernel_shape=[3, 3], ceil_mode=1, strides=[2, 2]),
    dict(kernel_shape=[2, 2, 2], pads=[1, 0, 1, 0, 1, 1]),
]


@pytest.mark.parametrize("dt", [U8, S8])
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("attrs", POOLS)
def test_qlinear_average_pool_equals_onnxruntime(dt, channels_last, attrs):
    nd = len(attrs["kernel_shape"])
    spatial = (9, 8, 7)[:nd]
    shape = (2,) + spatial + (5,) if channels_last else (2, 5) + spatial
    feeds = {"x": rand(shape, dt)}
    inits = {"xs": np.float32(0.05), "xz": rand((), dt), "ys": np.float32(0.031), "yz": rand((), dt)}
    model = one_node("QLinearAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], dt, domain=MS,
                     channels_last=channels_last, **attrs)  # fmt: skip
    got, want = both(model, feeds)
    np.testing.assert_array_equal(got, want)


def _inferred_dims(model: bytes, output: int = 0) -> list:
    m = onyx.infer_shapes(onyx.load(model))
    return list(m.graph.outputs[output].type.shape.dims)


def test_shape_rules():
    feeds = {"x": rand((1, 9, 8, 4), U8)}
    inits = {"xs": np.float32(0.05), "xz": np.uint8(3), "ys": np.float32(0.03), "yz": np.uint8(1)}
    pool = dict(kernel_shape=[3, 2], strides=[2, 2])
    model = one_node("QLinearAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS,
                     channels_last=1, **pool)  # fmt: skip
    assert _inferred_dims(model) == [1, 4, 4, 4] and run_onyx(model, feeds).shape == (1, 4, 4, 4)
    model = one_node("QLinearAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS, **pool)
    assert _inferred_dims(model) == [1, 9, 3, 2]
    assert _inferred_dims(_softmax(rand((2, 3), U8), 0.1, 0, 1 / 256, 0, opset=13)) == [2, 3]
    model, _ = _q_attention(S8, False, "past")
    assert _inferred_dims(model) == [B, S, D]


def test_qlinear_average_pool_bad_inputs():
    feeds = {"x": rand((1, 2, 4, 4), U8)}
    inits = {"xs": np.float32(0.05), "xz": np.int8(0), "ys": np.float32(0.03), "yz": np.uint8(0)}
    model = one_node("QLinearAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS,
                     kernel_shape=[2, 2])  # fmt: skip
    with pytest.raises(OnyxError, match="x_zero_point is int8 but X is uint8"):
        run_onyx(model, feeds)
    inits = {"xs": np.float32(0.05), "xz": np.uint8(0), "ys": np.ones(3, np.float32), "yz": np.uint8(0)}
    model = one_node("QLinearAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS,
                     kernel_shape=[2, 2])  # fmt: skip
    with pytest.raises(OnyxError, match="y_scale of shape"):
        run_onyx(model, feeds)
    inits["ys"] = np.float32(0.03)
    model = one_node("QLinearAveragePool", feeds, inits, ["x", "xs", "xz", "ys", "yz"], U8, domain=MS,
                     kernel_shape=[2, 2, 2])  # fmt: skip
    with pytest.raises(OnyxError, match="kernel_shape"):
        run_onyx(model, feeds)


@pytest.mark.parametrize("dt", [U8, S8])
def test_qlinear_where_equals_onnxruntime(dt):
    feeds = {"c": rng.random((3, 1, 6)) > 0.5, "a": rand((4, 6), dt), "b": rand((3, 4, 1), dt)}
    inits = {
        "as": np.float32(0.05),
        "az": rand((), dt),
        "bs": np.float32(0.031),
        "bz": rand((), dt),
        "zs": np.float32(0.04),
        "zz": rand((), dt),
    }
    model = one_node("QLinearWhere", feeds, inits, ["c", "a", "as", "az", "b", "bs", "bz", "zs", "zz"], dt,
                     domain=MS)  # fmt: skip
    got, want = both(model, feeds)
    assert got.shape == (3, 4, 6)
    np.testing.assert_array_equal(got, want)


def test_qlinear_where_bad_inputs():
    feeds = {"c": np.ones(3, bool), "a": rand((3,), U8), "b": rand((3,), S8)}
    inits = {"as": np.float32(1), "az": np.uint8(0), "bs": np.float32(1), "bz": np.int8(0),
             "zs": np.float32(1), "zz": np.uint8(0)}  # fmt: skip
    model = one_node("QLinearWhere", feeds, inits, ["c", "a", "as", "az", "b", "bs", "bz", "zs", "zz"], U8,
                     domain=MS)  # fmt: skip
    with pytest.raises(OnyxError, match="Y is int8 but X is uint8"):
        run_onyx(model, feeds)


B, S, D, N = 2, 5, 16, 4


def _q_attention(wdt, per_column, case):
    feeds = {"x": rand((B, S, D), U8)}
    inits = {
        "w": rand((D, 3 * D), wdt),
        "b": rng.standard_normal(3 * D).astype(np.float32),
        "xs": np.float32(0.02),
        "ws": (rng.random(3 * D) * 0.02 + 0.001).astype(np.float32) if per_column else np.float32(0.01),
        "xz": rand((), U8),
    }
    if wdt == S8:
        inits["wz"] = np.zeros(3 * D, S8) if per_column else rand((), S8)
    else:
        inits["wz"] = rand((3 * D,), U8) if per_column else rand((), U8)
    mask, past, attrs, outputs = "", "", {"num_heads": N}, [("y", TensorProto.FLOAT)]
    if case == "mask1d":
        feeds["m"], mask = np.array([3, 5], np.int32), "m"
    if case == "mask2d":
        m = (rng.random((B, S)) > 0.3).astype(np.int32)
        m[:, 0] = 1
        feeds["m"], mask = m, "m"
    if case == "unidirectional":
        attrs["unidirectional"] = 1
    if case == "past":
        feeds["p"], past = rng.standard_normal((2, B, N, 3, D // N)).astype(np.float32), "p"
        outputs.append(("present", TensorProto.FLOAT))
    inputs = ["x", "w", "b", "xs", "ws", mask, "xz", "wz", past]
    return _model("QAttention", feeds, inits, inputs, outputs, **attrs), feeds


@pytest.mark.parametrize("wdt", [S8, U8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("case", ["plain", "mask1d", "mask2d", "unidirectional", "past"])
def test_q_attention_close_to_onnxruntime(wdt, per_column, case):
    model, feeds = _q_attention(wdt, per_column, case)
    got, want = _all(model, feeds)
    assert [g.shape for g in got] == [w.shape for w in want]
    # the projection is exact (integers); the float32 attention sums up to T + H terms in another order,
    # each a softmax weight (<= 1) times a value: bound by (T + H) * eps * max|V| and a few ulps of the scores
    vmax = float(np.max(np.abs(want[-1]))) if case == "past" else 8.0
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=16 * np.finfo(np.float32).eps * vmax)
    if case == "past":
        np.testing.assert_array_equal(got[1], want[1])  # K and V: exact products, same rescaling


def test_q_attention_bad_inputs():
    feeds = {"x": rand((B, S, D), U8)}
    inits = {"w": rand((D + 1, 3 * D), S8), "b": np.zeros(3 * D, np.float32), "xs": np.float32(0.02),
             "ws": np.float32(0.01)}  # fmt: skip
    outputs = [("y", TensorProto.FLOAT)]
    model = _model("QAttention", feeds, inits, ["x", "w", "b", "xs", "ws"], outputs, num_heads=N)
    with pytest.raises(OnyxError, match="do not fit"):
        run_onyx(model, feeds)
    inits = {"w": rand((D, 3 * D), S8), "b": np.zeros(3 * D, np.float32), "xs": np.float32(0.02),
             "ws": np.ones(5, np.float32), "xz": np.uint8(0), "wz": np.int8(0)}  # fmt: skip
    inputs = ["x", "w", "b", "xs", "ws", "", "xz", "wz"]
    model = _model("QAttention", feeds, inits, inputs, [("y", TensorProto.FLOAT)], num_heads=N)
    with pytest.raises(OnyxError, match="weight_scale of shape"):
        run_onyx(model, feeds)
    inits.update(ws=np.float32(0.01), xz=np.int8(0))
    model = _model("QAttention", feeds, inits, inputs, [("y", TensorProto.FLOAT)], num_heads=N)
    with pytest.raises(OnyxError, match="input_zero_point is int8 but its input is uint8"):
        run_onyx(model, feeds)
    inits.update(xz=np.uint8(0))
    model = _model("QAttention", feeds, inits, inputs, [("y", TensorProto.FLOAT)], num_heads=3)
    with pytest.raises(OnyxError, match="not a multiple of num_heads"):
        run_onyx(model, feeds)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.onnx.export's TorchScript path
def test_quantize_static_qoperator_model_runs(tmp_path):
    """A torch model with AveragePool and Softmax, quantized by onnxruntime in QOperator format, uses
    QLinearAveragePool and QLinearSoftmax: onyx runs it and gives onnxruntime's outputs."""
    torch = pytest.importorskip("torch")
    quant = pytest.importorskip("onnxruntime.quantization")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.pool = torch.nn.AvgPool2d(2)
            self.fc = torch.nn.Linear(8 * 4 * 4, 10)

        def forward(self, x):
            return torch.softmax(self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1)), dim=-1)

    torch.manual_seed(0)
    buf = io.BytesIO()
    torch.onnx.export(Net().eval(), (torch.randn(1, 3, 8, 8),), buf, input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)  # fmt: skip
    (tmp_path / "f.onnx").write_bytes(buf.getvalue())
    calib = iter([{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(8)])

    class Reader(quant.CalibrationDataReader):
        def get_next(self):
            return next(calib, None)

    quant.quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(),
                          quant_format=quant.QuantFormat.QOperator, activation_type=quant.QuantType.QUInt8,
                          weight_type=quant.QuantType.QInt8)  # fmt: skip
    data = (tmp_path / "q.onnx").read_bytes()
    import onnx  # noqa: PLC0415

    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert {"QLinearAveragePool", "QLinearSoftmax"} <= ops
    for _ in range(3):
        x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
        want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        got = onyx.InferenceSession(data).run(None, {"x": x})[0]
        # the quantized steps reproduce onnxruntime's; allow at most one step of the softmax's output
        # quantization (scale 1/256) should a float32 rounding ever fall the other way
        np.testing.assert_allclose(got, want, rtol=0, atol=1 / 256 + 1e-7)


def test_quantize_dynamic_attention_becomes_q_attention(tmp_path):
    """onnxruntime's quantize_dynamic turns com.microsoft Attention into DynamicQuantizeLinear + QAttention:
    onyx runs the result and agrees with onnxruntime within float32 rounding."""
    quant = pytest.importorskip("onnxruntime.quantization")
    import onnx  # noqa: PLC0415

    d, t = 32, 7
    w = (rng.standard_normal((d, 3 * d)) * 0.2).astype(np.float32)
    b = rng.standard_normal(3 * d).astype(np.float32)
    node = helper.make_node("Attention", ["x", "w", "b"], ["y"], domain=MS, num_heads=4)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "S", d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets, ir_version=9), str(tmp_path / "f.onnx"))
    int8 = quant.QuantType.QInt8
    quant.quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), weight_type=int8)
    data = (tmp_path / "q.onnx").read_bytes()
    assert "QAttention" in {n.op_type for n in onnx.load_from_string(data).graph.node}
    x = rng.standard_normal((1, t, d)).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(data).run(None, {"x": x})[0]
    # same integer projection; the float32 attention sums T scores and T weighted values in another order
    vmax = float(np.max(np.abs(x[0] @ w[:, 2 * d :] + b[2 * d :])))
    np.testing.assert_allclose(got, want, rtol=0, atol=(t + d) * 4 * np.finfo(np.float32).eps * vmax)
