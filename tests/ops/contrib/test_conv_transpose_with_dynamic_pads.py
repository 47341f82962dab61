"""com.microsoft ConvTransposeWithDynamicPads against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import both, run_onyx

R = np.random.default_rng(0)


def f(*shape):
    return R.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("pads", [[1, 1, 1, 1], [0, 1, 2, 0], [0, 0, 0, 0]])
@pytest.mark.parametrize(
    "attrs", [{}, dict(strides=[2, 2]), dict(strides=[2, 1], output_padding=[1, 0], dilations=[1, 2])]
)
@pytest.mark.parametrize("bias", [True, False])
def test_against_onnxruntime(pads, attrs, bias):
    x, w = f(2, 4, 5, 5), f(4, 3, 3, 3)
    ins = [x, w, np.array(pads, np.int64), f(3) if bias else None]
    (got,), (want,) = both("ConvTransposeWithDynamicPads", ins, [T.FLOAT], **attrs)
    assert got.shape == want.shape and got.dtype == want.dtype
    # each output sums at most C_in * kh * kw products
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=4 * 9 * 4 * np.finfo(np.float32).eps * 10)


def test_groups():
    ins = [f(2, 4, 5, 5), f(4, 3, 3, 3), np.array([1, 1, 1, 1], np.int64)]
    (got,), (want,) = both("ConvTransposeWithDynamicPads", ins, [T.FLOAT], group=2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_pads_are_required_and_checked():
    with pytest.raises(OnyxError, match="required"):
        run_onyx("ConvTransposeWithDynamicPads", [f(1, 4, 5, 5), f(4, 3, 3, 3)], [T.FLOAT])
    with pytest.raises(OnyxError, match="two per axis"):
        run_onyx(
            "ConvTransposeWithDynamicPads", [f(1, 4, 5, 5), f(4, 3, 3, 3), np.zeros(3, np.int64)], [T.FLOAT]
        )
