"""Attention (23) for opsets before it: the spec's own pattern written with MatMul, Softmax and friends.

Q, K, V in 3-D ([batch, seq, heads * head_size], with ``q_num_heads``/``kv_num_heads``) or 4-D ([batch,
heads, seq, head_size]); past key/value concatenated on the sequence axis (and returned as the present
ones); grouped-query heads repeated; ``scale`` (default 1/sqrt(head_size)) applied to Q and K by its
square root; ``softcap``; a boolean or additive mask and ``is_causal`` (bottom-right aligned) added as a
bias; rows masked everywhere give zeros, as the spec says. Needs the head size (and, for ``is_causal``,
both sequence lengths) to be known; the ``qk_matmul_output`` output is refused.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.ir.model import Node, Value
from onyx.version_converter._core import (
    WRITTEN_AT,
    Converter,
    Emitter,
    Replacement,
    adapter,
    fail,
    is_used,
    named_output,
)


def _to_heads(e: Emitter, x: Value, heads: int) -> Value:
    """[batch, seq, heads * size] -> [batch, heads, seq, size]."""
    split = e("Reshape", x, e.const(np.asarray([0, 0, heads, -1], np.int64)))
    return e("Transpose", split, perm=[0, 2, 1, 3])


def _attention_down(node: Node, cx: Converter) -> Replacement:
    q, k, v = node.inputs[:3]
    extra = list(node.inputs[3:]) + [None] * 3
    mask, past_k, past_v = extra[:3]
    if named_output(node, 3) is not None and is_used(node.outputs[3], node.graph):
        raise fail(node, "the qk_matmul_output output has no decomposition")
    dtype = cx.numpy_dtype(node, q)
    rank = cx.rank(q)
    if rank not in (3, 4):
        raise fail(node, "Q's rank must be known (3 or 4) to decompose Attention")
    e = Emitter(cx, node)
    if rank == 3:
        hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
        if not hq or not hkv:
            raise fail(node, "3-D inputs need q_num_heads and kv_num_heads")
        size = _last(cx, q) // hq if _last(cx, q) is not None else None
        q, k, v = _to_heads(e, q, hq), _to_heads(e, k, hkv), _to_heads(e, v, hkv)
    else:
        hq, hkv = (cx.shape(x)[1] if cx.rank(x) == 4 else None for x in (node.inputs[0], node.inputs[1]))
        if hq is None or hkv is None:
            raise fail(node, "the number of query and key/value heads (dim 1) must be known")
        size = _last(cx, node.inputs[0])
    if past_k is not None:
        k = e("Concat", past_k, k, axis=2, out=named_output(node, 1))
        v = e("Concat", past_v, v, axis=2, out=named_output(node, 2))
    scale = node.attr("scale")
    if scale is None:
        if size is None:
            raise fail(node, "the head size must be known for the default scale 1/sqrt(head_size)")
        scale = 1.0 / math.sqrt(size)
    if hq != hkv:
        if not hq or not hkv or hq % hkv:
            raise fail(
                node, f"query heads {hq} and key/value heads {hkv} must be known, the first a multiple"
            )
        k, v = (_repeat_heads(e, cx, node, x, hq // hkv, hkv) for x in (k, v))
    root = e.const(np.asarray(math.sqrt(scale), dtype))
    scores = e("MatMul", e("Mul", q, root), e("Transpose", e("Mul", k, root), perm=[0, 1, 3, 2]))
    softcap = float(node.attr("softcap", 0.0))
    if softcap > 0:
        cap = e.const(np.asarray(softcap, dtype))
        scores = e("Mul", e("Tanh", e("Div", scores, cap)), cap)
    if int(node.attr("is_causal", 0)):
        scores = e("Add", scores, e.const(_causal_bias(cx, node, past_k, dtype)))
    if mask is not None:
        if cx.elem_type(mask) == 9:  # bool: True takes part
            bias = e("Where", mask, e.const(np.asarray(0, dtype)), e.const(np.asarray(-np.inf, dtype)))
        else:
            bias = mask
        scores = e("Add", scores, bias)
    precision = node.attr("softmax_precision")
    if precision is not None and int(precision) != cx.elem_type(node.inputs[0]):
        probs = e("Cast", e("Softmax", e("Cast", scores, to=int(precision)), axis=-1), to=cx.elem_type(q))
    else:
        probs = e("Softmax", scores, axis=-1)
    if mask is not None:  # a row masked everywhere: zeros, not NaN
        probs = e("Where", e("IsNaN", probs), e.const(np.asarray(0, dtype)), probs)
    y = node.outputs[0]
    if rank == 3:
        out = e("MatMul", probs, v)
        merged = e("Transpose", out, perm=[0, 2, 1, 3])
        e("Reshape", merged, e.const(np.asarray([0, 0, -1], np.int64)), out=y)
    else:
        e("MatMul", probs, v, out=y)
    return cx.replace(node, e.nodes, WRITTEN_AT)


def _last(cx: Converter, x: Value) -> int | None:
    shape = cx.shape(x)
    return shape[-1] if shape else None


def _repeat_heads(e: Emitter, cx: Converter, node: Node, x: Value, group: int, heads: int) -> Value:
    """[batch, heads, seq, size] -> [batch, heads * group, seq, size], each head repeated ``group`` times."""
    size = _last(cx, node.inputs[1])
    if cx.rank(node.inputs[1]) == 3:
        size = size // heads if size is not None else None
    if size is None:
        raise fail(node, "the key/value head size must be known to repeat grouped heads")
    wide = e("Unsqueeze", x, e.const(np.asarray([2], np.int64)))
    tiled = e("Tile", wide, e.const(np.asarray([1, 1, group, 1, 1], np.int64)))
    return e("Reshape", tiled, e.const(np.asarray([0, heads * group, -1, size], np.int64)))


def _causal_bias(cx: Converter, node: Node, past_k: Value | None, dtype: np.dtype) -> np.ndarray:
    q_len = _seq_len(cx, node.inputs[0])
    kv_len = _seq_len(cx, node.inputs[1])
    past = 0 if past_k is None else (cx.shape(past_k) or [None] * 3)[2]
    if q_len is None or kv_len is None or past is None:
        raise fail(node, "is_causal needs the query, key and past sequence lengths to be known")
    allowed = np.tril(np.ones((q_len, kv_len + past), bool), past)
    return np.where(allowed, 0, -np.inf).astype(dtype)


def _seq_len(cx: Converter, x: Value) -> int | None:
    shape = cx.shape(x)
    if shape is None:
        return None
    return shape[1] if len(shape) == 3 else shape[2]


adapter("Attention", 23, down=_attention_down)
