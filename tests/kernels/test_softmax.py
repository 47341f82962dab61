"""onyx.kernels.softmax: attention's softmax in the compiled loop (onyx.kernels._softmax) against the
numpy path (scale, every bias broadcast, rows masked entirely, NaN and inf, edge shapes, strided
scores), and the attention ops that call it against onnxruntime.

Tolerances, per probability p of a row of T logits z (after scale and bias): each path rounds z
(|dz| <= eps |z|, the C with fused multiply-adds), so p moves by up to p * 2 eps max|z|; exp is within
2 ulps on either path; the row sum of T float32 terms is within T eps of its value in any order. So
|p_C - p_numpy| <= p ((T + 4) eps + 2 eps max|z|), plus exp(-86.5) < 3e-38 where exp underflows
(onyx's exp gives 0 below -86.5, numpy's values down to the subnormals).
"""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.kernels import softmax as S
from onyx.kernels._loader import compiled
from onyx.ops.contrib._common import attend, heads, key_mask_bias
from tests.ops.contrib.test_contrib_ops import _model, check

EPS32 = float(np.finfo(np.float32).eps)
EXP_FLOOR = 3e-38  # onyx's float32 exp is 0 below -86.5: exp(-86.5) = 2.9e-38
R = np.random.default_rng(11)


def rn(*shape):
    return R.normal(size=shape).astype(np.float32)


@pytest.fixture
def built():
    if compiled("_softmax") is None:
        pytest.skip("onyx.kernels._softmax was not built (or ONYX_NO_PERF is set): only numpy runs")


def _logits(s, scale, bias):
    z = s.astype(np.float64) * scale
    if bias is not None:
        z = z + bias
    return z


def _assert_softmax_close(got, want, z):
    """got and want agree within the bound of the module docstring; NaN where NaN."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    t = z.shape[-1]
    with np.errstate(invalid="ignore"):
        zmax = np.max(np.where(np.isfinite(z), np.abs(z), 0.0), axis=-1, keepdims=True)
    bound = np.abs(want.astype(np.float64)) * ((t + 4) * EPS32 + 2 * EPS32 * zmax) + EXP_FLOOR
    bound = np.broadcast_to(bound, want.shape)
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert np.all(err[ok] <= bound[ok]), f"max error {np.max(err[ok] - bound[ok]):.3g} over the bound"


@pytest.mark.parametrize("t", [1, 7, 64, 129])
@pytest.mark.parametrize(
    "bias_shape", [None, (1, 1, 1, -1), (2, 1, 1, -1), (2, 1, 5, -1), (1, 3, 5, -1), (5, -1), (1, 1, 5, 1)]
)
@pytest.mark.parametrize("scale", [0.3, -0.5])
@pytest.mark.parametrize("view", [False, True], ids=["bias", "broadcast-view"])
def test_compiled_matches_numpy(t, bias_shape, scale, view, built):
    # no bias with a positive scale folds the scale into exp's argument, a negative one scales first
    s = rn(2, 3, 5, t) * 6
    bias = None
    if bias_shape is not None:
        shape = tuple(t if d == -1 else d for d in bias_shape)
        bias = rn(*shape) * 3
        if view:
            bias = np.broadcast_to(bias, np.broadcast_shapes(bias.shape, s.shape))
    z = _logits(s, scale, bias)
    got = S.softmax_rows(s.copy(), scale=scale, bias=bias)
    want = S.softmax_rows_numpy(s.copy(), scale=scale, bias=bias)
    _assert_softmax_close(got, want, z)
    np.testing.assert_allclose(got.sum(-1), 1, rtol=(t + 4) * EPS32)


def test_float64_bias_and_lower_ranks(built):
    s = rn(4, 33) * 5
    b = rn(33).astype(np.float64)
    got = S.softmax_rows(s.copy(), scale=0.7, bias=b)
    _assert_softmax_close(got, S.softmax_rows_numpy(s.copy(), scale=0.7, bias=b), _logits(s, 0.7, b))
    one = np.array([3.0], np.float32)
    assert S.softmax_rows(one, scale=2.0)[0] == 1.0
    row = rn(17)
    _assert_softmax_close(S.softmax_rows(row.copy()), S.softmax_rows_numpy(row.copy()), _logits(row, 1, None))


def test_special_values(built):
    t = 40
    s = rn(1, 1, 9, t)
    s[0, 0, 0] = -np.inf  # no finite value: zeros
    s[0, 0, 1, 3] = np.nan  # NaN: the row is NaN
    s[0, 0, 2, 5] = np.inf  # +inf: NaN, as numpy gives
    s[0, 0, 3, :] = -np.inf
    s[0, 0, 3, 7] = -np.float32(np.nan)  # a negative NaN among -inf
    s[0, 0, 4, ::2] = -np.inf  # some -inf: zeros there
    s[0, 0, 5] = -0.0
    s[0, 0, 6] = 1e30  # equal huge values
    s[0, 0, 7, 0] = -1e30
    s[0, 0, 8] = np.linspace(-200, 0, t)  # exp underflows in part of the row
    with np.errstate(invalid="ignore", over="ignore"):
        want = S.softmax_rows_numpy(s.copy())
        z = _logits(s, 1.0, None)
    got = S.softmax_rows(s.copy())
    _assert_softmax_close(got, want, z)
    assert np.isnan(got[0, 0, 3]).all() and not got[0, 0, 0].any()


def test_edge_shapes_and_strided_scores(built):
    for shape in [(0, 3, 4, 5), (2, 3, 4, 0), (1, 1, 1, 1), (3, 0)]:
        s = np.ones(shape, np.float32)
        assert S.softmax_rows(s, scale=0.5) is s
    # non-contiguous scores: computed on a copy, written back in place
    base = rn(2, 3, 6, 20) * 4
    view = base[:, :, ::2, ::2]
    want = S.softmax_rows_numpy(view.copy(), scale=0.25)
    got = S.softmax_rows(view, scale=0.25)
    assert got is view
    _assert_softmax_close(view, want, _logits(base[:, :, ::2, ::2], 0.25, None))
    # rank 5: numpy's path
    s5 = rn(2, 1, 2, 3, 4)
    _assert_softmax_close(S.softmax_rows(s5.copy()), S.softmax_rows_numpy(s5.copy()), _logits(s5, 1, None))


def test_bias_that_does_not_broadcast(built):
    with pytest.raises(ValueError):
        S.softmax_rows(rn(2, 3, 4, 5), bias=rn(3, 3, 4, 5))
    with pytest.raises(ValueError):
        S.softmax_rows(rn(3, 4, 5), bias=rn(2, 3, 4, 5))


def test_threads_do_not_change_results(built):
    s = rn(4, 12, 128, 128) * 3
    b = rn(4, 1, 1, 128)
    one = S.softmax_rows(s.copy(), scale=0.125, bias=b, threads=1)
    np.testing.assert_array_equal(one, S.softmax_rows(s.copy(), scale=0.125, bias=b, threads=2))


def test_c_entry_point_checks_its_arrays(built):
    mod = compiled("_softmax")
    s = np.zeros((1, 2, 3, 4), np.float32)
    with pytest.raises(ValueError):
        mod.softmax_rows(s, 1.0, np.zeros((1, 2, 3, 5), np.float32), 1)
    with pytest.raises(ValueError):
        mod.softmax_rows(s, 1.0, np.zeros((1, 2, 3, 8), np.float32)[..., ::2], 1)
    with pytest.raises(ValueError):
        mod.softmax_rows(s.reshape(2, 3, 4), 1.0, None, 1)
    with pytest.raises(ValueError):
        mod.softmax_rows(np.zeros((1, 2, 3, 8), np.float32)[..., ::2], 1.0, None, 1)
    with pytest.raises(TypeError):
        mod.softmax_rows(s.astype(np.float64), 1.0, None, 1)


# ---- through attend and the attention ops ------------------------------------------------------------


def test_attend_compiled_matches_numpy(built, monkeypatch):
    from onyx import config

    q, k, v = (heads(rn(2, 48, 64), 4, "t") for _ in range(3))
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
        fast, _ = attend(q, k, v, 0.125, bias, "t")
        monkeypatch.setenv("ONYX_NO_PERF", "1")
        config.reload()
        plain, _ = attend(q, k, v, 0.125, bias, "t")
        monkeypatch.delenv("ONYX_NO_PERF")
        config.reload()
        # the outputs are averages of v's rows (|v| ~ 1): within the probabilities' bound times sum |v|
        np.testing.assert_allclose(fast, plain, rtol=0, atol=(48 + 4) * EPS32 * 4 * np.abs(v).max())


def test_attend_bias_that_does_not_broadcast():
    from onyx.errors import InvalidArgument

    q, k, v = (heads(rn(2, 48, 64), 4, "t") for _ in range(3))
    with pytest.raises(InvalidArgument, match="does not broadcast"):
        attend(q, k, v, 0.125, rn(3, 1, 48, 48), "t")


def _attn(b=2, s=48, d=64):
    return rn(b, s, d), rn(d, 3 * d) * 0.2, rn(3 * d)


@pytest.mark.parametrize("uni", [0, 1])
def test_attention_kernel_against_onnxruntime(uni):
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


def test_mha_kernel_against_onnxruntime():
    q, k, v = rn(2, 40, 64), rn(2, 56, 64), rn(2, 56, 64)
    check("MultiHeadAttention", [q, k, v], num_heads=4)
    m = np.ones((2, 56), np.int32)
    m[0, 30:] = 0
    check("MultiHeadAttention", [q, k, v, None, m], num_heads=4)
    check("MultiHeadAttention", [q, q, q], num_heads=4, unidirectional=1)


def test_fully_masked_batch_gives_zeros():
    """mask_filter_value -inf with a batch whose keys are all masked: zeros there, on either path."""
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
    out = onyx.InferenceSession(data).run(None, feeds)[0]
    assert not out[1].any() and np.isfinite(out[0]).all()


def _attention_reference(x, w, b, key_bias, num_heads, scale):
    """The Attention op in float64 from the same float32 inputs, with a first-order bound on the error
    of any float32 evaluation (products summed in any order): a K-term float32 dot product is within
    K eps sum|a_i b_i| of its value, and each stage carries the errors of the stage before.

    Returns (output (B, S, D), bound (B, S, D))."""
    eps = EPS32
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    bsz, s, d = x.shape
    hs = d // num_heads
    qkv = x64 @ w64 + b64
    d_qkv = d * eps * (np.abs(x64) @ np.abs(w64) + np.abs(b64)) + eps * np.abs(qkv)

    def split(a):  # (B, S, D) -> (B, N, S, H)
        return a.reshape(bsz, s, num_heads, hs).transpose(0, 2, 1, 3)

    q, k, v = (split(qkv[..., i * d : (i + 1) * d]) for i in range(3))
    dq, dk, dv = (split(d_qkv[..., i * d : (i + 1) * d]) for i in range(3))
    kt, dkt = np.swapaxes(k, -1, -2), np.swapaxes(dk, -1, -2)
    z = q @ kt * scale + key_bias
    dz = scale * (dq @ np.abs(kt) + np.abs(q) @ dkt + (hs + 2) * eps * (np.abs(q) @ np.abs(kt)))
    dz += eps * np.abs(z)
    m = z.max(-1, keepdims=True)
    p = np.exp(z - m)
    p /= p.sum(-1, keepdims=True)
    t = z.shape[-1]
    # softmax: dp_j <= p_j (dz_j + sum_k p_k dz_k) + (T + 4) eps p_j
    dp = p * (dz + (p * dz).sum(-1, keepdims=True)) + (t + 4) * eps * p
    out = p @ v
    dout = dp @ np.abs(v) + p @ dv + (t + 2) * eps * (p @ np.abs(v))

    def merge(a):
        return a.transpose(0, 2, 1, 3).reshape(bsz, s, d)

    return merge(out), merge(dout)


def test_attention_heads_in_one_batch_gemm_against_onnxruntime():
    """128 x 128 x 64 per head: the heads' products run as batch GEMMs, whose float32 sums onyx and
    onnxruntime take in different orders (they differed by up to 5.8e-5 once, on 46 of 65,536
    outputs). Both are compared with the float64 evaluation of the same inputs, within the bound that
    K-term float32 sums carry (see _attention_reference)."""
    from tests.ops.contrib.test_contrib_ops import _both

    x, w, bias = _attn(b=2, s=128, d=256)
    m2 = np.ones((2, 128), np.int32)
    m2[1, 100:] = 0
    key_bias = np.where(m2 == 0, -10000.0, 0.0)[:, None, None, :]
    causal = np.where(np.arange(128)[None, :] > np.arange(128)[:, None], -10000.0, 0.0)[None, None]
    scale = 1 / np.sqrt(256 // 4)
    cases = [
        ("Attention", [x, w, bias, m2], x, w, bias, key_bias, {}),
        ("Attention", [x[:1], w, bias], x[:1], w, bias, causal, {"unidirectional": 1}),
    ]
    # MultiHeadAttention over q = k = v = x: the reference with an identity projection
    eye = np.concatenate([np.eye(256, dtype=np.float32)] * 3, axis=1)
    cases.append(("MultiHeadAttention", [x, x, x], x, eye, np.zeros(768, np.float32), 0.0, {}))
    for op, inputs, xr, wr, br, kb, attrs in cases:
        got, want = _both(op, inputs, num_heads=4, **attrs)
        ref, bound = _attention_reference(xr, wr, br, kb, 4, scale)
        for name, out in (("onyx", got[0]), ("onnxruntime", want[0])):
            err = np.abs(out.astype(np.float64) - ref)
            assert np.all(err <= bound), f"{op} {name}: {np.sum(err > bound)} outputs past the bound"
