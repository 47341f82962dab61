"""com.microsoft DynamicTimeWarping against onnxruntime (random costs and ties)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (1, 6), (6, 1), (30, 80), (1, 4, 3)])
def test_against_onnxruntime(shape):
    assert_equal_outputs(*both("DynamicTimeWarping", [R.random(shape).astype(np.float32)], [T.INT32]))


@pytest.mark.parametrize(
    "costs", [np.zeros((4, 5), np.float32), R.integers(0, 3, (10, 12)).astype(np.float32)]
)
def test_ties(costs):
    assert_equal_outputs(*both("DynamicTimeWarping", [costs], [T.INT32]))


def test_bad_inputs():
    with pytest.raises(OnyxError, match=r"\[M, N\]"):
        run_onyx("DynamicTimeWarping", [np.zeros((2, 2, 2), np.float32)], [T.INT32])
    with pytest.raises(OnyxError, match="float"):
        run_onyx("DynamicTimeWarping", [np.zeros((2, 2))], [T.INT32])
