"""com.microsoft UnfoldTensor against onnxruntime (and torch's Tensor.unfold)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)
X = R.standard_normal((3, 7, 4)).astype(np.float32)


@pytest.mark.parametrize("dim,size,step", [(-1, 2, 1), (1, 3, 2), (0, 3, 1), (1, 7, 1), (1, 2, 5), (2, 4, 3)])
def test_against_onnxruntime(dim, size, step):
    assert_equal_outputs(*both("UnfoldTensor", [X], [T.FLOAT], dim=dim, size=size, step=step))


def test_like_torch_unfold():
    # torch's x.unfold(1, 3, 2): windows of 3 along axis 1, 2 apart, as a new last axis
    (got,) = run_onyx("UnfoldTensor", [X], [T.FLOAT], dim=1, size=3, step=2)
    want = np.stack([X[:, i : i + 3, :] for i in range(0, 7 - 3 + 1, 2)], axis=1).transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(got, want)


def test_bad_attributes():
    with pytest.raises(OnyxError, match="exceeds"):
        run_onyx("UnfoldTensor", [X], [T.FLOAT], dim=1, size=8)
    with pytest.raises(OnyxError, match="out of range"):
        run_onyx("UnfoldTensor", [X], [T.FLOAT], dim=3, size=1)
    with pytest.raises(OnyxError, match="positive"):
        run_onyx("UnfoldTensor", [X], [T.FLOAT], size=2, step=0)
