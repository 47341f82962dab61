"""com.microsoft NhwcMaxPool (int8, uint8) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)


@pytest.mark.parametrize(
    "attrs",
    [
        dict(kernel_shape=[2, 2]),
        dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        dict(kernel_shape=[2, 2], ceil_mode=1, strides=[2, 2]),
        dict(kernel_shape=[2, 2], dilations=[2, 2]),
        dict(kernel_shape=[3, 2], auto_pad="SAME_UPPER"),
    ],
)
@pytest.mark.parametrize("dtype,elem", [(np.int8, T.INT8), (np.uint8, T.UINT8)])
def test_against_onnxruntime(attrs, dtype, elem):
    info = np.iinfo(dtype)
    x = R.integers(info.min, info.max, (2, 5, 6, 3)).astype(dtype)
    assert_equal_outputs(*both("NhwcMaxPool", [x], [elem], **attrs))


def test_refuses_float():
    with pytest.raises(OnyxError, match="int8 or uint8"):
        run_onyx("NhwcMaxPool", [np.zeros((1, 4, 4, 2), np.float32)], [T.FLOAT], kernel_shape=[2, 2])
