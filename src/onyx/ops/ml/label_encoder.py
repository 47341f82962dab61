"""LabelEncoder: map keys to values through parallel lists (v2) or tensors (v4); v1 uses class indices."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import INT64, STRING, elem_of_array, str_array, to_str_list
from onyx.ops.registry import op, shape_rule


def _is_str(a: np.ndarray) -> bool:
    return a.dtype == object or a.dtype.kind in "USO"


def _strs(a: np.ndarray) -> np.ndarray:
    return str_array(to_str_list(np.asarray(a).reshape(-1)))


def _encode(X: np.ndarray, keys: np.ndarray, values: np.ndarray, default: np.ndarray) -> np.ndarray:
    """Vectorised lookup: each element of X found in keys gets the value at the same position."""
    X = np.asarray(X)
    out_dtype = values.dtype
    flat = X.reshape(-1)
    if _is_str(keys):
        if not _is_str(X):
            raise InvalidArgument(f"LabelEncoder: string keys but input of type {X.dtype}")
        table: dict = {}
        for i, k in enumerate(keys.tolist()):
            table.setdefault(k, i)
        if flat.size == 0:
            return np.empty(X.shape, dtype=out_dtype)
        uniq, inv = np.unique(flat.astype(object), return_inverse=True)
        pos = np.asarray([table.get(str(u), -1) for u in uniq], dtype=np.int64)[inv]
    else:
        if _is_str(X):
            raise InvalidArgument(f"LabelEncoder: numeric keys ({keys.dtype}) but string input")
        kv = (
            keys.astype(np.float64)
            if keys.dtype.kind == "f" or flat.dtype.kind == "f"
            else keys.astype(np.int64)
        )
        fv = flat.astype(kv.dtype)
        order = np.argsort(kv, kind="stable")
        sk = kv[order]
        if len(sk) == 0:
            pos = np.full(flat.shape, -1, dtype=np.int64)
        else:
            i = np.clip(np.searchsorted(sk, fv, side="left"), 0, len(sk) - 1)
            found = sk[i] == fv
            pos = np.where(found, order[i], -1)
            if kv.dtype.kind == "f":
                nan_keys = np.nonzero(np.isnan(kv))[0]
                if nan_keys.size:
                    # a NaN key matches NaN inputs
                    pos = np.where(np.isnan(fv), nan_keys[0], pos)
    if _is_str(values):
        vals = np.concatenate([values.reshape(-1), default.reshape(-1)[:1]])
    else:
        vals = np.concatenate([values.reshape(-1), default.reshape(-1)[:1].astype(values.dtype)])
    out = vals[np.where(pos >= 0, pos, len(values))]
    return out.reshape(X.shape)


@op("LabelEncoder", domain="ai.onnx.ml", since=1, until=2)
def label_encoder_1(X, *, classes_strings=None, default_int64=-1, default_string="_Unused"):
    X = np.asarray(X)
    classes = _strs(np.asarray(classes_strings or [], dtype=object))
    idx = np.arange(len(classes), dtype=np.int64)
    if _is_str(X):
        return _encode(X, classes, idx, np.asarray([default_int64], dtype=np.int64))
    return _encode(X, idx, classes, str_array([default_string]))


def _pick_list(name: str, **lists):
    given = [(k, v) for k, v in lists.items() if v]
    if len(given) != 1:
        raise InvalidArgument(f"LabelEncoder: exactly one of {', '.join(lists)} must be given for the {name}")
    k, v = given[0]
    if k.endswith("strings"):
        return _strs(np.asarray(v, dtype=object))
    if k.endswith("int64s"):
        return np.asarray(v, dtype=np.int64)
    return np.asarray(v, dtype=np.float32)


def _default_for(values: np.ndarray, default_float, default_int64, default_string) -> np.ndarray:
    if _is_str(values):
        return str_array([default_string])
    if values.dtype.kind == "f":
        return np.asarray([default_float], dtype=values.dtype)
    return np.asarray([default_int64], dtype=values.dtype)


@op("LabelEncoder", domain="ai.onnx.ml", since=2, until=4)
def label_encoder_2(
    X,
    *,
    default_float=-0.0,
    default_int64=-1,
    default_string="_Unused",
    keys_floats=None,
    keys_int64s=None,
    keys_strings=None,
    values_floats=None,
    values_int64s=None,
    values_strings=None,
):
    keys = _pick_list("keys", keys_floats=keys_floats, keys_int64s=keys_int64s, keys_strings=keys_strings)
    values = _pick_list(
        "values", values_floats=values_floats, values_int64s=values_int64s, values_strings=values_strings
    )
    if len(keys) != len(values):
        raise InvalidArgument(f"LabelEncoder: {len(keys)} keys but {len(values)} values")
    return _encode(X, keys, values, _default_for(values, default_float, default_int64, default_string))


@op("LabelEncoder", domain="ai.onnx.ml", since=4)
def label_encoder_4(
    X,
    *,
    default_float=-0.0,
    default_int64=-1,
    default_string="_Unused",
    default_tensor=None,
    keys_floats=None,
    keys_int64s=None,
    keys_strings=None,
    keys_tensor=None,
    values_floats=None,
    values_int64s=None,
    values_strings=None,
    values_tensor=None,
):
    if keys_tensor is not None:
        keys = np.asarray(keys_tensor).reshape(-1)
        keys = _strs(keys) if _is_str(keys) else keys
    else:
        keys = _pick_list("keys", keys_floats=keys_floats, keys_int64s=keys_int64s, keys_strings=keys_strings)
    if values_tensor is not None:
        values = np.asarray(values_tensor).reshape(-1)
        values = _strs(values) if _is_str(values) else values
    else:
        values = _pick_list(
            "values", values_floats=values_floats, values_int64s=values_int64s, values_strings=values_strings
        )
    if len(keys) != len(values):
        raise InvalidArgument(f"LabelEncoder: {len(keys)} keys but {len(values)} values")
    if default_tensor is not None:
        default = np.asarray(default_tensor).reshape(-1)
        default = _strs(default) if _is_str(default) else default
        if default.size != 1:
            raise InvalidArgument(
                f"LabelEncoder: default_tensor must hold one value, got shape {default.shape}"
            )
    else:
        default = _default_for(values, default_float, default_int64, default_string)
    return _encode(X, keys, values, default)


_VALUE_ELEMS = (("values_strings", STRING), ("values_int64s", INT64), ("values_floats", 1))


@shape_rule("LabelEncoder", domain="ai.onnx.ml")
def _label_encoder_shape(ctx) -> None:
    """X's shape; v1: strings <-> int64; v2+: the type of the values attribute that is set."""
    if ctx.opset < 2:
        x = ctx.input_elem(0)
        elem = None if x is None else (INT64 if x == STRING else STRING)
    else:
        elem = None
        if ctx.opset >= 4 and ctx.attr("values_tensor") is not None:
            elem = elem_of_array(ctx.attr("values_tensor"))
        else:
            given = [e for name, e in _VALUE_ELEMS if ctx.attr(name)]
            if len(given) > 1:
                ctx.fail("more than one values_* attribute is set")
            elem = given[0] if given else None
    ctx.set_output(0, elem, ctx.input_shape(0))
