"""StringNormalizer: drop stop words, then optionally upper- or lower-case the remaining strings."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.string._common import as_strings, lower, upper


@op("StringNormalizer", since=10)
def string_normalizer(X, *, case_change_action="NONE", is_case_sensitive=0, locale=None, stopwords=None):
    # ``locale`` is accepted and ignored: case mapping is Unicode's default (locale-independent) one,
    # applied one character at a time, which is what onnxruntime does for its default en_US locale.
    x = as_strings(X, "StringNormalizer")
    if x.ndim == 1:
        two_d = False
    elif x.ndim == 2 and x.shape[0] == 1:
        two_d = True
    else:
        raise InvalidArgument(f"StringNormalizer: input must have shape [C] or [1, C], got {x.shape}")
    action = case_change_action.upper()
    if action not in ("NONE", "LOWER", "UPPER"):
        raise InvalidArgument(
            f"StringNormalizer: case_change_action must be NONE, LOWER or UPPER, got {case_change_action!r}"
        )
    items = x.reshape(-1).tolist()
    if stopwords:
        if is_case_sensitive:
            stop = set(stopwords)
            items = [s for s in items if s not in stop]
        else:
            stop = {lower(w) for w in stopwords}
            items = [s for s in items if lower(s) not in stop]
    if action == "UPPER":
        items = [upper(s) for s in items]
    elif action == "LOWER":
        items = [lower(s) for s in items]
    if not items:
        items = [""]
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(1, -1) if two_d else out


@shape_rule("StringNormalizer")
def _string_normalizer_shape(ctx) -> None:
    """string [C] or [1, C]; C shrinks by the stop words found (a fresh symbol with stop words)."""
    x = ctx.input_shape(0)
    if x is None:
        ctx.set_output(0, 8, None)
        return
    if len(x) not in (1, 2) or (len(x) == 2 and isinstance(x[0], int) and x[0] != 1):
        ctx.fail(f"input must have shape [C] or [1, C], got {x}")
    c = x[-1] if not ctx.attr("stopwords") else ctx.new_dim()
    if c == 0:
        c = 1  # an empty result is one empty string
    ctx.set_output(0, 8, [c] if len(x) == 1 else [1, c])
