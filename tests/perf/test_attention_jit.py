"""Attention's softmax in the compiled loop (``perf`` extra) gives what the numpy path gives: scale,
every mask form, the causal mask, an attention bias, past state, rows masked entirely, NaN and inf; and
through the Attention / MultiHeadAttention kernels against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.ops.contrib._common import SOFTMAX_JIT_MIN, attend, heads, key_mask_bias, softmax_last_
from tests.ops.contrib.test_contrib_ops import check
from tests.perf.test_fast_paths import _run_both

R = np.random.default_rng(11)


def rn(*shape):
    return R.normal(size=shape).astype(np.float32)


@pytest.fixture
def jit():
    pytest.importorskip("numba")
    from onyx.ops import _perf

    mod = _perf.jit_module("onyx.ops.math._jit")
    if mod is None:
        pytest.skip("ONYX_NO_PERF is set")
    return mod


def _numpy_softmax(s, scale, bias):
    want = s * np.float32(scale)
    if bias is not None:
        want = want + bias
    with np.errstate(invalid="ignore"):
        return softmax_last_(want)


@pytest.mark.parametrize("t", [1, 7, 64, 129])
@pytest.mark.parametrize("bias_shape", [None, (1, 1, 1, -1), (2, 1, 1, -1), (2, 1, 5, -1), (1, 3, 5, -1)])
@pytest.mark.parametrize("scale", [0.3, -0.5])
@pytest.mark.parametrize("broadcast", [False, True], ids=["rows", "view"])
def test_softmax_rows_matches_numpy(jit, t, bias_shape, scale, broadcast):
    # the bias as its own (contiguous) rows, indexed per broadcast axis, or as a broadcast view; no
    # bias with a positive scale folds the scale into exp's argument, a negative one scales first
    s = rn(2, 3, 5, t) * 6
    bias = None if bias_shape is None else rn(*bias_shape[:3], t) * 3
    want = _numpy_softmax(s, scale, bias)
    got = s.copy()
    bb = got if bias is None else (np.broadcast_to(bias, s.shape) if broadcast else bias)
    jit.softmax_rows(got, np.float32(scale), bb, bias is not None, 0, 30)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got.sum(-1), 1, rtol=1e-5)


def test_softmax_rows_special_values(jit):
    t = 40
    s = rn(1, 1, 8, t)
    s[0, 0, 0] = -np.inf  # no finite value: zeros
    s[0, 0, 1, 3] = np.nan  # NaN: the row is NaN
    s[0, 0, 2, 5] = np.inf  # +inf: NaN, as numpy gives
    s[0, 0, 3, :] = -np.inf
    s[0, 0, 3, 7] = -np.float32(np.nan)  # a negative NaN among -inf
    s[0, 0, 4, ::2] = -np.inf  # some -inf: zeros there
    s[0, 0, 5] = -0.0
    s[0, 0, 6] = 1e30  # equal huge values
    s[0, 0, 7, 0] = -1e30
    want = _numpy_softmax(s, 1.0, None)
    got = s.copy()
    jit.softmax_rows(got, np.float32(1.0), got, False, 0, 8)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    assert np.isnan(got[0, 0, 3]).all() and not got[0, 0, 0].any()


def test_softmax_rows_part_of_the_rows(jit):
    s = rn(1, 2, 4, 16)
    got = s.copy()
    jit.softmax_rows(got, np.float32(1.0), got, False, 2, 5)
    np.testing.assert_array_equal(got.reshape(8, 16)[[0, 1, 5, 6, 7]], s.reshape(8, 16)[[0, 1, 5, 6, 7]])
    want = _numpy_softmax(s, 1.0, None).reshape(8, 16)
    np.testing.assert_allclose(got.reshape(8, 16)[2:5], want[2:5], rtol=2e-6)


def _attend_both(monkeypatch, q, k, v, scale, bias):
    fast, _ = attend(q, k, v, scale, bias, "t")
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain, _ = attend(q, k, v, scale, bias, "t")
    monkeypatch.delenv("ONYX_NO_PERF")
    return fast, plain


def test_attend_uses_both_paths_alike(jit, monkeypatch):
    q, k, v = (heads(rn(2, 48, 64), 4, "t") for _ in range(3))
    assert 2 * 4 * 48 * 48 >= SOFTMAX_JIT_MIN
    mask = np.ones((2, 48), np.int32)
    mask[1, 30:] = 0
    key = key_mask_bias(mask, 2, 48, 48, 0, -10000.0, np.float32, "t")
    # every broadcast form: per key, full, one per query row (last axis 1), 2-D, float64
    for bias in (
        None,
        key,
        rn(1, 4, 48, 48),
        rn(1, 4, 48, 1),
        rn(48, 48),
        rn(2, 1, 1, 48).astype(np.float64),
    ):
        fast, plain = _attend_both(monkeypatch, q, k, v, 0.125, bias)
        np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-6)


def test_attend_bias_that_does_not_broadcast(jit):
    from onyx.errors import InvalidArgument

    q, k, v = (heads(rn(2, 48, 64), 4, "t") for _ in range(3))
    with pytest.raises(InvalidArgument, match="does not broadcast"):
        attend(q, k, v, 0.125, rn(3, 1, 48, 48), "t")


def _attn(b=2, s=48, d=64):
    return rn(b, s, d), rn(d, 3 * d) * 0.2, rn(3 * d)


@pytest.mark.parametrize("uni", [0, 1])
def test_attention_kernel_against_onnxruntime(jit, uni):
    x, w, bias = _attn()
    m2 = np.ones((2, 48), np.int32)
    m2[1, 20:] = 0
    check("Attention", [x, w, bias], num_heads=4, unidirectional=uni)
    check("Attention", [x, w, bias, m2], num_heads=4, unidirectional=uni)
    check("Attention", [x, w, bias, np.array([48, 13], np.int32)], num_heads=4)
    m3 = (R.random((2, 48, 48)) > 0.3).astype(np.int32)
    m3[..., 0] = 1
    check("Attention", [x, w, bias, m3], num_heads=2, mask_filter_value=-1e9)
    check("Attention", [x, w, bias, None, None, rn(1, 4, 48, 48)], num_heads=4, scale=0.2)
    check("Attention", [x, w, bias, None, rn(2, 2, 4, 9, 16)], n_out=2, num_heads=4, unidirectional=1)


def test_mha_kernel_against_onnxruntime(jit):
    q, k, v = rn(2, 40, 64), rn(2, 56, 64), rn(2, 56, 64)
    check("MultiHeadAttention", [q, k, v], num_heads=4)
    m = np.ones((2, 56), np.int32)
    m[0, 30:] = 0
    check("MultiHeadAttention", [q, k, v, None, m], num_heads=4)
    check("MultiHeadAttention", [q, q, q], num_heads=4, unidirectional=1)


def test_fully_masked_batch_same_on_both_paths(jit, monkeypatch):
    """mask_filter_value -inf with a batch whose keys are all masked: both paths give zeros there."""
    from tests.ops.contrib.test_contrib_ops import _model

    x, w, bias = _attn()
    m2 = np.ones((2, 48), np.int32)
    m2[1] = 0
    data, feeds = _model(
        "Attention",
        [x, w, bias, m2],
        out_types=[np.zeros(1, np.float32)],
        num_heads=4,
        mask_filter_value=float("-inf"),
    )
    fast, plain = _run_both(data, feeds, monkeypatch)
    np.testing.assert_allclose(fast[0], plain[0], rtol=1e-5, atol=1e-6)
    assert not fast[0][1].any()


def test_exp32_accuracy_and_range(jit):
    """The compiled loops' exp: within 1.2 ulps of the exact value over its range, 0 below, inf above."""
    from numba import njit

    @njit(error_model="numpy")
    def run(u, out):
        for i in range(u.shape[0]):
            out[i] = jit._exp32(u[i])

    u = np.linspace(jit._EXP_LO, jit._EXP_HI, 300_001, dtype=np.float32)
    u = np.concatenate([u, (R.normal(size=100_000) * 3).astype(np.float32)])
    got = np.empty_like(u)
    run(u, got)
    exact = np.exp(u.astype(np.float64))
    ulps = np.abs(got - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1.2
    special = np.array([-np.inf, -100.0, -86.6, 88.6, 100.0, np.inf, np.nan, 0.0, -0.0], dtype=np.float32)
    got = np.empty_like(special)
    run(special, got)
    np.testing.assert_array_equal(got, [0, 0, 0, np.inf, np.inf, np.inf, np.nan, 1, 1])


def test_attention_heads_in_one_batch_gemm_against_onnxruntime(jit):
    # 128 x 128 x 64 per head is past blas.matmul_stack's small-matrix bound: the heads' products run
    # as batch GEMMs (two images: a call per image), softmax in the compiled loop
    x, w, bias = _attn(b=2, s=128, d=256)
    m2 = np.ones((2, 128), np.int32)
    m2[1, 100:] = 0
    check("Attention", [x, w, bias, m2], num_heads=4)
    check("Attention", [x[:1], w, bias], num_heads=4, unidirectional=1)
    check("MultiHeadAttention", [x, x, x], num_heads=4)
