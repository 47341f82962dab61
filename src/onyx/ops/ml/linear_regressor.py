"""LinearRegressor: Y = X @ coefficients^T + intercepts, then the post transform; float32 output."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, as_2d, as_float, mm, post_transform, rows_of
from onyx.ops.registry import op, shape_rule


def _prepare(*, coefficients=None, intercepts=None, post_transform="NONE", targets=1):
    """Weights as arrays once: ``X -> X @ coefficients^T + intercepts``."""
    coef = np.asarray(coefficients or [], dtype=np.float32)
    b = np.asarray(intercepts, dtype=np.float32) if intercepts else None
    if b is not None and b.size not in (1, targets):
        raise InvalidArgument(f"LinearRegressor: {b.size} intercepts for {targets} targets")
    by_features: dict[int, np.ndarray] = {}

    def run(X):
        x = as_2d(as_float(X))
        wt = by_features.get(x.shape[1])
        if wt is None:
            if coef.size != targets * x.shape[1]:
                raise InvalidArgument(
                    f"LinearRegressor: {coef.size} coefficients for {targets} targets and "
                    f"{x.shape[1]} features"
                )
            wt = by_features[x.shape[1]] = np.ascontiguousarray(coef.reshape(targets, -1).T)
        y = mm(x.astype(np.float32, copy=False), wt)
        if b is not None:
            y += b
        return _post(y, post_transform)

    return run


@op("LinearRegressor", domain="ai.onnx.ml", since=1, prepare=_prepare)
def linear_regressor_1(X, *, coefficients=None, intercepts=None, post_transform="NONE", targets=1):
    return _prepare(
        coefficients=coefficients, intercepts=intercepts, post_transform=post_transform, targets=targets
    )(X)


def _post(y, name):
    return post_transform(y, name).astype(np.float32, copy=False)


@shape_rule("LinearRegressor", domain="ai.onnx.ml")
def _linear_regressor_shape(ctx) -> None:
    """float [N, targets]."""
    ctx.set_output(0, FLOAT, [rows_of(ctx.input_shape(0)), int(ctx.attr("targets", 1))])
