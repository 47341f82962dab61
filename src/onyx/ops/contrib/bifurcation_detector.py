"""com.microsoft BifurcationDetector: one step of aggressive (speculative) decoding.

With predicted tokens, the prediction is kept up to and including its first token that differs from
the source from ``prev_suffix_match_idx`` on, and appended to the current tokens. Then the last n-gram
of the result (n from ``min_ngram_size`` up) is looked for in the source: a single occurrence gives the
index just past it (a longer n-gram may refine it), several give -1 and a longer n-gram is tried,
none ends the search. Follows onnxruntime's kernel step for step, its edge cases included.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule

INT64 = 7


def _find(hay: list[int], needle: list[int], start: int = 0) -> int:
    """The first index >= start where ``needle`` occurs in ``hay``, or -1."""
    n = len(needle)
    for k in range(start, len(hay) - n + 1):
        if hay[k : k + n] == needle:
            return k
    return -1


def _suffix_match(src: list[int], tokens: list[int], lo: int, hi: int) -> int:
    idx = -1
    for n in range(lo, hi + 1):
        if n > len(tokens):
            break
        gram = tokens[len(tokens) - n :]
        at = _find(src, gram)
        if at < 0:
            break
        idx = at + n
        if idx >= len(src):
            break
        if _find(src, gram, idx - n + 1) >= 0:
            idx = -1
    return idx


@op("BifurcationDetector", domain="com.microsoft", since=1)
def bifurcation_detector(
    src_tokens, cur_tokens, prev_suffix_match_idx, pred_tokens=None, *, max_ngram_size, min_ngram_size
):
    if not 0 < min_ngram_size <= max_ngram_size:
        raise InvalidArgument(
            "BifurcationDetector: need 0 < min_ngram_size <= max_ngram_size, "
            f"got {min_ngram_size} and {max_ngram_size}"
        )
    src = np.asarray(src_tokens).reshape(-1).tolist()
    cur = np.asarray(cur_tokens).reshape(-1)
    prev = np.asarray(prev_suffix_match_idx)
    if pred_tokens is None:
        out = cur.copy()
    else:
        start = int(prev.reshape(-1)[0])
        pred = np.asarray(pred_tokens).reshape(-1)
        if not 0 <= start <= len(src):
            raise InvalidArgument(
                f"BifurcationDetector: prev_suffix_match_idx {start} must be in [0, {len(src)}] "
                "(the source's length)"
            )
        if len(pred) != len(src) + 1 - start:
            raise InvalidArgument(
                f"BifurcationDetector: pred_tokens has {len(pred)} tokens, expected {len(src) + 1 - start}"
            )
        keep = 0
        while keep < len(src) - start and pred[keep] == src[start + keep]:
            keep += 1
        out = np.concatenate([cur, pred[: keep + 1]]).astype(np.int64)
    idx = _suffix_match(src, out.tolist(), int(min_ngram_size), int(max_ngram_size))
    return out, np.full(prev.shape, idx, dtype=np.int64)


@shape_rule("BifurcationDetector", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, INT64, [ctx.new_dim()] if ctx.has_input(3) else ctx.input_shape(1))
    if ctx.num_outputs > 1:
        ctx.set_output(1, INT64, ctx.input_shape(2))
