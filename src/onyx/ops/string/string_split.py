"""StringSplit: split every string on a delimiter (or on runs of whitespace), padding with ""."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.string._common import as_strings


@op("StringSplit", since=20)
def string_split(X, *, delimiter=None, maxsplit=None):
    x = as_strings(X, "StringSplit")
    sep = delimiter or None  # None or "": split on runs of whitespace, stripping both ends
    limit = -1 if maxsplit is None else int(maxsplit)
    # An empty string has no substrings, whatever the delimiter (as in onnxruntime; Python would give [""]).
    parts = [s.split(sep, limit) if s else [] for s in x.reshape(-1).tolist()]
    counts = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    width = int(counts.max()) if len(parts) else 0
    y = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, : len(p)] = p
    return y.reshape(x.shape + (width,)), counts.reshape(x.shape)


@shape_rule("StringSplit")
def _string_split_shape(ctx) -> None:
    """Y: string, X's dims plus the largest number of pieces (a fresh symbol); Z: int64, X's dims."""
    x = ctx.input_shape(0)
    ctx.set_output(0, 8, None if x is None else [*x, ctx.new_dim()])
    ctx.set_output(1, 7, x)
