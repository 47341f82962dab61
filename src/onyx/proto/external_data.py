"""External data: tensors whose bytes live in side files (``location``, ``offset``, ``length``).

Files are memory-mapped, never read whole. A location that is absolute, or that leaves the model's
folder (``..`` or a symlink pointing out), is refused: loading a model must not read arbitrary files.
So is anything but a regular file (a device, a FIFO, a socket: opening one may block or never end) and a
file whose size changes while it is being mapped (another process writing or truncating it).
"""

from __future__ import annotations

import mmap
import os
import stat
from typing import Any

from onyx.errors import InvalidGraph, NoSuchFile
from onyx.ir.tensor import FileMap, Tensor


def resolve_location(base_dir: str, location: str, tensor_name: str | None = None) -> str:
    """The absolute path of an external data file, refusing paths that leave ``base_dir``."""
    what = f"tensor {tensor_name!r}: external data location {location!r}"
    if not location:
        raise InvalidGraph(f"{what} is empty")
    if "\x00" in location:
        raise InvalidGraph(f"{what} contains a NUL byte")
    if (
        os.path.isabs(location)
        or location.startswith(("/", "\\"))
        or (len(location) > 1 and location[1] == ":")
    ):
        raise InvalidGraph(f"{what} is absolute; external data must lie inside the model's folder")
    parts = location.replace("\\", "/").split("/")
    if ".." in parts:
        raise InvalidGraph(f"{what} leaves the model's folder ('..' is not allowed)")
    base_real = os.path.realpath(base_dir)
    path = os.path.join(base_dir, *parts)
    real = os.path.realpath(path)
    if os.path.commonpath([base_real, real]) != base_real:
        raise InvalidGraph(f"{what} resolves outside the model's folder (through a symlink)")
    try:
        st = os.stat(real)
    except OSError:
        raise NoSuchFile(f"{what}: file {path!r} does not exist") from None
    if not stat.S_ISREG(st.st_mode):
        raise InvalidGraph(f"{what}: {path!r} is not a regular file (a device, FIFO, socket or folder)")
    return real


def _map(path: str, cache: dict[str, Any] | None = None) -> Any:
    """Memory-map a regular file read-only (one map per file per load when ``cache`` is given).

    Opened without blocking (a FIFO swapped in after :func:`resolve_location` looked must not hang the
    load), checked to be a regular file on the open descriptor, and checked to keep its size across the
    mapping: a file that another process writes or truncates meanwhile is refused.
    """
    if cache is not None and path in cache:
        return cache[path]
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise NoSuchFile(f"external data file {path!r} cannot be opened: {e.strerror}") from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise InvalidGraph(f"external data file {path!r} is not a regular file")
        mm: Any = b"" if before.st_size == 0 else FileMap(fd, 0, access=mmap.ACCESS_READ)
        after = os.fstat(fd)
        if isinstance(mm, FileMap):
            mm.path, mm.stamp = path, (before.st_ino, before.st_size, before.st_mtime_ns)
    finally:
        os.close(fd)
    if after.st_size != before.st_size or len(mm) != before.st_size:
        raise InvalidGraph(
            f"external data file {path!r} changed size while it was mapped ({before.st_size} -> "
            f"{after.st_size} bytes): another process is writing it"
        )
    if cache is not None:
        cache[path] = mm
    return mm


def _check_unchanged(path: str, mm: Any) -> None:
    """Refuse a mapped file whose size has changed since: reading past its new end would kill the
    process (SIGBUS) instead of raising."""
    if not isinstance(mm, FileMap):
        return
    try:
        st = os.stat(path)
    except OSError:
        return  # removed: the mapping keeps the old inode alive and stays valid
    if st.st_ino == mm.stamp[0] and st.st_size != len(mm):  # another inode: replaced, the map is valid
        raise InvalidGraph(
            f"external data file {path!r} changed size while mapped ({len(mm)} -> {st.st_size} bytes)"
        )


def read_external(t: Tensor, base_dir: str | None = None, cache: dict[str, Any] | None = None) -> memoryview:
    """A zero-copy view of a tensor's external bytes (validated against the file's size)."""
    ext = t.external
    if ext is None:
        raise InvalidGraph(f"tensor {t.name!r} has no external data")
    base = base_dir if base_dir is not None else ext.base_dir
    if base is None:
        raise InvalidGraph(
            f"tensor {t.name!r} uses external data {ext.location!r} but the model was not loaded from a "
            "file: pass base_dir"
        )
    path = resolve_location(base, ext.location, t.name)
    mm = _map(path, cache)
    _check_unchanged(path, mm)
    size = len(mm)
    length = ext.length if ext.length is not None else size - ext.offset
    if ext.offset > size or ext.offset + length > size:
        raise InvalidGraph(
            f"tensor {t.name!r}: external data offset {ext.offset} + length {length} is past the end of "
            f"{ext.location!r} ({size} bytes)"
        )
    return memoryview(mm)[ext.offset : ext.offset + length]


def attach_loader(base_dir: str | None):
    """A decode hook that resolves each external tensor at load time (lazily mapped, not read)."""

    cache: dict[str, Any] = {}

    def hook(t: Tensor) -> None:
        assert t.external is not None
        t.external.base_dir = base_dir
        if base_dir is None:
            raise InvalidGraph(
                f"tensor {t.name!r} uses external data {t.external.location!r}; load the model from a path "
                "or pass base_dir"
            )
        t.raw = read_external(t, base_dir, cache)
        t.external = None
        # as onnx.load does: the data now lives in the model, data_location says so explicitly
        t.data_location = 0

    return hook


def mark_base_dir(base_dir: str | None):
    """A decode hook that only records where external tensors' files are (load_external_data=False)."""

    def hook(t: Tensor) -> None:
        assert t.external is not None
        t.external.base_dir = base_dir

    return hook


class ExternalWriter:
    """Collects tensors for one external data file while a model is encoded."""

    def __init__(self, data_path: str, location: str, size_threshold: int, eligible: set[int]):
        self.data_path = data_path
        self.location = location
        self.size_threshold = size_threshold
        self.eligible = eligible
        self.chunks: list[tuple[int, Any]] = []
        self.offset = 0

    def __call__(self, t: Tensor, w) -> bool:
        from onyx.ir.dtypes import DataType

        if id(t) not in self.eligible or t.data_type == DataType.STRING:
            return False
        if t.nbytes < self.size_threshold:
            return False
        data = t.raw_bytes()
        n = memoryview(data).nbytes
        align = 4096 if n >= (1 << 20) else 64
        self.offset = -(-self.offset // align) * align
        entries = [("location", self.location), ("offset", str(self.offset)), ("length", str(n))]
        from onyx.proto.encode import _entries

        _entries(w, 13, entries)
        w.uint(14, 1)
        self.chunks.append((self.offset, data))
        self.offset += n
        return True

    def write(self, fh) -> None:
        pos = 0
        for off, data in self.chunks:
            if off > pos:
                fh.write(b"\0" * (off - pos))
            fh.write(data)
            pos = off + memoryview(data).nbytes
