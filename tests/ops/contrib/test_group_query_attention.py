"""com.microsoft GroupQueryAttention against onnxruntime: prompts and generation steps, packed QKV, KV
caches longer than the sequence (shared-buffer layout), rotary (half and interleaved), sliding
windows, softcap, attention bias, head sinks, per-row lengths, float16."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import onyx
from onyx.errors import OnyxError

MS = "com.microsoft"
NAMES = [
    "query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
    "cos_cache", "sin_cache", "position_ids", "attention_bias", "head_sink",
]  # fmt: skip
OUTS = ["out", "present_key", "present_value"]


def _model(ins, **attrs) -> tuple[bytes, dict]:
    used = [nm if a is not None else "" for nm, a in zip(NAMES, ins)]
    while used[-1] == "":
        used.pop()
    node = helper.make_node("GroupQueryAttention", used, OUTS, domain=MS, **attrs)
    g_in = [
        helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for nm, a in zip(NAMES, ins)
        if a is not None
    ]
    elem = helper.np_dtype_to_tensor_dtype(ins[0].dtype)
    g_out = [helper.make_tensor_value_info(o, elem, None) for o in OUTS]
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    model = helper.make_model(helper.make_graph([node], "g", g_in, g_out), opset_imports=opsets)
    return model.SerializeToString(), {nm: a for nm, a in zip(NAMES, ins) if a is not None}


def _inputs(r, B=2, S=5, N=4, NKV=2, H=8, past=0, buf=None, packed=False, rotary=False, lens=None, bias=False,
            sink=False, dtype=np.float32):  # fmt: skip
    def f(*shape):
        return r.standard_normal(shape).astype(dtype)

    total = past + S
    buf = past if buf is None else buf
    q, k, v = f(B, S, N * H), f(B, S, NKV * H), f(B, S, NKV * H)
    if packed:
        q, k, v = np.concatenate([q, k, v], -1), None, None
    pk = f(B, NKV, buf, H) if buf else None
    pv = f(B, NKV, buf, H) if buf else None
    seqlens = np.array(lens if lens is not None else [total] * B, np.int32) - 1
    cos = sin = None
    if rotary:
        angles = r.random((64, H // 2)) * 3
        cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    ab = f(B, 1, S, total) if bias else None
    hs = f(N) if sink else None
    return [q, k, v, pk, pv, seqlens, np.array(total, np.int32), cos, sin, None, ab, hs]


CASES = [
    dict(),
    dict(packed=True),
    dict(past=3, B=1),
    dict(past=3, S=1),
    dict(past=3, buf=10, S=1),
    dict(past=3, buf=10, S=2, B=1),
    dict(past=3, buf=10, S=1, lens=[4, 2]),
    dict(S=5, lens=[5, 3]),
    dict(rotary=True, H=16, do_rotary=1),
    dict(rotary=True, H=16, do_rotary=1, rotary_interleaved=1),
    dict(rotary=True, H=16, do_rotary=1, past=4, S=1),
    dict(rotary=True, H=32, do_rotary=1, past=4, S=1, buf=9, lens=[5, 3]),
    dict(rotary=True, H=16, do_rotary=1, rotary_interleaved=1, past=4, S=2, B=1),
    dict(rotary=True, H=16, do_rotary=1, packed=True, past=2, S=1),
    dict(local_window_size=1),
    dict(local_window_size=2),
    dict(local_window_size=3, past=5, S=1),
    dict(local_window_size=3, past=5, S=2, B=1),
    dict(softcap=5.0),
    dict(scale=0.3),
    dict(bias=True),
    dict(bias=True, past=2, S=1),
    dict(sink=True),
    dict(smooth_softmax=1),
    dict(N=4, NKV=4),
    dict(N=6, NKV=1),
    dict(causal=0),
    dict(past=3, S=3, B=1, softcap=2.0, bias=True, sink=True),
    dict(dtype=np.float16),
    dict(dtype=np.float16, rotary=True, H=16, do_rotary=1, past=3, S=1),
]
SHAPE_KEYS = {"B", "S", "N", "NKV", "H", "past", "buf", "packed", "rotary", "lens", "bias", "sink", "dtype"}


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_against_onnxruntime(case):
    r = np.random.default_rng(0)
    shape = {k: v for k, v in case.items() if k in SHAPE_KEYS}
    attrs = {k: v for k, v in case.items() if k not in SHAPE_KEYS}
    ins = _inputs(r, **shape)
    n, nkv = shape.get("N", 4), shape.get("NKV", 2)
    data, feeds = _model(ins, num_heads=n, kv_num_heads=nkv, **attrs)
    so = ort.SessionOptions()
    so.log_severity_level = 4
    want = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onyx.InferenceSession(data).run(None, feeds)
    t = int(ins[5].max()) + 1  # cache rows past the longest total are unspecified
    tol = 2e-3 if shape.get("dtype") == np.float16 else 1e-5
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.shape, w.shape)
        if i:
            g, w = g[:, :, :t], w[:, :, :t]
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "case", [dict(), dict(past=4, S=1), dict(past=4, S=2, B=1)], ids=["prompt", "step", "chunk"]
)
def test_rotary_position_ids(case):
    r = np.random.default_rng(2)
    ins = _inputs(r, rotary=True, H=16, **case)
    b, s = ins[0].shape[:2]
    ins[9] = r.integers(0, 30, (b, s)).astype(np.int64)  # a prompt uses only position_ids[0, 0]
    data, feeds = _model(ins, num_heads=4, kv_num_heads=2, do_rotary=1)
    so = ort.SessionOptions()
    so.log_severity_level = 4
    want = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onyx.InferenceSession(data).run(None, feeds)
    t = int(ins[5].max()) + 1
    for i, (g, w) in enumerate(zip(got, want)):
        if i:
            g, w = g[:, :, :t], w[:, :, :t]
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _run(ins, **attrs):
    data, feeds = _model(ins, **attrs)
    return onyx.InferenceSession(data).run(None, feeds)


def test_bad_inputs():
    r = np.random.default_rng(1)
    ins = _inputs(r)
    with pytest.raises(OnyxError, match="not a multiple of kv_num_heads"):
        _run(ins, num_heads=4, kv_num_heads=3)
    bad = list(ins)
    bad[5] = np.array([4], np.int32)
    with pytest.raises(OnyxError, match="seqlens_k must have 2 entries"):
        _run(bad, num_heads=4, kv_num_heads=2)
    with pytest.raises(OnyxError, match="cos_cache"):
        _run(ins, num_heads=4, kv_num_heads=2, do_rotary=1)
    step = _inputs(r, past=3, S=1)
    step[3] = step[4] = None
    with pytest.raises(OnyxError, match="cached tokens expected"):
        _run(step, num_heads=4, kv_num_heads=2)
