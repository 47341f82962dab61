"""OneHotEncoder: one float32 column per category, appended as a new last axis."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, STRING, to_str_list
from onyx.ops.registry import op, shape_rule


@op("OneHotEncoder", domain="ai.onnx.ml", since=1)
def one_hot_encoder_1(X, *, cats_int64s=None, cats_strings=None, zeros=1):
    X = np.asarray(X)
    flat = X.reshape(-1)
    if X.dtype == object or X.dtype.kind in "US":
        cats = to_str_list(cats_strings or [])
        if not cats:
            raise InvalidArgument("OneHotEncoder: string input needs cats_strings")
        table = {c: i for i, c in enumerate(cats)}
        uniq, inv = np.unique(flat.astype(str) if flat.size else flat, return_inverse=True)
        codes = np.asarray([table.get(str(u), -1) for u in uniq], dtype=np.int64)[inv]
    else:
        cats = list(cats_int64s or [])
        if not cats:
            raise InvalidArgument("OneHotEncoder: numeric input needs cats_int64s")
        c = np.asarray(cats, dtype=np.int64)
        vals = flat.astype(np.int64)
        order = np.argsort(c, kind="stable")
        sc = c[order]
        pos = np.clip(np.searchsorted(sc, vals), 0, len(sc) - 1)
        found = sc[pos] == vals
        if flat.dtype.kind == "f":
            found &= flat == vals
        codes = np.where(found, order[pos], -1)
    n = len(cats)
    if not zeros and np.any(codes < 0):
        raise InvalidArgument("OneHotEncoder: an input value is not among the categories and zeros=0")
    out = np.zeros((flat.size, n), dtype=np.float32)
    ok = codes >= 0
    out[np.nonzero(ok)[0], codes[ok]] = 1.0
    return out.reshape(X.shape + (n,))


@shape_rule("OneHotEncoder", domain="ai.onnx.ml")
def _one_hot_encoder_shape(ctx) -> None:
    """float, X's dims plus one axis of the categories (cats_strings for string X, else cats_int64s)."""
    x, elem = ctx.input_shape(0), ctx.input_elem(0)
    strings, ints = ctx.attr("cats_strings"), ctx.attr("cats_int64s")
    if elem == STRING:
        cats = strings
    elif elem is not None:
        cats = ints
    else:
        cats = strings or ints
    n = len(cats) if cats else None
    ctx.set_output(0, FLOAT, None if x is None else [*x, n])
