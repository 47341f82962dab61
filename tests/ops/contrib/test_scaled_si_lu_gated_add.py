"""com.microsoft ScaledSiLU and GatedAdd (plain mode) against onnxruntime, float and float16."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import both, run_onyx

R = np.random.default_rng(0)


def f(*shape, dtype=np.float32):
    return (R.standard_normal(shape) * 4).astype(dtype)


@pytest.mark.parametrize("dtype,elem", [(np.float32, T.FLOAT), (np.float16, T.FLOAT16)])
@pytest.mark.parametrize("scale", [None, 0.7])
@pytest.mark.parametrize("alpha", [1.0, 1.5])
def test_scaled_silu(dtype, elem, scale, alpha):
    ins = [f(3, 40, dtype=dtype), None if scale is None else np.array(scale, dtype)]
    (got,), (want,) = both("ScaledSiLU", ins, [elem], alpha=alpha)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype,elem", [(np.float32, T.FLOAT), (np.float16, T.FLOAT16)])
def test_gated_add(dtype, elem):
    ins = [f(2, 3, 4, dtype=dtype), f(2, 3, 4, dtype=dtype), f(2, 3, 1, dtype=dtype)]
    (got,), (want,) = both("GatedAdd", ins, [elem])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_bad_inputs():
    with pytest.raises(OnyxError, match="gate must have shape"):
        run_onyx("GatedAdd", [f(2, 4), f(2, 4), f(2, 4)], [T.FLOAT])
    with pytest.raises(OnyxError, match="CUDA-only"):
        run_onyx("GatedAdd", [f(2, 4), f(2, 4), f(2, 3), f(3, 1)], [T.FLOAT])
    with pytest.raises(OnyxError, match="scalar"):
        run_onyx("ScaledSiLU", [f(2, 4), f(2)], [T.FLOAT])
