"""Separable resampling shared by Resize and Upsample.

Each resized axis gets a small table of taps: input indices (out, T) and weights (out, T), cached by
the axis geometry. Nearest is a single gather per axis; linear/cubic gather T shifted copies and sum
them with their weights, so the cost is O(output * taps), never a dense (out x in) matrix.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype

MODES = ("nearest", "linear", "cubic")
CTMS = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
    "tf_half_pixel_for_nn",
)
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _coords(ctm, n_in, n_out, scale, roi_start, roi_end, n_out_f):
    """Input coordinate (float64) of every output index along one axis.

    ``n_out_f`` is the unrounded output length (``n_in * scale`` when scales were given): align_corners
    and tf_crop_and_resize divide by it, as the node suite expects.
    """
    x = np.arange(n_out, dtype=np.float64)
    if ctm == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        adj = n_out / (n_in * scale)
        offset = n_in / 2.0 * (1 - adj)
        return offset + (x + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if ctm == "align_corners":
        return x * (n_in - 1) / (n_out_f - 1) if n_out > 1 else np.zeros(n_out)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if ctm == "tf_crop_and_resize":
        if n_out > 1:
            return roi_start * (n_in - 1) + x * (roi_end - roi_start) * (n_in - 1) / (n_out_f - 1)
        return np.full(n_out, 0.5 * (roi_start + roi_end) * (n_in - 1))
    raise InvalidArgument(f"Resize: coordinate_transformation_mode {ctm!r} is not one of {CTMS}")


def _cubic(d, a):
    d = np.abs(d)
    d2 = d * d
    d3 = d2 * d
    near = (a + 2) * d3 - (a + 3) * d2 + 1
    far = a * d3 - 5 * a * d2 + 8 * a * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


@lru_cache(maxsize=256)
def axis_taps(
    n_in,
    n_out,
    scale,
    mode,
    ctm,
    nearest_mode,
    cubic_a,
    exclude_outside,
    antialias,
    roi_start,
    roi_end,
    n_out_f,
):
    """(indices (out, T) int64, weights (out, T) float64 or None, outside mask (out,) or None)."""
    x = _coords(ctm, n_in, n_out, scale, roi_start, roi_end, n_out_f)
    outside = None
    if ctm == "tf_crop_and_resize":
        out_mask = (x < 0) | (x > n_in - 1)
        if out_mask.any():
            outside = out_mask
    if mode == "nearest":
        if nearest_mode == "round_prefer_floor":
            i = np.ceil(x - 0.5)
        elif nearest_mode == "round_prefer_ceil":
            i = np.floor(x + 0.5)
        elif nearest_mode == "floor":
            i = np.floor(x)
        elif nearest_mode == "ceil":
            i = np.ceil(x)
        else:
            raise InvalidArgument(f"Resize: nearest_mode {nearest_mode!r} is not one of {NEAREST}")
        idx = np.clip(i, 0, n_in - 1).astype(np.int64)[:, None]
        return idx, None, outside
    if antialias and scale < 1:
        support = (1.0 if mode == "linear" else 2.0) / scale
        lo = np.floor(x - support) + 1
        t = int(math.ceil(2 * support)) + 1
        j = lo[:, None] + np.arange(t)[None, :]
        d = (j - x[:, None]) * scale
        w = np.maximum(0.0, 1 - np.abs(d)) if mode == "linear" else _cubic(d, cubic_a)
        if exclude_outside:
            w = np.where((j >= 0) & (j <= n_in - 1), w, 0.0)
        s = w.sum(axis=1, keepdims=True)
        w = w / np.where(s == 0, 1, s)
        return np.clip(j, 0, n_in - 1).astype(np.int64), w, outside
    if mode == "linear":
        if ctm != "tf_crop_and_resize":
            x = np.clip(x, 0, n_in - 1)
        x0 = np.floor(x)
        f = x - x0
        j = x0[:, None] + np.arange(2)[None, :]
        w = np.stack([1 - f, f], axis=1)
    elif mode == "cubic":
        x0 = np.floor(x)
        f = x - x0
        j = x0[:, None] + np.arange(-1, 3)[None, :]
        w = _cubic(np.arange(-1, 3)[None, :] - f[:, None], cubic_a)
        if exclude_outside:
            w = np.where((j >= 0) & (j <= n_in - 1), w, 0.0)
            s = w.sum(axis=1, keepdims=True)
            w = w / np.where(s == 0, 1, s)
    else:
        raise InvalidArgument(f"Resize: mode {mode!r} is not one of {MODES}")
    return np.clip(j, 0, n_in - 1).astype(np.int64), w, outside


def resample(
    x,
    out_shape,
    scales,
    *,
    mode,
    ctm,
    nearest_mode,
    cubic_a,
    exclude_outside,
    antialias,
    roi,
    extrap,
    out_f=None,
):
    """Resample ``x`` to ``out_shape``; ``scales[d]`` is the per-axis scale, ``roi`` (start, end) per axis."""
    dtype = x.dtype
    out_shape = tuple(int(v) for v in out_shape)
    if any(v < 0 for v in out_shape):
        raise InvalidArgument(f"Resize: negative output shape {out_shape} for input {x.shape}")
    nd = x.ndim
    axes = [
        d for d in range(nd) if out_shape[d] != x.shape[d] or scales[d] != 1.0 or ctm == "tf_crop_and_resize"
    ]
    if mode == "nearest":
        y = x
    else:
        y = x.astype(compute_dtype(dtype) if dtype.kind in "fV" else np.float32, copy=False)
    masks = []
    if 0 in out_shape or 0 in x.shape:
        return np.zeros(out_shape, dtype=dtype)
    tables = []
    for d in axes:
        idx, w, outside = axis_taps(
            x.shape[d],
            out_shape[d],
            float(scales[d]),
            mode,
            ctm,
            nearest_mode,
            float(cubic_a),
            bool(exclude_outside),
            bool(antialias),
            float(roi[d][0]),
            float(roi[d][1]),
            float(out_shape[d] if out_f is None else out_f[d]),
        )
        if outside is not None:
            masks.append((d, outside))
        tables.append((d, idx, w))
    if mode == "nearest" and len(tables) > 1:
        # one gather over the flattened trailing axes (from the first resized one) with combined indices
        first = tables[0][0]
        per_axis = {d: idx[:, 0] for d, idx, _ in tables}
        flat = np.zeros((), dtype=np.int64)
        for a in range(first, nd):
            ia = per_axis.get(a, np.arange(x.shape[a]))
            flat = (flat[..., None] * x.shape[a] + ia).reshape(flat.shape + ia.shape)
        lead = y.shape[:first]
        y = np.take(y.reshape(lead + (-1,)), flat.ravel(), axis=first).reshape(lead + flat.shape)
        tables = []
    for d, idx, w in tables:
        if w is None:
            y = np.take(y, idx[:, 0], axis=d)
            continue
        shp = [1] * nd
        shp[d] = out_shape[d]
        wt = w.astype(y.dtype)
        acc = None
        for t in range(idx.shape[1]):
            g = np.take(y, idx[:, t], axis=d)
            g *= wt[:, t].reshape(shp)
            if acc is None:
                acc = g
            else:
                acc += g
        y = acc
    if masks:
        y = np.array(y, copy=True)
        for d, m in masks:
            shp = [1] * nd
            shp[d] = out_shape[d]
            y = np.where(m.reshape(shp), np.asarray(extrap, dtype=y.dtype), y)
    if dtype.kind in "iu" and y.dtype != dtype:
        info = np.iinfo(dtype)
        y = np.clip(np.rint(y), info.min, info.max)
    return back(np.ascontiguousarray(y), dtype)
