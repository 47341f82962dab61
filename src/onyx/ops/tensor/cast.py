"""Cast: convert a tensor to another element type (all versions).

The conversion rules follow the Cast specification:

* float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ): round to nearest even; with ``saturate`` (the default)
  values beyond the type's range, and infinities, become +/-FLT_MAX; without it they become NaN (or
  +/-inf for E5M2). NaN stays NaN.
* float8 E8M0: a bare power of two, rounded by ``round_mode`` (``up``, ``down``, ``nearest`` with
  ties up); ``saturate`` clamps to the representable exponents, otherwise out-of-range is NaN.
* float to integer truncates toward zero (out of range is undefined by the spec); integer to a
  narrower integer keeps the low bits; anything to bool is ``x != 0``.
* strings are parsed like ``strtod`` (``INF``, ``+INF``, ``-INF``, ``NaN`` in any case; integer
  targets take the leading integer, so "100.5" gives 100) and floats are written with printf's
  ``%.8g`` (``NaN``, ``INF``, ``-INF`` for the special values), exactly as onnxruntime does.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType, LazyDtypeSet, ml_dtype, to_numpy
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import ML_FLOATS, ML_INTS
from onyx.shape_inference import ShapeContext

_F8_SATURATING = LazyDtypeSet("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
_E8M0 = LazyDtypeSet("float8_e8m0fnu")
_OBJECT = np.dtype(object)
_ROUND_MODES = ("up", "down", "nearest")
_INF = float("inf")


def target_dtype(to: Any) -> np.dtype:
    """The numpy dtype named by Cast's ``to``: a DataType code, or (opset 1) its name as a string."""
    if isinstance(to, str):
        name = to.strip().upper()
        try:
            code = DataType[name]
        except KeyError:
            raise InvalidArgument(f"Cast: unknown element type name 'to'={to!r}") from None
        return to_numpy(int(code))
    return to_numpy(int(to))


def cast_array(x: Any, dtype: np.dtype, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    """Convert ``x`` to ``dtype`` following the Cast rules (see the module docstring)."""
    # ufuncs on 0-d arrays return numpy scalars: make sure an array comes back
    return np.asarray(_cast(x, dtype, saturate, round_mode))


def _cast(x: Any, dtype: np.dtype, saturate: int, round_mode: str):
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if round_mode not in _ROUND_MODES:
        raise InvalidArgument(f"Cast: round_mode must be one of {_ROUND_MODES}, got {round_mode!r}")
    if x.dtype == dtype:
        return x
    if dtype == _OBJECT:
        return _to_string(x)
    if x.dtype == _OBJECT or x.dtype.kind in "US":
        x = _from_string(x, dtype)
        if x.dtype == dtype:
            return x
    with np.errstate(invalid="ignore", over="ignore"):
        if dtype == np.bool_:
            if x.dtype in ML_FLOATS or x.dtype in ML_INTS:
                x = x.astype(np.float32)
            return x != 0
        if dtype in _F8_SATURATING:
            return _to_float8(x, dtype, bool(saturate))
        if dtype in _E8M0:
            return _to_e8m0(x, bool(saturate), round_mode)
        if x.dtype in ML_FLOATS or x.dtype in ML_INTS:
            # ml_dtypes converts between its own types and the builtin ones; go through float32
            # (exact for every ml_dtypes value) when both sides are extension types.
            if dtype in ML_FLOATS or dtype in ML_INTS:
                mid = np.float32 if x.dtype in ML_FLOATS else np.int8
                x = x.astype(mid)
            return x.astype(dtype)
        if x.dtype == np.bool_ and (dtype in ML_FLOATS or dtype in ML_INTS):
            x = x.astype(np.uint8)
        return x.astype(dtype)


def _to_float8(x: np.ndarray, dtype: np.dtype, saturate: bool) -> np.ndarray:
    if x.dtype in ML_FLOATS or x.dtype in ML_INTS or x.dtype == np.bool_:
        x = x.astype(np.float32)
    elif x.dtype.kind in "iu":
        x = x.astype(np.float64)
    if saturate:
        import ml_dtypes  # the dtype is an ml_dtypes type, so ml_dtypes is already imported

        fmax = float(ml_dtypes.finfo(dtype).max)
        x = np.clip(x, -fmax, fmax)  # NaN passes through np.clip unchanged
    return x.astype(dtype)


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """E8M0 holds 2**(e - 127) for e in [0, 254]; e = 255 is NaN. Negative inputs use |x|."""
    if x.dtype.kind != "f" or x.dtype in ML_FLOATS:
        xf = x.astype(np.float64)
    else:
        xf = x.astype(np.float64, copy=False)
    a = np.abs(xf)
    nan = np.isnan(a)
    inf = np.isinf(a)
    finite = ~(nan | inf)
    mant, exp = np.frexp(np.where(finite, a, 1.0))  # a = mant * 2**exp with mant in [0.5, 1)
    e = exp.astype(np.int64) - 1  # a = (2 * mant) * 2**e with 2 * mant in [1, 2)
    frac = mant * 2.0 - 1.0
    if round_mode == "up":
        e += frac > 0
    elif round_mode == "nearest":
        e += frac >= 0.5
    biased = e + 127
    zero = finite & (a == 0)
    if saturate:
        biased = np.clip(biased, 0, 254)
        biased = np.where(inf, 254, biased)
        biased = np.where(zero, 0, biased)
    else:
        biased = np.where((biased < 0) | (biased > 254) | inf | zero, 255, biased)
    biased = np.where(nan, 255, biased)
    return biased.astype(np.uint8).view(ml_dtype("float8_e8m0fnu"))


# ---------------------------------------------------------------------------------------------------
# strings


def _special(v: float) -> str:
    if v != v:
        return "NaN"
    return "INF" if v > 0 else "-INF"


def _to_string(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    flat = out.reshape(-1)
    if x.dtype.kind in "US":
        flat[:] = [str(v) for v in x.reshape(-1).tolist()]
        return out
    if x.dtype == np.bool_:
        flat[:] = ["1" if v else "0" for v in x.reshape(-1).tolist()]
        return out
    if x.dtype in ML_INTS:
        x = x.astype(np.int8)
    if x.dtype.kind in "iu":
        flat[:] = [str(v) for v in x.reshape(-1).tolist()]
        return out
    if x.dtype.kind == "c":
        flat[:] = [str(v) for v in x.reshape(-1).tolist()]
        return out
    # floats (any width): printf "%.8g", as onnxruntime writes them
    if x.dtype.kind != "f" or x.dtype in ML_FLOATS:
        x = x.astype(np.float32)
    res = []
    for v in x.reshape(-1).tolist():
        if v != v or v in (_INF, -_INF):
            res.append(_special(v))
        else:
            res.append("%.8g" % v)  # noqa: UP031 - printf-style %g is the format we mimic
    flat[:] = res
    return out


_INT_PREFIX = re.compile(r"\s*([+-]?\d+)")


def _parse_float(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        pass
    t = s.strip()
    try:
        neg = t.startswith("-")
        body = t.lstrip("+-")
        if body[:2].lower() == "0x":
            v = float.fromhex(body)
            return -v if neg else v
    except ValueError:
        pass
    raise InvalidArgument(f"Cast: cannot convert string {s!r} to a number")


def _parse_int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        pass
    m = _INT_PREFIX.match(s)
    if m:
        return int(m.group(1))
    v = _parse_float(s)
    if v != v or v in (float("inf"), float("-inf")):
        raise InvalidArgument(f"Cast: cannot convert string {s!r} to an integer")
    return int(v)


def _from_string(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    items = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in x.reshape(-1).tolist()]
    if dtype.kind in "iu" or dtype in ML_INTS:
        ints = [_parse_int(s) for s in items]
        if dtype in ML_INTS:
            return np.array(ints, dtype=np.int64).reshape(x.shape).astype(dtype)
        info = np.iinfo(dtype)
        mask = (1 << info.bits) - 1
        wrapped = []
        for v in ints:
            if not info.min <= v <= info.max:  # keep the low bits, two's complement
                v &= mask
                if info.min < 0 and v > info.max:
                    v -= 1 << info.bits
            wrapped.append(v)
        return np.array(wrapped, dtype=dtype).reshape(x.shape)
    if dtype == np.bool_:
        return np.array([_parse_float(s) != 0 for s in items], dtype=np.bool_).reshape(x.shape)
    if dtype.kind == "c":
        return np.array([complex(s.strip()) for s in items], dtype=dtype).reshape(x.shape)
    # floats (numpy or ml_dtypes): parse in double, then cast with the float rules
    return np.array([_parse_float(s) for s in items], dtype=np.float64).reshape(x.shape)


# ---------------------------------------------------------------------------------------------------
# kernels


@op("Cast", since=1, until=19)
def cast_1(input, *, to):
    return cast_array(input, target_dtype(to))


@op("Cast", since=19, until=24)
def cast_19(input, *, to, saturate=1):
    return cast_array(input, target_dtype(to), saturate)


@op("Cast", since=24)
def cast_24(input, *, to, saturate=1, round_mode="up"):
    return cast_array(input, target_dtype(to), saturate, round_mode)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Cast")
def _cast_shape(ctx: ShapeContext) -> None:
    ctx.set_output(0, S.elem_code(ctx.attr("to", None)), ctx.input_shape(0))
