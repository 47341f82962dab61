"""Scaler: (X - offset) * scale per feature (or one value for all); float32 output."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, as_float
from onyx.ops.registry import op, shape_rule


def _prepare(*, offset=None, scale=None):
    """offset and scale as arrays once: ``X -> (X - offset) * scale``."""
    off = np.asarray(offset if offset else [0.0], dtype=np.float32)
    sc = np.asarray(scale if scale else [1.0], dtype=np.float32)
    sizes = [(name, v.size) for name, v in (("offset", off), ("scale", sc)) if v.size > 1]
    if off.size == 1:
        off = off.reshape(())
    if sc.size == 1:
        sc = sc.reshape(())

    def run(X):
        X = as_float(X)
        for name, size in sizes:
            if X.ndim == 0 or X.shape[-1] != size:
                raise InvalidArgument(f"Scaler: {name} has {size} values for input of shape {X.shape}")
        y = X - off
        y *= sc
        return y.astype(np.float32, copy=False)

    return run


@op("Scaler", domain="ai.onnx.ml", since=1, prepare=_prepare)
def scaler_1(X, *, offset=None, scale=None):
    return _prepare(offset=offset, scale=scale)(X)


@shape_rule("Scaler", domain="ai.onnx.ml")
def _scaler_shape(ctx) -> None:
    """X's shape, float."""
    ctx.set_output(0, FLOAT, ctx.input_shape(0))
