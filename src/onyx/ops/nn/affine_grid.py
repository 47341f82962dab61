"""AffineGrid (opset 20): sampling grid from batched 2-D (N, 2, 3) or 3-D (N, 3, 4) affine matrices."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import affine_grid_rule
from onyx.ops.registry import op, shape_rule


def _base(n, align):
    if align:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(n)
    return (np.arange(n) * 2.0 + 1.0) / n - 1.0


@op("AffineGrid", since=20)
def affine_grid(theta, size, *, align_corners=0):
    sz = [int(v) for v in np.asarray(size).ravel()]
    if len(sz) not in (4, 5) or theta.ndim != 3:
        raise InvalidArgument(f"AffineGrid: size {sz} must have 4 or 5 values and theta {theta.shape} be 3-D")
    r = len(sz) - 2
    n = sz[0]
    if theta.shape != (n, r, r + 1):
        raise InvalidArgument(
            f"AffineGrid: theta of shape {theta.shape}, expected {(n, r, r + 1)} for size {sz}"
        )
    spatial = sz[2:]
    # coordinates ordered (x, y[, z]) with x along the last axis
    axes = [_base(s, align_corners) for s in reversed(spatial)]
    mesh = np.meshgrid(*reversed(axes), indexing="ij")  # each of shape spatial
    coords = [m for m in reversed(mesh)] + [np.ones(spatial)]
    base = np.stack(coords, axis=-1).reshape(-1, r + 1)  # (P, r+1)
    ct = compute_dtype(theta.dtype)
    th = theta.astype(ct, copy=False)
    grid = np.matmul(base.astype(ct), th.transpose(0, 2, 1))  # (N, P, r)
    return back(grid.reshape((n,) + tuple(spatial) + (r,)), theta.dtype)


shape_rule("AffineGrid")(affine_grid_rule)
