"""RoiAlign (v10, v16+): bilinear sampling on a regular grid per bin, averaged or maxed.

Per region of interest, the sample coordinates of every bin form two 1-D grids, so the four corner
gathers are single fancy-indexing operations over (C, rows, cols); only the loop over regions remains.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import roi_rule
from onyx.ops.registry import op, shape_rule


def _axis_samples(start, size, out, grid, limit):
    """Sample positions along one axis: low/high indices, weights, validity."""
    bin_size = size / out
    pos = (
        start + np.arange(out)[:, None] * bin_size + (np.arange(grid)[None, :] + 0.5) * bin_size / grid
    ).ravel()
    valid = (pos >= -1.0) & (pos <= limit)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    at_end = low >= limit - 1
    low = np.where(at_end, limit - 1, low)
    high = np.where(at_end, limit - 1, low + 1)
    pos = np.where(at_end, low.astype(np.float64), pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, valid


def roi_align(X, rois, batch_indices, mode, out_h, out_w, sampling_ratio, spatial_scale, half_pixel):
    if X.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        raise InvalidArgument(f"RoiAlign: X {X.shape} must be 4-D and rois {rois.shape} of shape (R, 4)")
    bi = np.asarray(batch_indices).astype(np.int64).ravel()
    if bi.shape[0] != rois.shape[0]:
        raise InvalidArgument(
            f"RoiAlign: batch_indices {bi.shape} must have one entry per roi ({rois.shape[0]})"
        )
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("avg", "max"):
        raise InvalidArgument(f"RoiAlign: mode {mode!r} must be avg or max")
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    n, c, h, w = x.shape
    r = rois.shape[0]
    y = np.zeros((r, c, out_h, out_w), dtype=ct)
    offset = 0.5 if half_pixel else 0.0
    rv = rois.astype(np.float64)
    for k in range(r):
        b = int(bi[k])
        if not 0 <= b < n:
            raise InvalidArgument(f"RoiAlign: batch index {b} out of range for X {X.shape}")
        x1, y1, x2, y2 = rv[k] * spatial_scale - offset
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(rh / out_h)), 1)
        gw = sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(rw / out_w)), 1)
        yl, yh, wyl, wyh, vy = _axis_samples(y1, rh, out_h, gh, h)
        xl, xh, wxl, wxh, vx = _axis_samples(x1, rw, out_w, gw, w)
        f = x[b]
        valid = (vy[:, None] & vx[None, :]).astype(ct)
        w11 = (wyl[:, None] * wxl[None, :]).astype(ct) * valid
        w12 = (wyl[:, None] * wxh[None, :]).astype(ct) * valid
        w21 = (wyh[:, None] * wxl[None, :]).astype(ct) * valid
        w22 = (wyh[:, None] * wxh[None, :]).astype(ct) * valid
        v11 = f[:, yl[:, None], xl[None, :]] * w11
        v12 = f[:, yl[:, None], xh[None, :]] * w12
        v21 = f[:, yh[:, None], xl[None, :]] * w21
        v22 = f[:, yh[:, None], xh[None, :]] * w22
        if mode == "avg":
            s = v11 + v12 + v21 + v22
            y[k] = s.reshape(c, out_h, gh, out_w, gw).sum(axis=(2, 4)) / (gh * gw)
        else:
            s = np.maximum(np.maximum(v11, v12), np.maximum(v21, v22))
            y[k] = s.reshape(c, out_h, gh, out_w, gw).max(axis=(2, 4))
    return back(y, X.dtype)


@op("RoiAlign", since=10, until=16)
def roi_align_10(
    X,
    rois,
    batch_indices,
    *,
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
):
    return roi_align(
        X, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale, False
    )


@op("RoiAlign", since=16)
def roi_align_16(
    X,
    rois,
    batch_indices,
    *,
    coordinate_transformation_mode="half_pixel",
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
):
    ctm = coordinate_transformation_mode
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    if ctm not in ("half_pixel", "output_half_pixel"):
        raise InvalidArgument(
            f"RoiAlign: coordinate_transformation_mode {ctm!r} must be half_pixel/output_half_pixel"
        )
    return roi_align(
        X,
        rois,
        batch_indices,
        mode,
        output_height,
        output_width,
        sampling_ratio,
        spatial_scale,
        ctm == "half_pixel",
    )


shape_rule("RoiAlign")(roi_rule)
