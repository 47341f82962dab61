"""RotaryEmbedding (23) for opsets before it, written as the spec's algorithm: the input seen as [batch,
seq, heads, head_size], its first ``rotary_embedding_dim`` features rotated by the cos/sin rows of each
position (halves, or even/odd features when ``interleaved``), the rest passed through. The head size
must be known."""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Node, Value
from onyx.version_converter._core import WRITTEN_AT, Converter, Emitter, Replacement, adapter, fail


def _slice(e: Emitter, x: Value, start: int, end: int, step: int = 1) -> Value:
    c = e.const
    i64 = np.int64
    return e("Slice", x, c(np.asarray([start], i64)), c(np.asarray([end], i64)), c(np.asarray([-1], i64)),
             c(np.asarray([step], i64)))  # fmt: skip


def _rotary_down(node: Node, cx: Converter) -> Replacement:
    x, cos, sin = node.inputs[:3]
    positions = node.inputs[3] if len(node.inputs) > 3 else None
    shape = cx.shape(x)
    if shape is None or shape[-1] is None or len(shape) not in (3, 4):
        raise fail(node, "the input's rank (3 or 4) and last dim must be known to decompose RotaryEmbedding")
    e = Emitter(cx, node)
    i64 = np.int64
    if len(shape) == 4:  # [batch, heads, seq, size] -> [batch, seq, heads, size]
        size = shape[3]
        seq_major = e("Transpose", x, perm=[0, 2, 1, 3])
    else:
        heads = int(node.attr("num_heads", 0))
        if not heads:
            raise fail(node, "a 3-D input needs num_heads")
        size = shape[2] // heads
        seq_major = e("Reshape", x, e.const(np.asarray([0, 0, heads, size], i64)))
    dim = int(node.attr("rotary_embedding_dim", 0)) or size
    half = dim // 2
    if positions is not None:
        cos, sin = e("Gather", cos, positions), e("Gather", sin, positions)
    # [batch, seq, dim / 2] -> [batch, seq, 1, dim / 2], broadcast over heads
    heads_axis = e.const(np.asarray([2], i64))
    cos, sin = e("Unsqueeze", cos, heads_axis), e("Unsqueeze", sin, heads_axis)
    rotated = _slice(e, seq_major, 0, dim)
    if int(node.attr("interleaved", 0)):
        x1, x2 = _slice(e, rotated, 0, dim, 2), _slice(e, rotated, 1, dim, 2)
    else:
        x1, x2 = _slice(e, rotated, 0, half), _slice(e, rotated, half, dim)
    real = e("Sub", e("Mul", x1, cos), e("Mul", x2, sin))
    imag = e("Add", e("Mul", x2, cos), e("Mul", x1, sin))
    if int(node.attr("interleaved", 0)):
        pairs = e("Concat", e("Unsqueeze", real, e.const(np.asarray([-1], i64))),
                  e("Unsqueeze", imag, e.const(np.asarray([-1], i64))), axis=-1)  # fmt: skip
        out = e("Reshape", pairs, e.const(np.asarray([0, 0, 0, dim], i64)))
    else:
        out = e("Concat", real, imag, axis=-1)
    if dim < size:
        out = e("Concat", out, _slice(e, seq_major, dim, size), axis=-1)
    y = node.outputs[0]
    if len(shape) == 4:
        e("Transpose", out, perm=[0, 2, 1, 3], out=y)
    else:
        e("Reshape", out, e.const(np.asarray([0, 0, -1], i64)), out=y)
    return cx.replace(node, e.nodes, WRITTEN_AT)


adapter("RotaryEmbedding", 23, down=_rotary_down)
