"""Feed conversions that onnxruntime's Python binding makes, for the session to make the same.

onnxruntime (onnxruntime_pybind_mlvalue.cc) maps numpy arrays to tensors by their type: numeric ones by
element type (numpy's C ``long`` and ``long long`` both as int64 on LP64 platforms, ``int`` as int32), and
four kinds to string tensors:

- ``'U'`` (unicode): each item's text, up to its first NUL character;
- ``'S'`` (fixed-width bytes): each item read as a C string, up to its first NUL byte (onnxruntime reads
  an item that fills its width past its end, into the next items; we keep the item);
- ``'V'`` (``np.void``): each item's bytes, all of them, NULs included;
- ``'O'`` (objects): ``str(x)`` of each item. For ``bytes`` items onnxruntime keeps ``str(b)`` (``"b'ab'"``);
  onyx decodes them as UTF-8 instead (the text the caller meant; documented in tests/runtime/test_feeds.py).

Bytes that are not UTF-8 are kept through ``surrogateescape`` (they round-trip to the same bytes).
Python lists are converted to the input's declared element type, as onnxruntime's ``PyArray_FromAny``
with the declared dtype does (the session does that part).
"""

from __future__ import annotations

import numpy as np

STRING_KINDS = "USVO"


def is_string_array(arr: np.ndarray) -> bool:
    """Whether onnxruntime reads ``arr`` as a string tensor."""
    return arr.dtype.kind in STRING_KINDS


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _object_item(x: object) -> str:
    if type(x) is str:
        return x
    if isinstance(x, bytes | bytearray):
        return _decode(bytes(x))
    return str(x)


def _embedded_nul(flat: np.ndarray) -> bool:
    """Whether an item of the 1-D unicode array holds a NUL before other characters (numpy keeps only
    those: trailing NULs are padding)."""
    width = flat.dtype.itemsize // 4
    if not flat.size or width < 2:
        return False
    codes = np.ascontiguousarray(flat).view(np.uint32).reshape(flat.size, width)
    return bool(((codes[:, :-1] == 0) & (codes[:, 1:] != 0)).any())


def string_tensor(arr: np.ndarray) -> np.ndarray:
    """``arr`` (a numpy array of kind U, S, V or O) as onyx's string tensor: an object array of ``str``."""
    kind = arr.dtype.kind
    flat = arr.reshape(-1)
    if kind == "O":
        if all(type(x) is str for x in flat):
            return arr
        items = [_object_item(x) for x in flat]
    elif kind == "U":
        out = flat.astype(object).reshape(arr.shape)  # numpy drops trailing NULs; ORT stops at any NUL
        if not _embedded_nul(flat):
            return out
        items = [s.split("\0", 1)[0] for s in flat.tolist()]
    elif kind == "S":
        items = [_decode(b.split(b"\0", 1)[0]) for b in flat.tolist()]
    elif kind == "V":
        size = arr.dtype.itemsize
        raw = np.ascontiguousarray(flat).view(np.uint8).tobytes()
        items = [_decode(raw[i * size : (i + 1) * size]) for i in range(flat.size)]
    else:
        raise TypeError(f"not a string array: {arr.dtype}")
    out = np.empty(arr.shape, dtype=object)
    out.reshape(-1)[:] = items if out.size else []
    return out
