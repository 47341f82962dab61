"""Random kernels: values cannot match another implementation, so check shape, type, range, seeding.

(The folder has no __init__.py and the file a distinct name: a package named ``random`` would shadow
the standard library module of that name while tests/ops is not a package.)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops import registry
from onyx.ops.registry import KernelContext

FLOAT_CODES = {1: np.float32, 10: np.float16, 11: np.float64, 16: ml_dtypes.bfloat16}


def k(op_type, opset=22):
    return registry.lookup(op_type, "", opset).fn


@pytest.mark.parametrize("opset", [1, 22])
@pytest.mark.parametrize("code", sorted(FLOAT_CODES))
def test_random_normal_shape_dtype_moments(opset, code):
    out = k("RandomNormal", opset)(shape=[200, 50], dtype=code, mean=3.0, scale=0.5, seed=1.0)
    assert out.shape == (200, 50) and out.dtype == FLOAT_CODES[code]
    v = out.astype(np.float64)
    assert abs(v.mean() - 3.0) < 0.05 and abs(v.std() - 0.5) < 0.05


def test_random_normal_default_float_and_seed_reproducible():
    a = k("RandomNormal")(shape=[4, 3], seed=7.0)
    b = k("RandomNormal")(shape=[4, 3], seed=7.0)
    c = k("RandomNormal")(shape=[4, 3], seed=8.0)
    assert a.dtype == np.float32 and np.array_equal(a, b) and not np.array_equal(a, c)
    # without a seed the run's context decides
    ctx = KernelContext(seed=3)
    assert np.array_equal(k("RandomNormal")(shape=[5], _ctx=ctx), k("RandomNormal")(shape=[5], _ctx=ctx))
    assert k("RandomNormal")(shape=[0, 2]).shape == (0, 2)
    assert k("RandomNormal")(shape=[]).shape == ()


@pytest.mark.parametrize("opset", [1, 22])
@pytest.mark.parametrize("code", sorted(FLOAT_CODES))
def test_random_uniform_range(opset, code):
    out = k("RandomUniform", opset)(shape=[1000], dtype=code, low=-2.0, high=5.0, seed=0.0)
    assert out.dtype == FLOAT_CODES[code] and out.shape == (1000,)
    v = out.astype(np.float64)
    assert v.min() >= -2.0 and v.max() <= 5.0 and v.max() - v.min() > 6.0
    if code in (1, 11):
        assert v.max() < 5.0


def test_negative_and_fractional_seeds():
    a = k("RandomUniform")(shape=[3], seed=-1.0)
    assert np.array_equal(a, k("RandomUniform")(shape=[3], seed=-1.0))
    assert not np.array_equal(
        k("RandomUniform")(shape=[3], seed=0.5), k("RandomUniform")(shape=[3], seed=0.25)
    )


def test_like_ops_take_input_type_and_shape():
    x = np.zeros((3, 4), np.float64)
    assert k("RandomNormalLike")(x).dtype == np.float64
    assert k("RandomUniformLike")(x).shape == (3, 4)
    assert k("RandomUniformLike")(x, dtype=10).dtype == np.float16
    assert k("RandomNormalLike", 1)(x.astype(np.float16), seed=2.0).dtype == np.float16
    assert k("RandomNormalLike")(x.astype(ml_dtypes.bfloat16)).dtype == ml_dtypes.bfloat16
    u = k("RandomUniformLike")(np.zeros(500, np.float32), low=10.0, high=11.0)
    assert u.min() >= 10.0 and u.max() < 11.0


def test_like_ops_need_a_float_type():
    with pytest.raises(InvalidArgument, match="floating-point"):
        k("RandomNormalLike")(np.zeros(3, np.int64))
    with pytest.raises(InvalidArgument, match="floating-point"):
        k("RandomUniform")(shape=[2], dtype=7)


@pytest.mark.parametrize("opset", [15, 22])
def test_bernoulli(opset):
    p = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    out = k("Bernoulli", opset)(p)
    assert out.dtype == np.float32 and out.tolist() == [0, 1, 0, 1]
    out = k("Bernoulli", opset)(p.astype(np.float64), dtype=9)
    assert out.dtype == np.bool_ and out.tolist() == [False, True, False, True]
    out = k("Bernoulli", opset)(np.full((100, 100), 0.3), dtype=7, seed=5.0)
    assert out.dtype == np.int64 and set(np.unique(out)) <= {0, 1} and abs(out.mean() - 0.3) < 0.03
    assert np.array_equal(out, k("Bernoulli", opset)(np.full((100, 100), 0.3), dtype=7, seed=5.0))
    assert k("Bernoulli", opset)(np.zeros(3, np.float16)).dtype == np.float16


@pytest.mark.parametrize("opset", [7, 22])
def test_multinomial(opset):
    logits = np.log(np.array([[0.2, 0.8, 0.0], [1.0, 1.0, 2.0]], np.float32) + 1e-30)
    out = k("Multinomial", opset)(logits, sample_size=4000, seed=3.0)
    assert out.shape == (2, 4000) and out.dtype == np.int32
    counts0 = np.bincount(out[0], minlength=3) / 4000
    counts1 = np.bincount(out[1], minlength=3) / 4000
    assert counts0[2] == 0 and abs(counts0[1] - 0.8) < 0.03
    assert abs(counts1[2] - 0.5) < 0.03 and abs(counts1[0] - 0.25) < 0.03
    out = k("Multinomial", opset)(logits.astype(np.float64), dtype=7)
    assert out.shape == (2, 1) and out.dtype == np.int64 and out.min() >= 0 and out.max() <= 2


def test_multinomial_errors():
    with pytest.raises(InvalidArgument, match="batch_size"):
        k("Multinomial")(np.zeros(3, np.float32))
    with pytest.raises(InvalidArgument, match="int32 or int64"):
        k("Multinomial")(np.zeros((1, 3), np.float32), dtype=1)
