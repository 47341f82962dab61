"""com.microsoft MurmurHash3: the 32-bit x86 MurmurHash3 of every element (skl2onnx's FeatureHasher).

Numbers are hashed through their little-endian bytes (4 or 8 by type), strings through their UTF-8
bytes. ``positive=1`` gives uint32 hashes, ``positive=0`` the same bits as int32. Vectorised over the
elements: strings are laid out as rows of a zero-padded byte matrix and mixed four bytes at a time,
each row taking part in as many rounds as it has whole blocks.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule

U32 = np.uint32
C1, C2 = U32(0xCC9E2D51), U32(0x1B873593)
NUMERIC = (np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << U32(r)) | (x >> U32(32 - r))


def _scramble(k: np.ndarray) -> np.ndarray:
    k = k * C1
    return _rotl(k, 15) * C2


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = _rotl(h ^ _scramble(k), 13)
    return h * U32(5) + U32(0xE6546B64)


def _finish(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h ^ length.astype(U32)
    h ^= h >> U32(16)
    h *= U32(0x85EBCA6B)
    h ^= h >> U32(13)
    h *= U32(0xC2B2AE35)
    h ^= h >> U32(16)
    return h


def hash_fixed(words: np.ndarray, seed: int) -> np.ndarray:
    """Hashes of keys of ``words.shape[1]`` whole 4-byte blocks (uint32 [n, blocks], little endian)."""
    h = np.full(words.shape[0], seed, dtype=U32)
    for j in range(words.shape[1]):
        h = _mix(h, words[:, j])
    return _finish(h, np.full(words.shape[0], 4 * words.shape[1]))


def hash_bytes(keys: list[bytes], seed: int) -> np.ndarray:
    """Hashes of byte strings of any lengths."""
    n = len(keys)
    lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
    width = int(lengths.max(initial=0))
    width += -width % 4
    padded = np.zeros((n, max(width, 4)), dtype=np.uint8)
    flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
    if flat.size:  # every key's bytes into its row, in one scatter
        rows = np.repeat(np.arange(n), lengths)
        starts = np.cumsum(lengths) - lengths
        padded[rows, np.arange(flat.size) - np.repeat(starts, lengths)] = flat
    words = padded.view("<u4").astype(U32)
    blocks = lengths // 4
    h = np.full(n, seed, dtype=U32)
    for j in range(int(blocks.max(initial=0))):
        live = blocks > j
        h[live] = _mix(h[live], words[live, j])
    tail = lengths % 4
    has_tail = tail > 0
    if has_tail.any():
        rows = np.nonzero(has_tail)[0]
        k = words[rows, blocks[rows]]  # the padding bytes past the tail are zero
        h[rows] ^= _scramble(k)
    return _finish(h, lengths)


@op("MurmurHash3", domain="com.microsoft", since=1)
def murmur_hash3(X, *, positive=1, seed=0):  # noqa: N803
    x = np.asarray(X)
    seed = int(seed) & 0xFFFFFFFF
    if x.dtype == object or x.dtype.kind in "US":
        keys = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in x.reshape(-1).tolist()]
        h = hash_bytes(keys, seed)
    elif x.dtype.type in NUMERIC:
        le = x.astype(x.dtype.newbyteorder("<"), copy=False).reshape(-1)
        h = hash_fixed(np.ascontiguousarray(le).view("<u4").reshape(le.size, -1).astype(U32), seed)
    else:
        raise InvalidArgument(f"MurmurHash3: unsupported input element type {x.dtype}")
    h = h.reshape(x.shape)
    return h if positive else h.view(np.int32)


@shape_rule("MurmurHash3", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, 12 if ctx.attr("positive", 1) else 6, ctx.input_shape(0))
