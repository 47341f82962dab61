"""SVMRegressor: kernel (or linear) support vector regression, optionally one-class."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, as_2d, as_float, mm, rows_of
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._svm import kernel_function
from onyx.ops.registry import op, shape_rule


def _prepare(**a):
    """Support vectors and coefficients as arrays once (every attribute, defaults included):
    ``X -> scores``."""
    kernel_type, kernel_params, n_supports = a["kernel_type"], a["kernel_params"], a["n_supports"]
    one_class, post_transform, rho = a["one_class"], a["post_transform"], a["rho"]
    coefficients, support_vectors = a["coefficients"], a["support_vectors"]
    coef = np.asarray(coefficients or [], dtype=np.float64)
    r = float(rho[0]) if rho else 0.0
    sv = np.asarray(support_vectors or [], dtype=np.float64)
    kernels: dict[int, object] = {}

    def run(X):
        x = as_2d(as_float(X)).astype(np.float64)
        F = x.shape[1]
        if n_supports > 0:
            kern = kernels.get(F)
            if kern is None:
                if sv.size != n_supports * F:
                    raise InvalidArgument(
                        f"SVMRegressor: {sv.size} support vector values for {n_supports} x {F} features"
                    )
                if coef.size != n_supports:
                    raise InvalidArgument(
                        f"SVMRegressor: {coef.size} coefficients for {n_supports} support vectors"
                    )
                kern = kernels[F] = kernel_function(sv.reshape(n_supports, F), kernel_type, kernel_params)
            y = mm(kern(x), coef) + r
        else:
            if coef.size != F:
                raise InvalidArgument(f"SVMRegressor: {coef.size} coefficients for {F} features (linear)")
            y = mm(x, coef) + r
        if one_class:
            y = np.where(y > 0, 1.0, -1.0)
        y = y.reshape(-1, 1)
        return apply_post(y, post_transform).astype(np.float32)

    return run


@op("SVMRegressor", domain="ai.onnx.ml", since=1, prepare=_prepare)
def svm_regressor_1(
    X,
    *,
    coefficients=None,
    kernel_params=None,
    kernel_type="LINEAR",
    n_supports=0,
    one_class=0,
    post_transform="NONE",
    rho=None,
    support_vectors=None,
):
    loc = locals()
    del loc["X"]
    return _prepare(**loc)(X)


@shape_rule("SVMRegressor", domain="ai.onnx.ml")
def _svm_regressor_shape(ctx) -> None:
    """float [N, 1]."""
    ctx.set_output(0, FLOAT, [rows_of(ctx.input_shape(0)), 1])
