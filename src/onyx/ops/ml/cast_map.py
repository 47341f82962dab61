"""CastMap: a map int64 -> (string | float) to a [1, N] tensor, dense (sorted keys) or sparse (by key)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, INT64, STRING, str_array
from onyx.ops.registry import op, shape_rule


def _convert(values: list, cast_to: str) -> np.ndarray:
    if cast_to == "TO_FLOAT":
        return np.asarray([float(v) for v in values], dtype=np.float32)
    if cast_to == "TO_INT64":
        return np.asarray([int(float(v)) if isinstance(v, str) else int(v) for v in values], dtype=np.int64)
    if cast_to == "TO_STRING":
        return str_array([v if isinstance(v, str) else _fmt(v) for v in values])
    raise InvalidArgument(f"CastMap: cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got {cast_to!r}")


def _fmt(v) -> str:
    # onnxruntime writes floats as C's "%f" (six decimals)
    return f"{float(v):f}"


@op("CastMap", domain="ai.onnx.ml", since=1)
def cast_map_1(X, *, cast_to="TO_FLOAT", map_form="DENSE", max_map=1):
    if not isinstance(X, dict):
        raise InvalidArgument(f"CastMap: X must be a map, got {type(X).__name__}")
    keys = sorted(int(k) for k in X)
    if map_form == "DENSE":
        out = _convert([X[k] for k in keys], cast_to)
        return out.reshape(1, -1)
    if map_form != "SPARSE":
        raise InvalidArgument(f"CastMap: map_form must be DENSE or SPARSE, got {map_form!r}")
    if max_map <= 0:
        raise InvalidArgument(f"CastMap: max_map must be positive for SPARSE, got {max_map}")
    if cast_to == "TO_STRING":
        out = str_array(["0.f"] * max_map)  # onnxruntime's filler for absent keys
    elif cast_to == "TO_INT64":
        out = np.zeros(max_map, dtype=np.int64)
    else:
        out = np.zeros(max_map, dtype=np.float32)
    sel = [k for k in keys if 0 <= k < max_map]
    if sel:
        out[np.asarray(sel)] = _convert([X[k] for k in sel], cast_to)
    return out.reshape(1, -1)


_CAST_TO = {"TO_FLOAT": FLOAT, "TO_INT64": INT64, "TO_STRING": STRING}


@shape_rule("CastMap", domain="ai.onnx.ml")
def _cast_map_shape(ctx) -> None:
    """[1, max_map] (SPARSE) or [1, number of entries] (DENSE), of the cast_to type."""
    cast_to = ctx.attr("cast_to", "TO_FLOAT")
    if cast_to not in _CAST_TO:
        ctx.fail(f"cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got {cast_to!r}")
    form = ctx.attr("map_form", "DENSE")
    if form == "SPARSE":
        n = int(ctx.attr("max_map", 1))
        if n <= 0:
            ctx.fail(f"max_map must be positive for SPARSE, got {n}")
    elif form == "DENSE":
        n = ctx.new_dim()
    else:
        ctx.fail(f"map_form must be DENSE or SPARSE, got {form!r}")
    ctx.set_output(0, _CAST_TO[cast_to], [1, n])
