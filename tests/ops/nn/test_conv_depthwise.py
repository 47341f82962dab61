"""Depthwise convolution models: the compiled loop (onyx.kernels._conv) gives what the numpy path
gives, and both give what onnxruntime gives, over strides, dilations, asymmetric pads, channel
multipliers, batches, float32/float64, and the activations the loop applies itself (FusedConv
Relu/Clip/LeakyRelu) or leaves to numpy (Sigmoid)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.kernels.test_conv import DW_CASES
from tests.ops.nn._conv_util import run_both

CASES = DW_CASES[:6]  # (batch, channels, mult, H, W, kernel, stride, dilation, pads)
ACTS = [("", []), ("Relu", []), ("Clip", [0.0, 6.0]), ("LeakyRelu", [0.1]), ("Sigmoid", [])]


def _model(case, act, dtype, bias=True):
    n, c, mult, h, w, k, s, d, pads = case
    rng = np.random.default_rng(hash((case, act[0])) % 2**32)
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    weight = rng.normal(size=(c * mult, 1) + k).astype(dtype)
    inits = [numpy_helper.from_array(weight, "W")]
    names = ["X", "W"]
    if bias:
        inits.append(numpy_helper.from_array(rng.normal(size=c * mult).astype(dtype), "B"))
        names.append("B")
    attrs = dict(group=c, strides=list(s), dilations=list(d), pads=list(pads), kernel_shape=list(k))
    if act[0]:
        if act[1]:
            attrs["activation_params"] = act[1]
        node = helper.make_node("FusedConv", names, ["Y"], domain="com.microsoft", activation=act[0], **attrs)
    else:
        node = helper.make_node("Conv", names, ["Y"], **attrs)
    g = helper.make_graph(
        [node],
        "dw",
        [helper.make_tensor_value_info("X", elem, [n, c, h, w])],
        [helper.make_tensor_value_info("Y", elem, None)],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    x = rng.normal(size=(n, c, h, w)).astype(dtype)
    x.flat[:: max(1, x.size // 5)] = np.nan  # NaNs pass through every activation the same way
    return m.SerializeToString(), {"X": x}


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("act", ACTS, ids=[a[0] or "none" for a in ACTS])
def test_depthwise_compiled_matches_numpy_and_onnxruntime(case, act, monkeypatch):
    model, feeds = _model(case, act, np.float32)
    fast, plain = run_both(model, feeds, monkeypatch)
    np.testing.assert_allclose(fast[0], plain[0], rtol=1e-5, atol=1e-5)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(fast[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bias", [True, False])
def test_depthwise_compiled_float64(bias, monkeypatch):
    model, feeds = _model(CASES[2], ("Clip", [-0.5, 0.5]), np.float64, bias=bias)
    fast, plain = run_both(model, feeds, monkeypatch)
    assert fast[0].dtype == np.float64
    np.testing.assert_allclose(fast[0], plain[0], rtol=1e-12, atol=1e-12)
