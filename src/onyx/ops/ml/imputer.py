"""Imputer: replace a marker value (or NaN) with per-feature (or one) imputed values."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Imputer", domain="ai.onnx.ml", since=1)
def imputer_1(
    X,
    *,
    imputed_value_floats=None,
    imputed_value_int64s=None,
    replaced_value_float=0.0,
    replaced_value_int64=0,
):
    X = np.asarray(X)
    if X.dtype.kind == "f":
        vals = np.asarray(imputed_value_floats or [], dtype=X.dtype)
        if np.isnan(replaced_value_float):
            mask = np.isnan(X)
        else:
            mask = X == replaced_value_float
    elif X.dtype.kind in "iu":
        vals = np.asarray(imputed_value_int64s or [], dtype=np.int64).astype(X.dtype)
        mask = X == replaced_value_int64
    else:
        raise InvalidArgument(f"Imputer: unsupported element type {X.dtype}")
    if vals.size == 0:
        raise InvalidArgument("Imputer: imputed values are empty")
    if vals.size > 1:
        if X.ndim == 0 or X.shape[-1] != vals.size:
            raise InvalidArgument(f"Imputer: {vals.size} imputed values for input of shape {X.shape}")
        fill = np.broadcast_to(vals, X.shape)
    else:
        fill = vals.reshape(())
    return np.where(mask, fill, X).astype(X.dtype, copy=False)


shape_rule("Imputer", domain="ai.onnx.ml")(same_shape_rule)
