"""LinearRegressor: Y = X @ coefficients^T + intercepts, then the post transform; float32 output."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, as_2d, as_float, post_transform, rows_of
from onyx.ops.registry import op, shape_rule


@op("LinearRegressor", domain="ai.onnx.ml", since=1)
def linear_regressor_1(X, *, coefficients=None, intercepts=None, post_transform="NONE", targets=1):
    x = as_2d(as_float(X))
    coef = np.asarray(coefficients or [], dtype=np.float32)
    if coef.size != targets * x.shape[1]:
        raise InvalidArgument(
            f"LinearRegressor: {coef.size} coefficients for {targets} targets and {x.shape[1]} features"
        )
    y = x.astype(np.float32, copy=False) @ coef.reshape(targets, -1).T
    if intercepts:
        b = np.asarray(intercepts, dtype=np.float32)
        if b.size not in (1, targets):
            raise InvalidArgument(f"LinearRegressor: {b.size} intercepts for {targets} targets")
        y = y + b
    return _post(y, post_transform)


def _post(y, name):
    return post_transform(y, name).astype(np.float32, copy=False)


@shape_rule("LinearRegressor", domain="ai.onnx.ml")
def _linear_regressor_shape(ctx) -> None:
    """float [N, targets]."""
    ctx.set_output(0, FLOAT, [rows_of(ctx.input_shape(0)), int(ctx.attr("targets", 1))])
