"""com.microsoft CDist: pairwise distances between the rows of A [N, K] and B [M, K] (skl2onnx writes it
for KNeighbors* and GaussianProcess* with ``options={..., 'optim': 'cdist'}``).

Computed as onnxruntime does, through one GEMM: |a|^2 + |b|^2 - 2 a.b, so that the rounding of the
two agrees (a direct difference of rows would be more exact, and further from the oracle). Rounding can
make the squared distance of two equal rows slightly negative: it is clamped to 0 before the root.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import blas
from onyx.ops.registry import op, shape_rule

METRICS = ("sqeuclidean", "euclidean")


def _check(A, B, metric) -> None:  # noqa: N803
    if metric not in METRICS:
        raise InvalidArgument(f"CDist: metric must be one of {METRICS}, got {metric!r}")
    if A.dtype not in (np.float32, np.float64) or B.dtype != A.dtype:
        raise InvalidArgument(f"CDist: A and B must both be float or double, got {A.dtype} and {B.dtype}")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise InvalidArgument(f"CDist: A [N, K] and B [M, K] expected, got {A.shape} and {B.shape}")


@op("CDist", domain="com.microsoft", since=1)
def cdist(A, B, *, metric="sqeuclidean"):  # noqa: N803
    metric = metric.decode() if isinstance(metric, bytes) else metric
    _check(A, B, metric)
    d = blas.matmul(A, B.T)
    d *= A.dtype.type(-2)
    d += np.einsum("ij,ij->i", A, A)[:, None]
    d += np.einsum("ij,ij->i", B, B)[None, :]
    np.maximum(d, 0, out=d)
    if metric == "euclidean":
        np.sqrt(d, out=d)
    return d


@shape_rule("CDist", domain="com.microsoft")
def _shape(ctx) -> None:
    a, b = ctx.input_shape(0), ctx.input_shape(1)
    n = a[0] if a is not None and len(a) == 2 else None
    m = b[0] if b is not None and len(b) == 2 else None
    ctx.set_output(0, ctx.input_elem(0), [n, m])
