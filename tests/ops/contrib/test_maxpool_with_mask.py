"""com.microsoft MaxpoolWithMask against onnxruntime (1-D, 2-D, 3-D; masks shared by every channel,
one per channel, one per batch entry)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)
SHAPES = [(2, 3, 6, 7), (1, 2, 9), (1, 2, 4, 5, 6)]


def _attrs(nd):
    return [
        dict(kernel_shape=[2] * nd),
        dict(kernel_shape=[3] * nd, pads=[1] * (2 * nd), strides=[2] * nd),
        dict(kernel_shape=[2] * nd, auto_pad="SAME_UPPER"),
    ]


CASES = [
    (shape, mask_shape, attrs)
    for shape in SHAPES
    for mask_shape in ((1, 1) + shape[2:], shape, (2, 1) + shape[2:])
    for attrs in _attrs(len(shape) - 2)
]


@pytest.mark.parametrize("shape,mask_shape,attrs", CASES)
def test_against_onnxruntime(shape, mask_shape, attrs):
    x = R.standard_normal(shape).astype(np.float32)
    m = (R.random(mask_shape) > 0.3).astype(np.int32)
    assert_equal_outputs(*both("MaxpoolWithMask", [x, m], [T.FLOAT], **attrs))


def test_bad_inputs():
    x = np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(OnyxError, match="spatial dims"):
        run_onyx("MaxpoolWithMask", [x, np.ones((1, 1, 3, 4), np.int32)], [T.FLOAT], kernel_shape=[2, 2])
    with pytest.raises(OnyxError, match="int32"):
        run_onyx("MaxpoolWithMask", [x, np.ones((1, 1, 4, 4), np.int64)], [T.FLOAT], kernel_shape=[2, 2])
