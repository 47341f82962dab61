"""MaxRoiPool: max over each bin of each region of interest (Fast R-CNN style, integer bins)."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import roi_rule
from onyx.ops.registry import op, shape_rule


@op("MaxRoiPool", since=1)
def max_roi_pool(X, rois, *, pooled_shape, spatial_scale=1.0):
    if X.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
        raise InvalidArgument(f"MaxRoiPool: X {X.shape} must be 4-D and rois {rois.shape} of shape (R, 5)")
    ph, pw = (int(v) for v in pooled_shape)
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    n, c, h, w = x.shape
    y = np.zeros((rois.shape[0], c, ph, pw), dtype=ct)
    for k, roi in enumerate(rois.astype(np.float64)):
        b = int(roi[0])
        if not 0 <= b < n:
            raise InvalidArgument(f"MaxRoiPool: batch index {b} out of range for X {X.shape}")
        xs, ys, xe, ye = (_round_away(v * spatial_scale) for v in roi[1:])
        rh = max(ye - ys + 1, 1)
        rw = max(xe - xs + 1, 1)
        bh, bw = rh / ph, rw / pw
        for i in range(ph):
            h0 = min(max(int(math.floor(i * bh)) + ys, 0), h)
            h1 = min(max(int(math.ceil((i + 1) * bh)) + ys, 0), h)
            if h1 <= h0:
                continue
            for j in range(pw):
                w0 = min(max(int(math.floor(j * bw)) + xs, 0), w)
                w1 = min(max(int(math.ceil((j + 1) * bw)) + xs, 0), w)
                if w1 > w0:
                    y[k, :, i, j] = x[b, :, h0:h1, w0:w1].max(axis=(1, 2))
    return back(y, X.dtype)


def _round_away(v: float) -> int:
    """Round half away from zero."""
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


shape_rule("MaxRoiPool")(roi_rule)
