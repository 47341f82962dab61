"""com.microsoft NGramRepeatBlock: forbid tokens that would repeat an n-gram already in the sequence
(generation loops exported from fairseq/transformers): for every earlier occurrence of the last
``ngram_size - 1`` tokens, the token that followed it gets the score -inf."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


@op("NGramRepeatBlock", domain="com.microsoft", since=1)
def n_gram_repeat_block(input_ids, scores, *, ngram_size):
    ids, s = np.asarray(input_ids), np.asarray(scores)
    if ids.ndim != 2 or s.ndim != 2 or ids.shape[0] != s.shape[0]:
        raise InvalidArgument(
            f"NGramRepeatBlock: input_ids (batch, sequence) and scores (batch, vocab) expected, "
            f"got {ids.shape} and {s.shape}"
        )
    if ngram_size < 1:
        raise InvalidArgument(f"NGramRepeatBlock: ngram_size must be positive, got {ngram_size}")
    out = s.copy()
    n, length = int(ngram_size), ids.shape[1]
    if length < n:
        return out
    windows = np.lib.stride_tricks.sliding_window_view(ids, n, axis=1)  # (batch, length - n + 1, n)
    tail = ids[:, length - n + 1 :]  # the last n - 1 tokens
    hits = np.all(windows[:, :, : n - 1] == tail[:, None, :], axis=2)
    rows, starts = np.nonzero(hits)
    banned = windows[rows, starts, n - 1]
    if banned.size and (banned.min() < 0 or banned.max() >= s.shape[1]):
        raise InvalidArgument(f"NGramRepeatBlock: a token id is outside the vocabulary of {s.shape[1]}")
    out[rows, banned] = -np.inf
    return out


@shape_rule("NGramRepeatBlock", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, ctx.input_elem(1), ctx.input_shape(1))
