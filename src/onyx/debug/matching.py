"""Which value of the compared side stands for a value of the reference side.

Values match by name. A quantized model renames what it quantizes. onnxruntime's quantizer (1.32), QDQ
format, writes for a float tensor ``X``: ``X_QuantizeLinear_Output`` (the integers) and
``X_DequantizeLinear_Output`` (back to float, what the consumers read), ``X_quantized`` for a weight; a
graph output ``Y`` keeps its name on the final DequantizeLinear while its producer writes
``Y_QuantizeLinear_Input``. The QOperator format (QLinearMatMul...) keeps only ``X_quantized`` with the
initializers ``X_scale`` and ``X_zero_point``. A float stand-in is preferred (the same name, the
producer's output, the dequantized tensor); else integers with their scale are dequantized here. onyx's
optimizer keeps the name of the value a fused node replaces, so optimized values match by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# float stand-ins for a value named X in a quantized model, best first
FLOAT_STAND_INS = ("{}", "{}_QuantizeLinear_Input", "{}_DequantizeLinear_Output")
# integer stand-ins, dequantized with X_scale and X_zero_point
QUANTIZED_STAND_INS = ("{}_quantized", "{}_QuantizeLinear_Output")


def stand_in(name: str, reference: Any, other: dict[str, Any]) -> tuple[str, Any] | None:
    """``(label, value)`` in ``other`` standing for the reference value ``name``: the first float candidate
    with the reference's shape, else a quantized candidate dequantized (label ``"<name> (dequantized)"``),
    else the first candidate that exists whatever it holds, else None."""
    present = [c for c in (p.format(name) for p in FLOAT_STAND_INS) if c in other]
    for candidate in present:
        if _comparable(reference, other[candidate]):
            return candidate, other[candidate]
    for pattern in QUANTIZED_STAND_INS:
        candidate = pattern.format(name)
        if candidate in other:
            value = dequantize(other[candidate], other.get(f"{name}_scale"), other.get(f"{name}_zero_point"))
            if value is not None and _comparable(reference, value):
                return f"{candidate} (dequantized)", value
    return (present[0], other[present[0]]) if present else None


def match_values(reference: dict[str, Any], other: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """Reference name -> (label, value) on the other side, for every reference value with a stand-in."""
    out = {}
    for name, value in reference.items():
        match = stand_in(name, value, other)
        if match is not None:
            out[name] = match
    return out


def dequantize(q: Any, scale: Any, zero_point: Any) -> np.ndarray | None:
    """``(q - zero_point) * scale`` as float32, per tensor or per channel (the one axis whose size is the
    scale's); None when ``q`` is not an integer tensor or the scale does not fit it."""
    if not isinstance(q, np.ndarray) or q.dtype.kind not in "iu" or scale is None:
        return None
    scale = np.asarray(scale, np.float32)
    zp = np.zeros_like(scale, np.int32) if zero_point is None else np.asarray(zero_point).astype(np.int32)
    if scale.size != 1:
        axes = [a for a, d in enumerate(q.shape) if d == scale.size]
        if scale.ndim != 1 or len(axes) != 1:
            return None  # per-channel, but which axis is ambiguous
        shape = [1] * q.ndim
        shape[axes[0]] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((q.astype(np.int32) - zp) * scale).astype(np.float32)


def _comparable(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray | np.generic) and isinstance(b, np.ndarray | np.generic):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and _float(a.dtype) == _float(b.dtype)
    return type(a) is type(b)


def _float(dt: np.dtype) -> bool:
    return dt.kind in "fc" or (dt.kind == "V" and dt.itemsize <= 4)
