"""TfIdfVectorizer: count (optionally skip-) n-grams of a pool in each row, weighted TF, IDF or TFIDF.

Tokens are first mapped to ids in the pool's vocabulary (-1 when absent); each n-gram of ids then
becomes one integer code, and the codes of every (n, skip) window are looked up in the sorted codes of
the pool's n-grams with ``searchsorted``: no Python loop per token or per n-gram.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


def _token_ids(x: np.ndarray, pool_tokens: np.ndarray, strings: bool):
    """(vocabulary size, ids of x's tokens in the pool vocabulary, pool tokens as ids)."""
    if strings:
        vocab = {s: i for i, s in enumerate(dict.fromkeys(pool_tokens.tolist()))}
        uniq, inverse = np.unique(x.reshape(-1), return_inverse=True) if x.size else (x.reshape(-1), None)
        if x.size:
            uid = np.fromiter((vocab.get(s, -1) for s in uniq.tolist()), dtype=np.int64, count=len(uniq))
            ids = uid[inverse.reshape(-1)].reshape(x.shape)
        else:
            ids = np.zeros(x.shape, dtype=np.int64)
        pool_ids = np.fromiter(
            (vocab[s] for s in pool_tokens.tolist()), dtype=np.int64, count=len(pool_tokens)
        )
        return len(vocab), ids, pool_ids
    vocab = np.unique(pool_tokens)
    if len(vocab) == 0:
        return 0, np.full(x.shape, -1, dtype=np.int64), pool_tokens.astype(np.int64)
    xi = x.astype(np.int64, copy=False)
    pos = np.clip(np.searchsorted(vocab, xi), 0, len(vocab) - 1)
    ids = np.where(vocab[pos] == xi, pos, -1).astype(np.int64)
    return len(vocab), ids, np.searchsorted(vocab, pool_tokens).astype(np.int64)


def _encode(grams: np.ndarray, v: int) -> np.ndarray:
    """One integer per row of ids (rows of -1-free ids in [0, v))."""
    code = np.zeros(grams.shape[:-1], dtype=np.int64)
    for j in range(grams.shape[-1]):
        code = code * v + grams[..., j]
    return code


@op("TfIdfVectorizer", since=9)
def tf_idf_vectorizer(
    X,
    *,
    max_gram_length,
    max_skip_count,
    min_gram_length,
    mode,
    ngram_counts,
    ngram_indexes,
    pool_int64s=None,
    pool_strings=None,
    weights=None,
):
    x = np.asarray(X)
    if x.ndim not in (1, 2):
        raise InvalidArgument(f"TfIdfVectorizer: input must be 1-D or 2-D, got shape {x.shape}")
    if (pool_int64s is None) == (pool_strings is None):
        raise InvalidArgument("TfIdfVectorizer: exactly one of pool_int64s and pool_strings must be set")
    strings = pool_strings is not None
    if strings != (x.dtype == object or x.dtype.kind in "US"):
        raise InvalidArgument(
            f"TfIdfVectorizer: input element type {x.dtype} does not match the "
            f"{'string' if strings else 'int64'} pool"
        )
    if mode not in ("TF", "IDF", "TFIDF"):
        raise InvalidArgument(f"TfIdfVectorizer: mode must be TF, IDF or TFIDF, got {mode!r}")
    if not 1 <= min_gram_length <= max_gram_length:
        raise InvalidArgument(
            f"TfIdfVectorizer: need 1 <= min_gram_length ({min_gram_length}) <= max_gram_length "
            f"({max_gram_length})"
        )
    if max_skip_count < 0:
        raise InvalidArgument(f"TfIdfVectorizer: max_skip_count must be >= 0, got {max_skip_count}")
    pool = np.asarray(pool_strings if strings else pool_int64s, dtype=object if strings else np.int64)
    idx = np.asarray(ngram_indexes, dtype=np.int64)
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    if strings and rows.dtype != object:
        rows = rows.astype(object)
    batch, width = rows.shape
    out_dim = int(idx.max()) + 1 if idx.size else 0

    # Pool levels: level n (1-based) holds n-grams from ngram_counts[n-1] to the next start.
    starts = list(ngram_counts) + [len(pool)]
    levels = []  # (n, first gram number, grams as (k, n) token positions in pool)
    gram_no = 0
    for n in range(1, len(ngram_counts) + 1):
        a, b = starts[n - 1], starts[n]
        if b < a or (b - a) % n:
            raise InvalidArgument(
                f"TfIdfVectorizer: ngram_counts {list(ngram_counts)} give level {n} {b - a} pool entries, "
                f"not a multiple of {n}"
            )
        levels.append((n, gram_no, a, b))
        gram_no += (b - a) // n
    n_grams = gram_no
    if idx.shape[0] != n_grams:
        raise InvalidArgument(
            f"TfIdfVectorizer: ngram_indexes has {idx.shape[0]} entries, the pool holds {n_grams} n-grams"
        )
    w = np.ones(n_grams, dtype=np.float32) if weights is None else np.asarray(weights, dtype=np.float32)
    if mode != "TF" and w.shape[0] != n_grams:
        raise InvalidArgument(f"TfIdfVectorizer: weights has {w.shape[0]} entries, expected {n_grams}")

    v, ids, pool_ids = _token_ids(rows, pool, strings)
    counts = np.zeros(batch * max(n_grams, 1), dtype=np.int64)
    row_base = (np.arange(batch, dtype=np.int64) * n_grams)[:, None]
    for n, first, a, b in levels:
        if not min_gram_length <= n <= max_gram_length or b == a:
            continue
        grams = pool_ids[a:b].reshape(-1, n)
        big = v > 1 and n * np.log2(v) >= 62
        if big:  # too many combinations for one int64 code: look n-grams up in a dict instead
            table = {tuple(g): first + k for k, g in enumerate(grams.tolist())}
        else:
            codes = _encode(grams, v)
            order = np.argsort(codes, kind="stable")
            sorted_codes = codes[order]
        for skip in range(max_skip_count + 1 if n > 1 else 1):
            step = skip + 1
            span = (n - 1) * step + 1
            if span > width:
                break
            window = np.arange(width - span + 1)[:, None] + np.arange(n) * step  # (W, n)
            g = ids[:, window]  # (B, W, n)
            valid = (g >= 0).all(axis=-1)
            if big:
                hits = [
                    (bi, table.get(tuple(t), -1))
                    for bi, row in enumerate(g.tolist())
                    for t, ok in zip(row, valid[bi].tolist())
                    if ok
                ]
                flat = np.array([bi * n_grams + k for bi, k in hits if k >= 0], dtype=np.int64)
            else:
                code = _encode(np.where(g >= 0, g, 0), v)
                pos = np.clip(np.searchsorted(sorted_codes, code), 0, len(sorted_codes) - 1)
                hit = valid & (sorted_codes[pos] == code)
                flat = (row_base + first + order[pos])[hit]
            if flat.size:
                counts += np.bincount(flat, minlength=counts.shape[0])
    counts = counts[: batch * n_grams].reshape(batch, n_grams).astype(np.float32)
    if mode == "IDF":
        values = (counts > 0).astype(np.float32) * w
    elif mode == "TFIDF":
        values = counts * w
    else:
        values = counts
    out = np.zeros((batch, out_dim), dtype=np.float32)
    np.add.at(out, (slice(None), idx), values)
    return out.reshape(-1) if x.ndim == 1 else out


@shape_rule("TfIdfVectorizer")
def _tf_idf_vectorizer_shape(ctx) -> None:
    """float [max(ngram_indexes) + 1] for 1-D input, [B, max(ngram_indexes) + 1] for 2-D."""
    x = ctx.input_shape(0)
    idx = ctx.attr("ngram_indexes") or []
    width = max(idx) + 1 if idx else 0
    if x is None:
        ctx.set_output(0, 1, None)
    elif len(x) == 1:
        ctx.set_output(0, 1, [width])
    elif len(x) == 2:
        ctx.set_output(0, 1, [x[0], width])
    else:
        ctx.fail(f"input must be 1-D or 2-D, got {x}")
