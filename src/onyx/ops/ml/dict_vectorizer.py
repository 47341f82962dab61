"""DictVectorizer: a map (or a sequence of maps) to a dense row per map over a fixed vocabulary."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.types import MapType, SequenceType, TensorType
from onyx.ops.ml._common import INT64, STRING, str_array, to_str_list
from onyx.ops.registry import op, shape_rule


def _value_dtype(values) -> np.dtype:
    for v in values:
        if isinstance(v, str | bytes):
            return np.dtype(object)
        if isinstance(v, np.floating):
            return np.dtype(v.dtype)
        if isinstance(v, bool | int | np.integer):
            continue
        return np.dtype(np.float32)
    if values and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
        return np.dtype(np.int64)
    return np.dtype(np.float32)


@op("DictVectorizer", domain="ai.onnx.ml", since=1)
def dict_vectorizer_1(X, *, int64_vocabulary=None, string_vocabulary=None):
    maps = X if isinstance(X, list) else [X]
    if not all(isinstance(m, dict) for m in maps):
        raise InvalidArgument("DictVectorizer: X must be a map or a sequence of maps")
    if string_vocabulary:
        vocab = {s: i for i, s in enumerate(to_str_list(string_vocabulary))}
        conv = str
    elif int64_vocabulary:
        vocab = {int(k): i for i, k in enumerate(int64_vocabulary)}
        conv = int
    else:
        raise InvalidArgument("DictVectorizer: int64_vocabulary or string_vocabulary must be given")
    all_values = [v for m in maps for v in m.values()]
    dt = _value_dtype(all_values)
    n = len(vocab)
    if dt.kind == "O":
        out = str_array([""] * (len(maps) * n), (len(maps), n))
    else:
        out = np.zeros((len(maps), n), dtype=dt)
    for r, m in enumerate(maps):
        for k, v in m.items():
            j = vocab.get(conv(k.decode() if isinstance(k, bytes) else k))
            if j is not None:
                out[r, j] = v
    return out


@shape_rule("DictVectorizer", domain="ai.onnx.ml")
def _dict_vectorizer_shape(ctx) -> None:
    """[1, vocabulary size] for a map ([count, size] for a sequence of maps), of the map's value type."""
    vocab = ctx.attr("string_vocabulary") or ctx.attr("int64_vocabulary")
    n = len(vocab) if vocab else None
    t = ctx.input_type(0)
    rows = 1
    if isinstance(t, SequenceType):
        t, rows = t.elem, ctx.new_dim()
    elem = None
    if isinstance(t, MapType):
        if isinstance(t.value, TensorType):
            elem = t.value.elem_type or None
        key = t.key_type
        if key and ctx.attr("string_vocabulary") and key != STRING:
            ctx.fail(f"string_vocabulary for a map with keys of type {key}")
        if key and ctx.attr("int64_vocabulary") and not ctx.attr("string_vocabulary") and key != INT64:
            ctx.fail(f"int64_vocabulary for a map with keys of type {key}")
    ctx.set_output(0, elem, [rows, n])
