"""DictVectorizer: a map (or a sequence of maps) to a dense row per map over a fixed vocabulary."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import str_array, to_str_list
from onyx.ops.registry import op


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
