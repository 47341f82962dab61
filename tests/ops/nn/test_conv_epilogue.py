"""Dense convolution: the phase-plane GEMM path (kernels larger than 1x1 on maps wide enough) and the
im2col / 1x1 paths, finished by the compiled epilogue (``perf`` extra: bias, FusedConv's Z and its
activation in one pass) or by numpy; both give what onnxruntime gives, over strides, dilations,
asymmetric pads, groups, batches, 1-D/2-D/3-D, float32/float64, with and without Z and bias."""

from __future__ import annotations

import zlib

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import OnyxError
from tests.ops.nn._conv_util import run_both

CASES = [
    # (batch, C, M, spatial, kernel, stride, dilation, pads, group)
    (1, 8, 16, (30, 28), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),  # phase planes, stride 1
    (2, 3, 8, (32, 31), (7, 7), (2, 2), (1, 1), (3, 3, 3, 3), 1),  # planes, 4 phases (a CNN's stem)
    (1, 4, 6, (29, 30), (5, 3), (2, 1), (2, 1), (2, 0, 1, 3), 1),  # planes, asymmetric everything
    (1, 6, 8, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),  # small map: im2col
    (2, 8, 12, (20, 20), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4),  # grouped: im2col
    (1, 16, 24, (24, 24), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),  # 1x1: plain GEMM
    (1, 16, 24, (24, 24), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1),  # strided 1x1
    (2, 5, 7, (40,), (3,), (1,), (1,), (1, 1), 1),  # 1-D
    (1, 3, 4, (9, 10, 11), (3, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 1, 1, 1, 1), 1),  # 3-D
]
ACTS = [("", []), ("Relu", []), ("Clip", [0.0, 6.0]), ("LeakyRelu", [0.1]), ("Sigmoid", [])]


def _model(case, act, dtype, *, bias=True, with_z=False):
    n, c, m, sp, k, s, d, pads, group = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))  # the same X, W, B with or without Z
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    inits = [numpy_helper.from_array(rng.normal(size=(m, c // group) + k).astype(dtype), "W")]
    names = ["X", "W"]
    inputs = [helper.make_tensor_value_info("X", elem, [n, c, *sp])]
    feeds = {"X": rng.normal(size=(n, c) + sp).astype(dtype)}
    names.append("B" if bias else "")
    if bias:
        inits.append(numpy_helper.from_array(rng.normal(size=m).astype(dtype), "B"))
    attrs = dict(group=group, strides=list(s), dilations=list(d), pads=list(pads), kernel_shape=list(k))
    if with_z:
        out = tuple(
            (sp[i] + pads[i] + pads[i + len(sp)] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(sp))
        )
        names.append("Z")
        inputs.append(helper.make_tensor_value_info("Z", elem, [n, m, *out]))
        feeds["Z"] = rng.normal(size=(n, m) + out).astype(dtype)
    if act[0] or with_z:
        if act[1]:
            attrs["activation_params"] = act[1]
        node = helper.make_node("FusedConv", names, ["Y"], domain="com.microsoft", activation=act[0], **attrs)
    else:
        node = helper.make_node("Conv", names, ["Y"], **attrs)
    g = helper.make_graph([node], "conv", inputs, [helper.make_tensor_value_info("Y", elem, None)], inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(g, opset_imports=opsets)
    model.ir_version = 8
    return model.SerializeToString(), feeds


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("act", ACTS, ids=[a[0] or "none" for a in ACTS])
@pytest.mark.parametrize("with_z", [False, True], ids=["noZ", "Z"])
def test_conv_paths_match_numpy_and_onnxruntime(case, act, with_z, monkeypatch):
    model, feeds = _model(case, act, np.float32, with_z=with_z)
    fast, plain = run_both(model, feeds, monkeypatch)
    np.testing.assert_allclose(fast[0], plain[0], rtol=1e-5, atol=1e-5)
    if with_z and not act[0]:  # onnxruntime's FusedConv wants an activation: its Conv, then Z
        conv, conv_feeds = _model(case, ("", []), np.float32)
        want = (
            ort.InferenceSession(conv, providers=["CPUExecutionProvider"]).run(None, conv_feeds)[0]
            + feeds["Z"]
        )
    else:
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(fast[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [CASES[1], CASES[4], CASES[5]], ids=["planes", "im2col", "1x1"])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_paths_float64(case, bias, monkeypatch):
    model, feeds = _model(case, ("Clip", [-0.5, 0.5]), np.float64, bias=bias, with_z=True)
    fast, plain = run_both(model, feeds, monkeypatch)
    assert fast[0].dtype == np.float64
    np.testing.assert_allclose(fast[0], plain[0], rtol=1e-12, atol=1e-12)


def test_fused_conv_z_of_wrong_shape_is_rejected():
    model, feeds = _model(CASES[0], ("Relu", []), np.float32, with_z=True)
    feeds["Z"] = feeds["Z"][:, :, :-1]
    with pytest.raises(OnyxError, match="FusedConv|Z|shape|broadcast"):
        onyx.InferenceSession(model).run(None, feeds)
