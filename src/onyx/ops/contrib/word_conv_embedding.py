"""com.microsoft WordConvEmbedding: a character-level CNN word embedding. Every word (a row of char
ids, 0 padding) is embedded char by char with C, convolved with the filters W (window
``conv_window_size``, stride 1) plus B, passed through tanh and max-pooled over its windows.

As onnxruntime's kernel does: a word's length counts its positive ids (0 when the first id is not
positive); the first max(length, window) ids are embedded, so the windows cover the word from its
start; a word of length 0 gives a row of zeros (onnxruntime leaves that row unwritten)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule

FLOAT = 1


def _check(seq, w, b, c, embedding_size, conv_window_size, char_embedding_size) -> None:
    if seq.ndim != 2 or w.ndim != 4 or b.ndim != 1 or c.ndim != 2:
        raise InvalidArgument(
            f"WordConvEmbedding: Sequence [words, chars], W [filters, 1, window, char size], B [filters] and "
            f"C [chars, char size] expected, got {seq.shape}, {w.shape}, {b.shape}, {c.shape}"
        )
    checks = (
        (embedding_size, w.shape[0], "embedding_size", "the number of filters"),
        (conv_window_size, w.shape[2], "conv_window_size", "the filters' width"),
        (char_embedding_size, c.shape[1], "char_embedding_size", "C's width"),
    )
    for want, got, name, what in checks:
        if want != -1 and want != got:
            raise InvalidArgument(f"WordConvEmbedding: {name} {want} does not match {what} {got}")
    if c.shape[1] != w.shape[3] or b.shape[0] != w.shape[0]:
        raise InvalidArgument(f"WordConvEmbedding: W {w.shape} does not fit C {c.shape} and B {b.shape}")
    if seq.shape[1] < w.shape[2]:
        raise InvalidArgument(
            f"WordConvEmbedding: words of {seq.shape[1]} chars are shorter than the window {w.shape[2]}"
        )


@op("WordConvEmbedding", domain="com.microsoft", since=1)
def word_conv_embedding(
    Sequence,
    W,
    B,
    C,
    *,
    char_embedding_size=-1,
    conv_window_size=-1,
    embedding_size=-1,  # noqa: N803
):
    seq, w, b, c = (np.asarray(a) for a in (Sequence, W, B, C))
    _check(seq, w, b, c, embedding_size, conv_window_size, char_embedding_size)
    if seq.size and (seq.min() < 0 or seq.max() >= c.shape[0]):
        raise InvalidArgument(f"WordConvEmbedding: char ids must be in [0, {c.shape[0]})")
    filters, _, window, _ = w.shape
    kernel = w.reshape(filters, -1).astype(np.float32)
    lengths = np.where(seq[:, 0] > 0, (seq > 0).sum(axis=1), 0)
    out = np.zeros((seq.shape[0], filters), np.float32)
    for i in np.nonzero(lengths)[0]:
        span = max(int(lengths[i]), window)
        emb = c[seq[i, :span]].astype(np.float32)  # (span, char size)
        windows = np.lib.stride_tricks.sliding_window_view(emb, window, axis=0)  # (n, char size, window)
        flat = windows.transpose(0, 2, 1).reshape(len(windows), -1)
        out[i] = np.tanh(flat @ kernel.T + b).max(axis=0)
    return out


@shape_rule("WordConvEmbedding", domain="com.microsoft")
def _shape(ctx) -> None:
    s, w = ctx.input_shape(0), ctx.input_shape(1)
    ctx.set_output(0, FLOAT, [s[0] if s else None, w[0] if w else None])
