"""ONNX's experimental ops onnxruntime keeps as contrib kernels in the default domain below opset 10
(ImageScaler, Crop, Affine, ScaledTanh, ParametricSoftplus, Scale), against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from onyx.errors import OnyxError
from tests.ops.contrib._single import both, run_onyx

R = np.random.default_rng(0)
X = (R.standard_normal((2, 3, 5, 6)) * 4).astype(np.float32)

CASES = [
    ("ImageScaler", dict(scale=2.0, bias=[1.0, 2.0, -3.0])),
    ("ImageScaler", dict(bias=[0.5, 0.0, 0.0])),
    ("Crop", dict(border=[1, 2, 1, 1])),
    ("Crop", dict(border=[0, 0, 0, 0])),
    ("Crop", dict(border=[1, 2, 0, 0], scale=[2, 3])),
    ("Affine", dict(alpha=2.0, beta=0.5)),
    ("Affine", {}),
    ("ScaledTanh", dict(alpha=2.0, beta=0.5)),
    ("ParametricSoftplus", dict(alpha=2.0, beta=0.5)),
    ("ParametricSoftplus", dict(alpha=1.0, beta=30.0)),  # exp(beta x) overflows float32
    ("Scale", dict(scale=3.0)),
    ("Scale", {}),
]


@pytest.mark.parametrize("op_type,attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("opset", [1, 9])
def test_against_onnxruntime(op_type, attrs, opset):
    (got,), (want,) = both(op_type, [X], [TensorProto.FLOAT], domain="", opset=opset, **attrs)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op_type,attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_double_agrees_with_float(op_type, attrs):
    # onnxruntime registers these for float only; onyx also runs double (and float16) inputs
    (got,) = run_onyx(op_type, [X.astype(np.float64)], [TensorProto.DOUBLE], domain="", opset=9, **attrs)
    (want,) = run_onyx(op_type, [X], [TensorProto.FLOAT], domain="", opset=9, **attrs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gone_from_opset_10():
    with pytest.raises(OnyxError, match="ImageScaler"):
        run_onyx("ImageScaler", [X], [TensorProto.FLOAT], domain="", opset=10, bias=[0.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "op_type,x,attrs,match",
    [
        ("ImageScaler", X, dict(bias=[1.0]), "bias has 1 values for 3 channels"),
        ("ImageScaler", X[0], dict(bias=[1.0] * 5), r"\[N, C, H, W\]"),
        ("Crop", X, dict(border=[1, 2, 3]), "4 values"),
        ("Crop", X, dict(border=[4, 0, 4, 0]), "do not fit"),
        ("Crop", X, dict(border=[0, 0, 0, 0], scale=[9, 1]), "do not fit"),
        ("Crop", X, dict(border=[0, 0, 0, 0], scale=[1]), "2 values"),
    ],
)
def test_bad_inputs(op_type, x, attrs, match):
    with pytest.raises(OnyxError, match=match):
        run_onyx(op_type, [x], [TensorProto.FLOAT], domain="", opset=9, **attrs)
