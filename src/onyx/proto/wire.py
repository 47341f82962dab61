"""The protobuf wire format: varints, fixed-width values and length-delimited fields.

Reading works over any buffer (bytes, memoryview over an mmap) by offsets, so submessages and
``raw_data`` are sliced, never copied. Every length is checked against the end of its enclosing
message before it is used: a lying length is an :class:`~onyx.errors.InvalidProtobuf` at that offset.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

from onyx.errors import InvalidProtobuf

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
_U64 = 1 << 64
_I63 = 1 << 63
_f32 = struct.Struct("<f")
_f64 = struct.Struct("<d")


def read_varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    """Decode a varint at ``pos``; return (value, new position)."""
    if pos >= end:
        raise InvalidProtobuf("truncated varint", pos)
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    p = pos + 1
    while True:
        if p >= end:
            raise InvalidProtobuf("truncated varint", pos)
        b = buf[p]
        result |= (b & 0x7F) << shift
        p += 1
        if b < 0x80:
            return result & (_U64 - 1), p
        shift += 7
        if shift >= 70:
            raise InvalidProtobuf("varint longer than 10 bytes", pos)


def to_signed(v: int) -> int:
    """Reinterpret a decoded varint as a two's complement int64."""
    return v - _U64 if v >= _I63 else v


def to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def iter_fields(buf: Any, pos: int, end: int) -> Iterator[tuple[int, int, Any, int]]:
    """Yield (field number, wire type, value, start offset) for each field in buf[pos:end].

    The value is an int for VARINT, the raw 4 or 8 bytes for I32/I64, and a (start, stop) pair for LEN.
    """
    while pos < end:
        start = pos
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = read_varint(buf, pos, end)
        fn = key >> 3
        wt = key & 7
        if fn == 0:
            raise InvalidProtobuf("field number 0", start)
        if wt == LEN:
            n = buf[pos] if pos < end else 0x80
            if n < 0x80:
                pos += 1
            else:
                n, pos = read_varint(buf, pos, end)
            stop = pos + n
            if stop > end:
                raise InvalidProtobuf(f"field {fn}: length {n} runs past the end of its message", start)
            yield fn, wt, (pos, stop), start
            pos = stop
        elif wt == VARINT:
            v, pos = read_varint(buf, pos, end)
            yield fn, wt, v, start
        elif wt == I32:
            if pos + 4 > end:
                raise InvalidProtobuf(f"field {fn}: truncated 32-bit value", start)
            yield fn, wt, bytes(buf[pos : pos + 4]), start
            pos += 4
        elif wt == I64:
            if pos + 8 > end:
                raise InvalidProtobuf(f"field {fn}: truncated 64-bit value", start)
            yield fn, wt, bytes(buf[pos : pos + 8]), start
            pos += 8
        elif wt == SGROUP:
            pos = _skip_group(buf, pos, end, fn, start)
            yield fn, wt, None, start
        else:
            raise InvalidProtobuf(f"field {fn}: invalid wire type {wt}", start)


def _skip_group(buf: Any, pos: int, end: int, fn: int, start: int, depth: int = 0) -> int:
    if depth > 64:
        raise InvalidProtobuf("groups nested too deeply", start)
    while pos < end:
        key, pos = read_varint(buf, pos, end)
        f, wt = key >> 3, key & 7
        if wt == EGROUP:
            if f != fn:
                raise InvalidProtobuf("mismatched end-group", start)
            return pos
        if wt == VARINT:
            _, pos = read_varint(buf, pos, end)
        elif wt == I64:
            pos += 8
        elif wt == I32:
            pos += 4
        elif wt == LEN:
            n, pos = read_varint(buf, pos, end)
            pos += n
        elif wt == SGROUP:
            pos = _skip_group(buf, pos, end, f, start, depth + 1)
        else:
            raise InvalidProtobuf(f"invalid wire type {wt} in group", start)
        if pos > end:
            raise InvalidProtobuf("group runs past the end of its message", start)
    raise InvalidProtobuf("unterminated group", start)


def text(buf: Any, span: tuple[int, int]) -> str:
    """Decode a string field (UTF-8; invalid bytes kept via surrogateescape)."""
    b = bytes(buf[span[0] : span[1]])
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("utf-8", errors="surrogateescape")


def f32(raw: bytes) -> float:
    return _f32.unpack(raw)[0]


def f64(raw: bytes) -> float:
    return _f64.unpack(raw)[0]


def packed_varints(buf: Any, span: tuple[int, int]) -> np.ndarray:
    """Decode a packed run of varints to uint64, vectorised with numpy."""
    data = np.frombuffer(buf, dtype=np.uint8, count=span[1] - span[0], offset=span[0])
    return varints_to_uint64(data, span[0])


def varints_to_uint64(data: np.ndarray, offset: int = 0) -> np.ndarray:
    if data.size == 0:
        return np.zeros(0, dtype=np.uint64)
    ends = np.flatnonzero(data < 0x80)
    if ends.size == 0 or ends[-1] != data.size - 1:
        raise InvalidProtobuf("truncated packed varint", offset + int(data.size))
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise InvalidProtobuf("packed varint longer than 10 bytes", offset)
    pos_in = np.arange(data.size) - np.repeat(starts, lengths)
    vals = (data & 0x7F).astype(np.uint64) << (7 * pos_in).astype(np.uint64)
    return np.bitwise_or.reduceat(vals, starts)


#: runs shorter than this are left to the field-by-field parser (numpy's set-up costs more)
BULK_MIN_BYTES = 64


def unpacked_run(buf: Any, pos: int, end: int, key: int) -> tuple[np.ndarray, int] | None:
    """Decode, vectorised, the run of consecutive unpacked fields with the one-byte ``key`` starting at
    ``pos``: VARINT keys give uint64 values, I32 keys the raw little-endian 4-byte words (uint32).
    Returns (values, offset after the run), or None when the run is too short to be worth it.

    A run is exactly what the field-by-field parser reads: each field starts where the previous one
    ended and begins with ``key``; the run stops at the first byte that breaks this. (Old writers,
    onnx's among them, store repeated attribute ints/floats unpacked: one key per value.)"""
    if end - pos < BULK_MIN_BYTES:
        return None
    b = np.frombuffer(buf, dtype=np.uint8, count=end - pos, offset=pos)
    if key & 7 == I32:
        rows = b[: b.size // 5 * 5].reshape(-1, 5)
        bad = np.flatnonzero(rows[:, 0] != key)
        n = int(bad[0]) if bad.size else rows.shape[0]
        if n < 2:
            return None
        return rows[:n, 1:].copy().view("<u4").reshape(-1), pos + 5 * n
    # VARINT: every byte below 0x80 ends a varint or is a key (the key is one byte below 0x80)
    term = np.flatnonzero(b < 0x80)
    keys, ends = term[0::2], term[1::2]
    n = min(keys.size, ends.size)
    keys, ends = keys[:n], ends[:n]
    ok = (b[keys] == key) & (ends - keys <= 10)
    if n:
        ok[0] &= keys[0] == 0
        ok[1:] &= keys[1:] == ends[:-1] + 1
    bad = np.flatnonzero(~ok)
    n = int(bad[0]) if bad.size else n
    if n < 2:
        return None
    stop = int(ends[n - 1]) + 1
    body = np.ones(stop, dtype=bool)
    body[keys[:n]] = False
    return varints_to_uint64(b[:stop][body], pos), pos + stop


def decode_packed(segments: list[Any], field_no: int) -> np.ndarray:
    """Concatenate the segments of a typed TensorProto field into one numpy array.

    Each segment is either ("packed", buf, span) for a length-delimited run or a single scalar that
    arrived unpacked. Field numbers: 4 float, 5 int32, 7 int64, 10 double, 11 uint64.
    """
    parts = []
    for seg in segments:
        if isinstance(seg, tuple):
            _, buf, span = seg
            if field_no == 4:
                parts.append(_fixed(buf, span, "<f4"))
            elif field_no == 10:
                parts.append(_fixed(buf, span, "<f8"))
            else:
                v = packed_varints(buf, span)
                parts.append(_int_view(v, field_no))
        else:
            parts.append(np.array([seg], dtype=_FIELD_DTYPES[field_no]))
    if not parts:
        return np.zeros(0, dtype=_FIELD_DTYPES.get(field_no, np.int64))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


_FIELD_DTYPES = {4: np.float32, 5: np.int32, 7: np.int64, 10: np.float64, 11: np.uint64}


def _fixed(buf: Any, span: tuple[int, int], dtype: str) -> np.ndarray:
    n = span[1] - span[0]
    size = np.dtype(dtype).itemsize
    if n % size:
        raise InvalidProtobuf(f"packed fixed-width field of {n} bytes is not a multiple of {size}", span[0])
    return np.frombuffer(buf, dtype=dtype, count=n // size, offset=span[0])


def _int_view(v: np.ndarray, field_no: int) -> np.ndarray:
    if field_no == 5:
        return (v & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    if field_no == 7:
        return v.view(np.int64)
    return v


# ---------------------------------------------------------------------------------------------
# Writing


def varint(v: int) -> bytes:
    """Encode a non-negative or two's complement int64 value as a varint."""
    if v < 0:
        v += _U64
    if v < 0x80:
        return _SMALL[v]
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


_SMALL = [bytes([i]) for i in range(128)]


def tag(fn: int, wt: int) -> bytes:
    return varint((fn << 3) | wt)


class Writer:
    """Accumulates the chunks of one message; large payloads are kept as views, not copied."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.size = 0

    def raw(self, b: Any) -> None:
        n = memoryview(b).nbytes
        if n:
            self.parts.append(b)
            self.size += n

    def uint(self, fn: int, v: int) -> None:
        self.raw(tag(fn, VARINT) + varint(v))

    def float32(self, fn: int, v: float) -> None:
        self.raw(tag(fn, I32) + _f32.pack(v))

    def bytes_(self, fn: int, b: Any) -> None:
        n = memoryview(b).nbytes
        self.raw(tag(fn, LEN) + varint(n))
        self.raw(b)

    def string(self, fn: int, s: str) -> None:
        self.bytes_(fn, s.encode("utf-8", errors="surrogateescape"))

    def message(self, fn: int, sub: Writer) -> None:
        self.raw(tag(fn, LEN) + varint(sub.size))
        self.parts.extend(sub.parts)
        self.size += sub.size

    def extend(self, other: Writer) -> None:
        """Append another writer's chunks (already tagged fields)."""
        self.parts.extend(other.parts)
        self.size += other.size

    def packed_ints(self, fn: int, values: Any) -> None:
        arr = np.asarray(values)
        if arr.size == 0:
            return
        self.bytes_(fn, encode_varints(arr.astype(np.int64, copy=False).view(np.uint64)))

    def getvalue(self) -> bytes:
        return b"".join(bytes(p) if not isinstance(p, bytes) else p for p in self.parts)


def encode_varints(v: np.ndarray) -> bytes:
    """Encode a uint64 array as concatenated varints, vectorised."""
    v = np.ascontiguousarray(v, dtype=np.uint64).reshape(-1)
    if v.size == 0:
        return b""
    nbits = np.zeros(v.size, dtype=np.int64)
    nz = v != 0
    nbits[nz] = np.floor(np.log2(v[nz].astype(np.float64))).astype(np.int64) + 1
    # float rounding near powers of two: fix up exactly
    big = nz & (nbits < 64)
    over = big & ((v >> nbits.clip(0, 63).astype(np.uint64)) != 0)
    nbits[over] += 1
    under = nz & (nbits > 0) & ((v >> (nbits - 1).clip(0, 63).astype(np.uint64)) == 0)
    nbits[under] -= 1
    nbytes = np.maximum(1, (nbits + 6) // 7)
    total = int(nbytes.sum())
    out = np.empty(total, dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(nbytes)[:-1]])
    idx = np.arange(total) - np.repeat(starts, nbytes)
    vals = np.repeat(v, nbytes)
    byte = ((vals >> (7 * idx).astype(np.uint64)) & np.uint64(0x7F)).astype(np.uint8)
    last = idx == np.repeat(nbytes - 1, nbytes)
    byte[~last] |= 0x80
    out[:] = byte
    return out.tobytes()
