"""Loading and saving ``.onnx`` files: :func:`load`, :func:`save` and the test-data ``.pb`` helpers."""

from __future__ import annotations

import mmap
import os
import stat
from typing import IO, Any

import numpy as np

from onyx.errors import InvalidArgument, InvalidProtobuf, NoSuchFile, OnyxError
from onyx.ir.model import Model
from onyx.ir.tensor import FileMap, SparseTensor, Tensor
from onyx.proto import decode as _decode
from onyx.proto import encode as _encode
from onyx.proto.external_data import ExternalWriter, attach_loader, mark_base_dir

PROTOBUF_LIMIT = (1 << 31) - 1

PathLike = str | os.PathLike


def _open_buffer(f: Any) -> tuple[Any, str | None, Any]:
    """Return (buffer, base_dir, owner) for a path, bytes-like or file object."""
    if isinstance(f, str | os.PathLike):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise NoSuchFile(f"model file {path!r} does not exist")
        if os.path.isdir(path):
            raise NoSuchFile(f"{path!r} is a directory, not a model file")
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device: opening it may never return
            raise InvalidArgument(f"{path!r} is not a regular file (a device, FIFO or socket)")
        base = os.path.dirname(os.path.abspath(path))
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise InvalidProtobuf(f"model file {path!r} is empty")
            mm = FileMap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            st = os.fstat(fh.fileno())
            mm.path, mm.stamp = os.path.abspath(path), (st.st_ino, st.st_size, st.st_mtime_ns)
        return memoryview(mm), base, mm
    if isinstance(f, bytes | bytearray | memoryview):
        mv = memoryview(f)
        if mv.ndim != 1 or mv.itemsize != 1:
            mv = mv.cast("B")
        return mv, None, f
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, bytes | bytearray):
            raise InvalidArgument("file object must be opened in binary mode")
        name = getattr(f, "name", None)
        base = (
            os.path.dirname(os.path.abspath(name)) if isinstance(name, str) and os.path.exists(name) else None
        )
        return memoryview(data), base, data
    raise InvalidArgument(f"cannot load a model from {type(f).__name__}; give a path, bytes or a binary file")


def load(
    f: PathLike | bytes | IO[bytes], load_external_data: bool = True, base_dir: str | None = None
) -> Model:
    """Read an ONNX model from a path, bytes or a binary file object.

    Weights are not copied: ``raw_data`` stays a view of the memory-mapped file. With
    ``load_external_data`` the external files are mapped (and checked) now; otherwise on first use.
    """
    buf, base, owner = _open_buffer(f)
    if base_dir is not None:
        base = base_dir
    if len(buf) == 0:
        raise InvalidProtobuf("empty model")
    hook = attach_loader(base) if load_external_data else mark_base_dir(base)
    ctx = _decode.Ctx(buf, hook, owner)
    try:
        model = _decode.decode_model(ctx)
    except OnyxError:
        raise
    except RecursionError:
        raise InvalidProtobuf("model nested too deeply") from None
    except (IndexError, ValueError, TypeError, OverflowError, MemoryError, KeyError, UnicodeError) as e:
        raise InvalidProtobuf(f"malformed model: {type(e).__name__}: {e}") from None
    if model.graph is None:
        raise InvalidProtobuf("the bytes hold no graph: not an ONNX model")
    model.base_dir = base
    model._buffers.append(owner)
    return model


def release_mapped_pages(model: Model) -> None:
    """Let the kernel drop every resident page of the files ``model``'s weights map (the model file and
    external data files). The mappings stay valid: a weight still used zero-copy is read back from the
    page cache on its next use, while pages that were touched only once (weights copied or fused at
    session creation, the protobuf's structure) stop counting in this process's RSS."""
    owners = {id(b): b for b in model._buffers}
    graphs = [model.graph] + [g for n in model.graph.walk() for g in n.subgraphs()]
    for g in graphs:
        for v in g.initializers.values():
            o = getattr(v.const, "_owner", None)
            if o is not None:
                owners[id(o)] = o
    for o in owners.values():
        if isinstance(o, mmap.mmap) and hasattr(o, "madvise") and len(o):
            try:
                o.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):
                pass


def load_from_string(data: bytes) -> Model:
    """Alias of :func:`load` for bytes, as onnx names it."""
    return load(data)


def _eligible_tensors(model: Model, convert_attribute: bool) -> set[int]:
    ids: set[int] = set()

    def visit(g) -> None:
        for v in g.initializers.values():
            if isinstance(v.const, Tensor):
                ids.add(id(v.const))
            elif isinstance(v.const, SparseTensor):
                ids.add(id(v.const.values))
                ids.add(id(v.const.indices))
        for n in g.nodes:
            for a in n.attributes.values():
                if convert_attribute:
                    vals = a.value if isinstance(a.value, list) else [a.value]
                    for x in vals:
                        if isinstance(x, Tensor):
                            ids.add(id(x))
            for sub in n.subgraphs():
                visit(sub)

    if model.graph is not None:
        visit(model.graph)
    return ids


def weight_bytes(model: Model) -> int:
    """Bytes of the initializers of every graph (what decides whether a model needs external data)."""
    total = 0
    graphs = [model.graph] if model.graph is not None else []
    while graphs:
        g = graphs.pop()
        for v in g.initializers.values():
            c = v.const
            for t in (c.values, c.indices) if isinstance(c, SparseTensor) else (c,):
                if isinstance(t, Tensor):
                    try:
                        total += t.nbytes
                    except OnyxError:
                        pass
        for n in g.nodes:
            graphs.extend(n.subgraphs())
    return total


def serialize(model: Model) -> bytes:
    """The model as bytes (all data inline)."""
    w = _encode.encode_model(model)
    if w.size > PROTOBUF_LIMIT:
        raise InvalidArgument(
            f"the model is {w.size} bytes, past protobuf's 2 GB limit: "
            "save it with save_as_external_data=True"
        )
    return w.getvalue()


def save(
    model: Model,
    path: PathLike | IO[bytes],
    save_as_external_data: bool = False,
    location: str | None = None,
    size_threshold: int = 1024,
    all_tensors_to_one_file: bool = True,
    convert_attribute: bool = False,
) -> None:
    """Write a model to ``path``; with ``save_as_external_data`` tensors of at least ``size_threshold``
    bytes go to ``location`` (a file name beside the model; default ``<model file>.data``).

    Files are written to a temporary name and renamed, so a failed save never leaves a half-written
    model, and saving over the file a model was loaded from is safe.
    """
    if not isinstance(model, Model):
        raise InvalidArgument(f"save expects an onyx Model, got {type(model).__name__}")
    if not all_tensors_to_one_file:
        raise InvalidArgument("all_tensors_to_one_file=False is not supported; tensors go to one file")
    if hasattr(path, "write") and not isinstance(path, str | os.PathLike):
        if save_as_external_data:
            raise InvalidArgument("save_as_external_data needs a path, not a file object")
        path.write(serialize(model))  # type: ignore[union-attr]
        return
    path = os.fspath(path)  # type: ignore[arg-type]
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise NoSuchFile(f"folder {folder!r} does not exist")
    writer = None
    if save_as_external_data:
        location = location or os.path.basename(path) + ".data"
        if os.path.isabs(location) or ".." in location.replace("\\", "/").split("/") or "/" in location:
            raise InvalidArgument(
                f"external data location {location!r} must be a plain file name beside the model"
            )
        if os.path.join(folder, location) == os.path.abspath(path):
            raise InvalidArgument(f"external data location {location!r} is the model file itself")
        writer = ExternalWriter(
            os.path.join(folder, location),
            location,
            size_threshold,
            _eligible_tensors(model, convert_attribute),
        )
    w = _encode.encode_model(model, writer)
    if w.size > PROTOBUF_LIMIT:
        raise InvalidArgument(
            f"the model is {w.size} bytes, past protobuf's 2 GB limit: "
            "save it with save_as_external_data=True"
        )
    done: list[tuple[str, str]] = []
    try:
        if writer is not None:
            done.append((_write_atomic(writer.data_path, writer.write), writer.data_path))
        done.append((_write_atomic(path, lambda fh: _write_parts(fh, w.parts)), path))
        for tmp, final in done:
            os.replace(tmp, final)
    finally:
        for tmp, _ in done:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _write_parts(fh, parts) -> None:
    for p in parts:
        fh.write(p)


def _write_atomic(final: str, write) -> str:
    import tempfile  # ~8 ms to import: only saving needs it

    folder = os.path.dirname(os.path.abspath(final))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(final) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


# ---------------------------------------------------------------------------------------------
# Test-data .pb files


def load_tensor(f: PathLike | bytes) -> np.ndarray:
    """Read a TensorProto ``.pb`` file (as the official test data holds) into a numpy array."""
    return load_tensor_proto(f).numpy()


def load_tensor_proto(f: PathLike | bytes) -> Tensor:
    """Read a TensorProto ``.pb`` file into an onyx Tensor."""
    buf, _, owner = _open_buffer(f) if not isinstance(f, bytes) else (memoryview(f), None, f)
    try:
        t = _decode.decode_tensor(_decode.Ctx(buf, None, owner), (0, len(buf)))
    except OnyxError:
        raise
    except (IndexError, ValueError, TypeError, OverflowError, UnicodeError) as e:
        raise InvalidProtobuf(f"malformed tensor: {type(e).__name__}: {e}") from None
    return t


def save_tensor(array: Any, path: PathLike, name: str | None = None) -> None:
    """Write a numpy array as a TensorProto ``.pb`` file."""
    t = array if isinstance(array, Tensor) else Tensor.from_numpy(np.asarray(array), name)
    data = _encode.encode_tensor(t).getvalue()
    tmp = _write_atomic(os.fspath(path), lambda fh: fh.write(data))
    os.replace(tmp, os.fspath(path))
