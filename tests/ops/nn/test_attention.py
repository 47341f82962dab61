"""Attention-family kernels and the remaining nn ops (GridSample, NMS, losses...)."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from tests.ops.nn._util import check_vs_ort, run_onyx

rng = np.random.default_rng(4)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _ref_attention(q, k, v, bias=None, scale=None):
    hq, hkv = q.shape[1], k.shape[1]
    k = np.repeat(k, hq // hkv, axis=1)
    v = np.repeat(v, hq // hkv, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * (scale or 1 / np.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v


def test_attention_gqa_causal_with_past():
    q, k, v = _r(2, 4, 3, 8), _r(2, 2, 3, 8), _r(2, 2, 3, 6)
    pk, pv = _r(2, 2, 5, 8), _r(2, 2, 5, 6)
    y, present_k, present_v = run_onyx(
        "Attention",
        {"q": q, "k": k, "v": v, "m": None, "pk": pk, "pv": pv},
        dict(is_causal=1),
        opset=23,
        n_outputs=3,
    )
    kk = np.concatenate([pk, k], axis=2)
    vv = np.concatenate([pv, v], axis=2)
    allowed = np.arange(8)[None, :] <= np.arange(3)[:, None] + 5
    bias = np.where(allowed, 0, -np.inf).astype(np.float32)
    np.testing.assert_allclose(y, _ref_attention(q, kk, vv, bias), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(present_k, kk)
    np.testing.assert_array_equal(present_v, vv)


def test_attention_3d_float16_bool_mask():
    q, k, v = _r(1, 4, 2 * 8), _r(1, 6, 2 * 8), _r(1, 6, 2 * 8)
    mask = rng.random((4, 6)) > 0.3
    mask[:, 0] = True
    y = run_onyx(
        "Attention",
        {"q": q.astype(np.float16), "k": k.astype(np.float16), "v": v.astype(np.float16), "m": mask},
        dict(q_num_heads=2, kv_num_heads=2),
        opset=23,
    )
    assert y.dtype == np.float16 and y.shape == (1, 4, 16)

    def heads(x):
        return x.reshape(1, -1, 2, 8).transpose(0, 2, 1, 3)

    ref = _ref_attention(heads(q), heads(k), heads(v), np.where(mask, 0, -np.inf))
    ref = ref.transpose(0, 2, 1, 3).reshape(1, 4, 16)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def test_attention_fully_masked_row_is_zero():
    q, k, v = _r(1, 1, 2, 4), _r(1, 1, 3, 4), _r(1, 1, 3, 4)
    mask = np.array([[False, False, False], [True, True, False]])
    y = run_onyx("Attention", {"q": q, "k": k, "v": v, "m": mask}, opset=23)
    assert np.isfinite(y).all()
    np.testing.assert_array_equal(y[0, 0, 0], 0)


def test_attention_errors():
    with pytest.raises(InvalidArgument):
        run_onyx("Attention", {"q": _r(1, 3, 2, 4), "k": _r(1, 2, 2, 4), "v": _r(1, 2, 2, 4)}, opset=23)
    with pytest.raises(InvalidArgument):
        run_onyx("Attention", {"q": _r(1, 2, 8), "k": _r(1, 2, 8), "v": _r(1, 2, 8)}, opset=23)


def test_rotary_embedding_3d_equals_4d():
    x = _r(2, 5, 3 * 8)
    cos, sin = _r(10, 4), _r(10, 4)
    pos = rng.integers(0, 10, (2, 5)).astype(np.int64)
    for inter in (0, 1):
        y3 = run_onyx(
            "RotaryEmbedding",
            {"x": x, "c": cos, "s": sin, "p": pos},
            dict(num_heads=3, interleaved=inter),
            opset=23,
        )
        x4 = x.reshape(2, 5, 3, 8).transpose(0, 2, 1, 3)
        y4 = run_onyx(
            "RotaryEmbedding", {"x": x4, "c": cos, "s": sin, "p": pos}, dict(interleaved=inter), opset=23
        )
        np.testing.assert_allclose(y3, y4.transpose(0, 2, 1, 3).reshape(2, 5, 24), rtol=1e-6)


def test_linear_attention_decode_matches_prefill():
    b, t, h, dk, dv = 1, 4, 2, 4, 3
    q, k, v = _r(b, t, h * dk), _r(b, t, h * dk), _r(b, t, h * dv)
    decay = -np.abs(_r(b, t, h))
    beta = 1 / (1 + np.exp(-_r(b, t, h)))
    attrs = dict(q_num_heads=h, kv_num_heads=h, update_rule="gated_delta")
    full, state = run_onyx(
        "LinearAttention",
        {"q": q, "k": k, "v": v, "s": None, "d": decay, "b": beta},
        attrs,
        opset=27,
        n_outputs=2,
    )
    s = None
    outs = []
    for i in range(t):
        o, s = run_onyx(
            "LinearAttention",
            {
                "q": q[:, i : i + 1],
                "k": k[:, i : i + 1],
                "v": v[:, i : i + 1],
                "s": s if s is not None else np.zeros((b, h, dk, dv), np.float32),
                "d": decay[:, i : i + 1],
                "b": beta[:, i : i + 1],
            },
            attrs,
            opset=27,
            n_outputs=2,
        )
        outs.append(o)
    np.testing.assert_allclose(np.concatenate(outs, axis=1), full, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, state, rtol=1e-5, atol=1e-6)


def test_causal_conv_with_state_equals_conv():
    x, w, bias = _r(2, 3, 7), _r(3, 1, 4), _r(3)
    y, state = run_onyx("CausalConvWithState", {"x": x, "w": w, "b": bias}, opset=27, n_outputs=2)
    ref = run_onyx("Conv", {"x": x, "w": w, "b": bias}, dict(group=3, pads=[3, 0]), opset=22)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state, x[:, :, -3:])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_vs_ort(mode, padding, align):
    x = _r(2, 3, 5, 6)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 3, 2)).astype(np.float32)
    check_vs_ort(
        "GridSample",
        {"x": x, "g": grid},
        dict(mode=mode, padding_mode=padding, align_corners=align),
        opset=16,
        rtol=1e-4,
        atol=1e-4,
    )


def test_affine_grid_identity_samples_input():
    x = _r(1, 2, 4, 5)
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    grid = run_onyx(
        "AffineGrid", {"t": theta, "s": np.array([1, 2, 4, 5], np.int64)}, dict(align_corners=1), opset=20
    )
    y = run_onyx("GridSample", {"x": x, "g": grid}, dict(align_corners=1), opset=20)
    np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-5)


def test_nms_vs_ort():
    boxes = rng.uniform(0, 10, (2, 20, 4)).astype(np.float32)
    scores = rng.random((2, 3, 20)).astype(np.float32)
    inputs = {
        "b": boxes,
        "s": scores,
        "m": np.array([5], np.int64),
        "i": np.array([0.3], np.float32),
        "t": np.array([0.2], np.float32),
    }
    check_vs_ort("NonMaxSuppression", inputs, opset=11)
    check_vs_ort("NonMaxSuppression", inputs, dict(center_point_box=1), opset=11)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_losses_vs_ort(reduction):
    x = _r(3, 5, 4)
    t = rng.integers(0, 5, (3, 4)).astype(np.int64)
    t[0, 0] = -1
    w = np.abs(_r(5))
    attrs = dict(reduction=reduction, ignore_index=-1)
    check_vs_ort("NegativeLogLikelihoodLoss", {"x": x, "t": t, "w": w}, attrs, opset=13)
    check_vs_ort("SoftmaxCrossEntropyLoss", {"x": x, "t": t, "w": w}, attrs, opset=13, n_outputs=2)
    check_vs_ort("SoftmaxCrossEntropyLoss", {"x": x, "t": t}, attrs, opset=13)


def test_attention_bad_mask_and_loss_weight_raise():
    q = _r(1, 2, 3, 4)
    with pytest.raises(InvalidArgument):
        run_onyx("Attention", {"q": q, "k": q, "v": q, "m": np.zeros((5, 3, 3), np.float32)}, opset=23)
    with pytest.raises(InvalidArgument):
        run_onyx(
            "NegativeLogLikelihoodLoss", {"x": _r(2, 3), "t": np.zeros(2, np.int64), "w": _r(4)}, opset=13
        )
