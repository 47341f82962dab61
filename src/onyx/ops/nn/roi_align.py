"""RoiAlign (v10, v16+): bilinear sampling on a regular grid per bin, averaged or maxed.

Per region of interest, the sample coordinates of every bin form two 1-D grids, so the four corner
gathers are fancy-indexing operations over (C, rows, cols), in blocks of output rows (bounded
temporaries, and the run's stop checked between blocks: a huge output_height cannot outlast a deadline).
"""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import roi_rule
from onyx.ops.registry import op, shape_rule


def _axis_samples(start, size, out, grid, limit, first=0, last=None):
    """Sample positions along one axis (of output bins first..last): low/high indices, weights, validity."""
    bin_size = size / out
    bins = np.arange(first, out if last is None else last)
    pos = (start + bins[:, None] * bin_size + (np.arange(grid)[None, :] + 0.5) * bin_size / grid).ravel()
    valid = (pos >= -1.0) & (pos <= limit)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    at_end = low >= limit - 1
    low = np.where(at_end, limit - 1, low)
    high = np.where(at_end, limit - 1, low + 1)
    pos = np.where(at_end, low.astype(np.float64), pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, valid


#: samples (channels x sample rows x sample columns) per block of output rows: what a run's stop waits for
_BLOCK_SAMPLES = 1 << 20


def roi_align(
    X, rois, batch_indices, mode, out_h, out_w, sampling_ratio, spatial_scale, half_pixel, stop=None
):
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
    n, c, h, w = X.shape
    bad = (bi < 0) | (bi >= n)
    if bad.any():  # before any work: a bad index must not wait behind a long computation
        raise InvalidArgument(f"RoiAlign: batch index {int(bi[bad][0])} out of range for X {X.shape}")
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    r = rois.shape[0]
    y = np.zeros((r, c, out_h, out_w), dtype=ct)
    offset = 0.5 if half_pixel else 0.0
    rv = rois.astype(np.float64)
    for k in range(r):
        x1, y1, x2, y2 = rv[k] * spatial_scale - offset
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(rh / out_h)), 1)
        gw = sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(rw / out_w)), 1)
        xl, xh, wxl, wxh, vx = _axis_samples(x1, rw, out_w, gw, w)
        # blocks of output rows: bounded temporaries, and a run's stop (terminate, deadline) between them
        rows = max(1, _BLOCK_SAMPLES // max(1, c * gh * out_w * gw))
        for r0 in range(0, out_h, rows):
            if stop is not None:
                stop.check(f"RoiAlign (roi {k}, output row {r0} of {out_h})")
            r1 = min(out_h, r0 + rows)
            yl, yh, wyl, wyh, vy = _axis_samples(y1, rh, out_h, gh, h, r0, r1)
            y[k, :, r0:r1] = _bins(
                x[int(bi[k])], yl, yh, wyl, wyh, vy, xl, xh, wxl, wxh, vx, ct, mode, gh, gw
            )
    return back(y, X.dtype)


def _bins(f, yl, yh, wyl, wyh, vy, xl, xh, wxl, wxh, vx, ct, mode, gh, gw):
    """One block of output rows of one roi: the bilinear samples of its bins, averaged or maxed."""
    c = f.shape[0]
    valid = (vy[:, None] & vx[None, :]).astype(ct)
    w11 = (wyl[:, None] * wxl[None, :]).astype(ct) * valid
    w12 = (wyl[:, None] * wxh[None, :]).astype(ct) * valid
    w21 = (wyh[:, None] * wxl[None, :]).astype(ct) * valid
    w22 = (wyh[:, None] * wxh[None, :]).astype(ct) * valid
    v11 = f[:, yl[:, None], xl[None, :]] * w11
    v12 = f[:, yl[:, None], xh[None, :]] * w12
    v21 = f[:, yh[:, None], xl[None, :]] * w21
    v22 = f[:, yh[:, None], xh[None, :]] * w22
    rows, cols = yl.shape[0] // gh, xl.shape[0] // gw
    if mode == "avg":
        s = v11 + v12 + v21 + v22
        return s.reshape(c, rows, gh, cols, gw).sum(axis=(2, 4)) / (gh * gw)
    s = np.maximum(np.maximum(v11, v12), np.maximum(v21, v22))
    return s.reshape(c, rows, gh, cols, gw).max(axis=(2, 4))


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
    _ctx=None,
):
    stop = _ctx.stop if _ctx is not None else None
    return roi_align(
        X, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale, False, stop
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
    _ctx=None,
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
        _ctx.stop if _ctx is not None else None,
    )


shape_rule("RoiAlign")(roi_rule)
