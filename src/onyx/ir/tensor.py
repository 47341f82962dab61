"""Tensors of the in-memory model: lazy, zero-copy views over the bytes they were loaded from.

A :class:`Tensor` keeps the storage it was decoded with (``raw_data``, one of the typed fields, or an
external-data reference) and converts to numpy only when asked, with ``np.frombuffer`` over the
original (often memory-mapped) buffer, so loading a model never copies its weights. The encoder writes
the same storage back, so a load/save round trip is exact.
"""

from __future__ import annotations

import math
import mmap
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument, InvalidGraph
from onyx.ir.dtypes import PACKED_SUBBYTE, SIX_BIT, DataType, from_numpy


@dataclass
class ExternalData:
    """Where a tensor's bytes live outside the model file (TensorProto.external_data)."""

    location: str
    offset: int = 0
    length: int | None = None
    entries: list[tuple[str, str]] = field(default_factory=list)  # all key/value pairs, in order
    base_dir: str | None = None  # the folder the location is relative to

    @classmethod
    def from_entries(cls, entries: list[tuple[str, str]], base_dir: str | None) -> ExternalData:
        kv = dict(entries)
        try:
            offset = int(kv.get("offset", "0") or 0)
            length = int(kv["length"]) if kv.get("length") not in (None, "") else None
        except ValueError:
            raise InvalidGraph(f"external data entries have a non-integer offset or length: {kv}") from None
        if offset < 0 or (length is not None and length < 0):
            raise InvalidGraph(f"external data offset/length must not be negative: {kv}")
        return cls(kv.get("location", ""), offset, length, list(entries), base_dir)


class Tensor:
    """A constant tensor: name, element type, dims and lazily converted data."""

    __slots__ = (
        "name",
        "data_type",
        "dims",
        "doc_string",
        "metadata_props",
        "raw",
        "typed",
        "typed_field",
        "external",
        "data_location",
        "segment",
        "unknown",
        "explicit",
        "_array",
        "_owner",
    )

    def __init__(
        self,
        name: str | None = None,
        data_type: int = 0,
        dims: tuple[int, ...] = (),
        *,
        raw: Any = None,
        array: np.ndarray | None = None,
    ):
        self.name = name
        self.data_type = data_type
        self.dims = tuple(dims)
        self.doc_string: str | None = None
        self.metadata_props: list[tuple[str, str]] = []
        self.raw = raw  # bytes-like (memoryview over the file) or None
        self.typed: list[Any] | None = None  # segments of the typed field, as onyx.proto decoded them
        self.typed_field: int | None = None  # which field they came from (onyx.proto.typed_data)
        self.external: ExternalData | None = None
        self.data_location: int | None = None
        self.segment: tuple[int | None, int | None] | None = None
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()
        self._array = array
        self._owner: Any = None  # keeps the buffer (mmap) alive

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_numpy(cls, array: Any, name: str | None = None) -> Tensor:
        """A tensor holding ``array`` (kept as is; encoded as raw_data or string_data on save)."""
        arr = np.asarray(array)
        dt = from_numpy(arr.dtype)
        if dt == DataType.STRING and arr.dtype != object:
            arr = arr.astype(object)
        return cls(name, int(dt), arr.shape, array=arr)

    def shared_copy(self) -> Tensor:
        """A new tensor object over the same data (never copied): its fields can change (a session
        storing a repacked weight, a pass renaming it) without touching this one. A writeable array is
        shared as a read-only view, so that freezing or writing through the copy cannot reach it."""
        new = object.__new__(Tensor)
        for name in Tensor.__slots__:
            v = getattr(self, name)
            setattr(new, name, list(v) if isinstance(v, list) else v)
        arr = self._array
        if isinstance(arr, np.ndarray) and arr.flags.writeable and arr.dtype != object:
            arr = arr.view()
            arr.flags.writeable = False
            new._array = arr
        return new

    # -- properties ---------------------------------------------------------------------------
    @property
    def dtype(self) -> DataType:
        try:
            return DataType(self.data_type)
        except ValueError:
            raise InvalidArgument(
                f"tensor {self.name!r}: unknown element type code {self.data_type}"
            ) from None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.dims

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        """Bytes of the data as stored in raw_data (packed for sub-byte types)."""
        dt = self.dtype
        if dt == DataType.STRING:
            return sum(len(s) for s in self._strings())
        return (self.size * dt.bitwidth + 7) // 8

    def is_external(self) -> bool:
        return self.external is not None and self._array is None and self.raw is None

    def __repr__(self) -> str:
        try:
            t = self.dtype.name
        except InvalidArgument:
            t = str(self.data_type)
        return f"Tensor({self.name!r}, {t}, {list(self.dims)})"

    # -- conversion ---------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The data as a numpy array (a read-only view of the file where possible)."""
        if self._array is None:
            self._array = self._to_numpy()
        return self._array

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def raw_bytes(self) -> Any:
        """The little-endian bytes of the data, as raw_data would hold them (not for strings)."""
        if self.raw is not None:
            return self.raw
        if self._array is not None and self.typed is None and self.external is None:
            return array_to_raw(self._array, self.dtype)
        if self.external is not None and self._array is None:
            from onyx.proto.external_data import read_external

            return read_external(self)
        return array_to_raw(self.numpy(), self.dtype)

    def _strings(self) -> list[bytes]:
        if self.typed is not None:
            return list(self.typed)
        arr = self.numpy()
        return [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in arr.ravel().tolist()]

    def _to_numpy(self) -> np.ndarray:
        dt = self.dtype
        if dt == DataType.UNDEFINED:
            raise InvalidGraph(f"tensor {self.name!r} has element type UNDEFINED")
        if self.segment is not None:
            raise InvalidGraph(f"tensor {self.name!r} is segmented; segments are not supported")
        dims = self.dims
        if any(d < 0 for d in dims):
            raise InvalidGraph(f"tensor {self.name!r} has a negative dimension: {list(dims)}")
        check_representable(dims, self.name)
        count = math.prod(dims)
        if dt == DataType.STRING:
            strings = self.typed or []
            if self.raw is not None and len(self.raw):
                raise InvalidGraph(f"string tensor {self.name!r} must use string_data, not raw_data")
            if len(strings) != count:
                raise InvalidGraph(
                    f"tensor {self.name!r}: {len(strings)} strings for shape {list(dims)} ({count} elements)"
                )
            out = np.empty(count, dtype=object)
            out[:] = [_decode_str(s) for s in strings]
            return out.reshape(dims)
        raw = self.raw
        if raw is None and self.external is not None:
            from onyx.proto.external_data import read_external

            raw = read_external(self)
        if raw is not None:
            if isinstance(self._owner, FileMap) and dt not in PACKED_SUBBYTE and dt not in SIX_BIT:
                arr = _read_unaligned(self._owner, raw, dt, dims)
                if arr is not None:
                    return arr
            arr = raw_to_array(raw, dt, dims, self.name)
            if (
                self._owner is not None
                and arr.size
                and not np.may_share_memory(arr, np.frombuffer(raw, np.uint8))
            ):
                _release_pages(self._owner, raw)  # copied (unaligned): the file's pages are not needed
            return arr
        from onyx.proto.typed_data import typed_to_array

        return typed_to_array(self.typed or [], self.typed_field, dt, dims, self.name)


class FileMap(mmap.mmap):
    """A read-only mapping of a model file that remembers the file: ``path`` and ``stamp``
    (inode, size, mtime) as they were when it was mapped."""

    path: str = ""
    stamp: tuple = ()


def _read_unaligned(owner: FileMap, raw: Any, dt: DataType, dims: tuple[int, ...]) -> np.ndarray | None:
    """An unaligned tensor read straight from the file into an aligned array (no page faults on the
    mapping, which then needs no pages for it at all); None when aligned (the zero-copy view serves),
    when the size is wrong (raw_to_array reports it) or when the file changed since it was mapped."""
    npdt = dt.numpy_dtype
    view = np.frombuffer(raw, dtype=np.uint8)
    count = math.prod(dims)
    if view.size != count * npdt.itemsize or view.size == 0 or view.ctypes.data % npdt.itemsize == 0:
        return None
    if not owner.path or sys.byteorder != "little":
        return None
    try:
        offset = view.ctypes.data - np.frombuffer(owner, dtype=np.uint8, count=0).ctypes.data
        fd = os.open(owner.path, os.O_RDONLY)
    except (OSError, ValueError, TypeError, BufferError):
        return None
    try:
        st = os.fstat(fd)
        if (st.st_ino, st.st_size, st.st_mtime_ns) != owner.stamp:
            return None  # the path now names another file (saved over): read the mapping instead
        out = prefaulted_empty((count,), npdt)
        buf = memoryview(out.reshape(-1).view(np.uint8))
        done = 0
        while done < view.size:
            n = os.preadv(fd, [buf[done:]], offset + done)
            if n <= 0:
                return None
            done += n
        return out.reshape(dims)
    except OSError:
        return None
    finally:
        os.close(fd)


#: arrays from this many bytes that prefaulted_empty maps with their pages populated at once
PREFAULT_MIN_BYTES = 1 << 20


def prefaulted_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """``np.empty(shape, dtype)``, its pages populated by one mmap call (MAP_POPULATE, Linux) when it is
    at least PREFAULT_MIN_BYTES: for arrays written once and kept (weights read or repacked when a
    session is created), where a fault per 4 KiB page on first touch cost ~7 us each in a VM (a 9.4 MB
    weight 17-24 ms to fill, 2.2 ms this way). The mapping is released with the array."""
    dt = np.dtype(dtype)
    nbytes = math.prod(shape) * dt.itemsize
    flags = getattr(mmap, "MAP_POPULATE", 0)
    if nbytes < PREFAULT_MIN_BYTES or not flags or dt.hasobject:
        return np.empty(shape, dtype=dt)
    try:
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags)
    except (OSError, ValueError):
        return np.empty(shape, dtype=dt)
    return np.frombuffer(m, dtype=dt).reshape(shape)


def _release_pages(owner: Any, raw: Any) -> None:
    """Tell the kernel the mapped pages under ``raw`` may go (read-only file mapping: they are re-read from
    the file if touched again), so a weight copied out of the model file does not count twice in RSS."""
    import mmap

    if not isinstance(owner, mmap.mmap) or not hasattr(owner, "madvise"):
        return
    try:
        base = np.frombuffer(owner, dtype=np.uint8, count=0).ctypes.data if len(owner) else 0
        start = np.frombuffer(raw, dtype=np.uint8).ctypes.data - base
        n = memoryview(raw).nbytes
    except (ValueError, TypeError, BufferError):
        return
    page = mmap.PAGESIZE
    first = -(-start // page) * page
    last = (start + n) // page * page
    if 0 <= first < last <= len(owner):
        try:
            owner.madvise(mmap.MADV_DONTNEED, first, last - first)
        except (OSError, ValueError, AttributeError):
            pass


def _decode_str(b: bytes) -> str:
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(b).decode("utf-8", errors="surrogateescape")


def _expected_raw_bytes(dt: DataType, count: int) -> int:
    if dt in PACKED_SUBBYTE:
        return -(-count // PACKED_SUBBYTE[dt])
    if dt in SIX_BIT:
        return -(-count * 6 // 8)
    return count * dt.numpy_dtype.itemsize


def check_representable(dims: tuple[int, ...], name: str | None) -> None:
    """Refuse shapes numpy cannot build, even empty ones: over 64 dims, or non-zero dims past 2**62."""
    if len(dims) > 64 or math.prod(d for d in dims if d) > 2**62:
        raise InvalidGraph(f"tensor {name!r}: shape {list(dims)} is past what an array can have")


def raw_to_array(raw: Any, dt: DataType, dims: tuple[int, ...], name: str | None = None) -> np.ndarray:
    """Decode raw_data bytes to an array; zero-copy except for packed sub-byte types."""
    count = math.prod(dims)
    n = memoryview(raw).nbytes
    expected = _expected_raw_bytes(dt, count)
    if n != expected:
        raise InvalidGraph(
            f"tensor {name!r}: raw data holds {n} bytes but shape {list(dims)} of {dt.name} needs {expected}"
        )
    npdt = dt.numpy_dtype
    if dt in PACKED_SUBBYTE:
        return unpack_subbyte(np.frombuffer(raw, dtype=np.uint8), dt, count).reshape(dims)
    if dt in SIX_BIT:
        return unpack_6bit(np.frombuffer(raw, dtype=np.uint8), count).view(npdt).reshape(dims)
    arr = np.frombuffer(raw, dtype=npdt.newbyteorder("<") if npdt.itemsize > 1 else npdt, count=count)
    if sys.byteorder == "big" and npdt.itemsize > 1:  # pragma: no cover - little-endian hosts
        arr = arr.byteswap().view(npdt.newbyteorder("="))
    if not arr.flags.aligned:
        # protobuf does not align raw_data; BLAS and numpy's fast loops need aligned data, so an
        # unaligned tensor is copied once (external data written by onyx is aligned, and stays a view)
        arr = arr.copy()
    return arr.reshape(dims)


def unpack_subbyte(packed: np.ndarray, dt: DataType, count: int) -> np.ndarray:
    """Unpack 4-bit (two per byte) or 2-bit (four per byte) elements, low bits first."""
    per = PACKED_SUBBYTE[dt]
    bits = 8 // per
    mask = (1 << bits) - 1
    out = np.empty((packed.size, per), dtype=np.uint8)
    for k in range(per):
        np.bitwise_and(np.right_shift(packed, k * bits), mask, out=out[:, k])
    return out.reshape(-1)[:count].view(dt.numpy_dtype)


def pack_subbyte(arr: np.ndarray, dt: DataType) -> np.ndarray:
    per = PACKED_SUBBYTE[dt]
    bits = 8 // per
    mask = (1 << bits) - 1
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8) & mask
    pad = -flat.size % per
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, np.uint8)])
    groups = flat.reshape(-1, per)
    out = groups[:, 0].copy()
    for k in range(1, per):
        out |= groups[:, k] << (k * bits)
    return out


def unpack_6bit(packed: np.ndarray, count: int) -> np.ndarray:
    """Unpack 6-bit codes, four per three bytes, least significant bits first."""
    groups = -(-count // 4)
    buf = np.zeros(groups * 3, dtype=np.uint8)
    buf[: packed.size] = packed[: groups * 3]
    b = buf.reshape(-1, 3).astype(np.uint32)
    word = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    out = np.empty((groups, 4), dtype=np.uint8)
    for k in range(4):
        out[:, k] = (word >> (6 * k)) & 0x3F
    return out.reshape(-1)[:count]


def pack_6bit(codes: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(codes).reshape(-1).view(np.uint8).astype(np.uint32) & 0x3F
    n = flat.size
    pad = -n % 4
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, np.uint32)])
    g = flat.reshape(-1, 4)
    word = g[:, 0] | (g[:, 1] << 6) | (g[:, 2] << 12) | (g[:, 3] << 18)
    out = np.empty((g.shape[0], 3), dtype=np.uint8)
    out[:, 0] = word & 0xFF
    out[:, 1] = (word >> 8) & 0xFF
    out[:, 2] = (word >> 16) & 0xFF
    return out.reshape(-1)[: -(-n * 6 // 8)]


def array_to_raw(arr: np.ndarray, dt: DataType) -> Any:
    """The raw_data bytes of an array (packed for sub-byte types)."""
    if dt in PACKED_SUBBYTE:
        return pack_subbyte(arr, dt).tobytes()
    if dt in SIX_BIT:
        return pack_6bit(arr).tobytes()
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    # a uint8 view first: memoryview cannot describe ml_dtypes' element types (bfloat16, float8)
    return memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else b""


class SparseTensor:
    """A SparseTensorProto: values (named), indices and the dense dims."""

    __slots__ = ("values", "indices", "dims", "unknown", "explicit")

    def __init__(self, values: Tensor, indices: Tensor, dims: tuple[int, ...]):
        self.values = values
        self.indices = indices
        self.dims = tuple(dims)
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()

    @property
    def name(self) -> str | None:
        return self.values.name

    def numpy(self) -> np.ndarray:
        """The dense array."""
        vals = self.values.numpy().reshape(-1)
        idx = self.indices.numpy().astype(np.int64)
        dims = self.dims
        total = math.prod(dims)
        if total > (1 << 31):
            raise InvalidGraph(f"sparse tensor {self.name!r}: dense shape {list(dims)} is too large")
        out = np.zeros(total, dtype=vals.dtype)
        if idx.ndim == 2:
            if idx.shape != (vals.size, len(dims)):
                raise InvalidGraph(f"sparse tensor {self.name!r}: indices shape {idx.shape} does not match")
            idx = np.ravel_multi_index(tuple(idx.T), dims) if len(dims) else np.zeros(0, np.int64)
        if idx.size != vals.size or (idx.size and (idx.min() < 0 or idx.max() >= total)):
            raise InvalidGraph(f"sparse tensor {self.name!r}: indices out of range or miscounted")
        out[idx] = vals
        return out.reshape(dims)

    def __repr__(self) -> str:
        return f"SparseTensor({self.name!r}, {list(self.dims)}, nnz={self.values.size})"
