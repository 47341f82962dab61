"""SVMClassifier's and SVMRegressor's attributes: the kernel named and parametrised (the kernels
themselves are onyx.kernels.svm)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import svm
from onyx.ops.ml._common import mm


def kernel_params_of(kernel_type: str, params) -> tuple[float, float, float]:
    """(gamma, coef0, degree) from kernel_params; checks the kernel type."""
    if kernel_type not in svm.KERNELS:
        raise InvalidArgument(f"SVM: kernel_type must be LINEAR, POLY, RBF or SIGMOID, got {kernel_type!r}")
    params = list(params or [])
    gamma = params[0] if len(params) > 0 else 0.0
    coef0 = params[1] if len(params) > 1 else 0.0
    degree = params[2] if len(params) > 2 else 0.0
    return gamma, coef0, degree


def kernel_function(sv: np.ndarray, kernel_type: str, params) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> K(x_i, sv_j)`` for all rows and support vectors, (N, S) float64, products on a
    single-threaded BLAS (see onyx.ops.ml._common.mm)."""
    return svm.kernel_function(sv, kernel_type, *kernel_params_of(kernel_type, params), matmul=mm)
