"""com.microsoft CropAndResize: TensorFlow's crop_and_resize on an NCHW map (tf2onnx writes it): every
box (y1, x1, y2, x2 in [0, 1] of the image) is sampled on a crop_height x crop_width grid with corners
aligned, bilinearly or by the nearest pixel; samples outside the image get ``extrapolation_value``."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


def _coords(lo: np.ndarray, hi: np.ndarray, size: int, n: int) -> np.ndarray:
    """(boxes, n) sample positions in pixels, in the boxes' type: corner aligned (the first and last
    exactly on the box's edges, as onnxruntime computes them), the centre when n == 1."""
    t = lo.dtype.type
    if n > 1:
        step = (hi - lo) * t(size - 1) / t(n - 1)
        pos = lo[:, None] * t(size - 1) + np.arange(n, dtype=lo.dtype)[None, :] * step[:, None]
        pos[:, 0] = lo * t(size - 1)
        pos[:, -1] = hi * t(size - 1)
        return pos
    return (t(0.5) * (lo + hi) * t(size - 1))[:, None]


def _check(X, rois, batch_indices, crop_size):  # noqa: N803
    x, r = np.asarray(X), np.asarray(rois)
    b, c = np.asarray(batch_indices), np.asarray(crop_size).reshape(-1)
    if x.ndim != 4:
        raise InvalidArgument(f"CropAndResize: X must be [N, C, H, W], got shape {x.shape}")
    if r.ndim != 2 or r.shape[1] != 4:
        raise InvalidArgument(f"CropAndResize: rois must be [num_rois, 4], got shape {r.shape}")
    if b.shape != (r.shape[0],):
        raise InvalidArgument(f"CropAndResize: batch_indices must be [{r.shape[0]}], got shape {b.shape}")
    if c.size != 2 or c.min() <= 0:
        raise InvalidArgument(f"CropAndResize: crop_size must be 2 positive values, got {c.tolist()}")
    if b.size and (b.min() < 0 or b.max() >= x.shape[0]):
        raise InvalidArgument(f"CropAndResize: batch_indices must be in [0, {x.shape[0]}), got {b.tolist()}")
    return x, r, b.astype(np.int64), int(c[0]), int(c[1])


@op("CropAndResize", domain="com.microsoft", since=1)
def crop_and_resize(X, rois, batch_indices, crop_size, *, extrapolation_value=0.0, mode="bilinear"):  # noqa: N803
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("bilinear", "nearest"):
        raise InvalidArgument(f"CropAndResize: mode must be bilinear or nearest, got {mode!r}")
    x, r, b, ch, cw = _check(X, rois, batch_indices, crop_size)
    h, w = x.shape[2], x.shape[3]
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    rr = r.astype(work.dtype)
    ys = _coords(rr[:, 0], rr[:, 2], h, ch)  # (R, ch)
    xs = _coords(rr[:, 1], rr[:, 3], w, cw)  # (R, cw)
    inside = ((ys >= 0) & (ys <= h - 1))[:, :, None] & ((xs >= 0) & (xs <= w - 1))[:, None, :]
    img = work[b]  # (R, C, H, W)
    rows = np.arange(len(b))[:, None, None]
    if mode == "nearest":
        # halves round away from zero (C's roundf), not to even; positions inside are >= 0
        yi = np.clip(np.floor(ys + 0.5).astype(np.int64), 0, h - 1)
        xi = np.clip(np.floor(xs + 0.5).astype(np.int64), 0, w - 1)
        out = img[rows, :, yi[:, :, None], xi[:, None, :]]  # (R, ch, cw, C)
    else:
        top = np.clip(np.floor(ys).astype(np.int64), 0, h - 1)
        bottom = np.clip(np.ceil(ys).astype(np.int64), 0, h - 1)
        left = np.clip(np.floor(xs).astype(np.int64), 0, w - 1)
        right = np.clip(np.ceil(xs).astype(np.int64), 0, w - 1)
        dy = (ys - np.floor(ys))[:, :, None, None]
        dx = (xs - np.floor(xs))[:, None, :, None]

        def at(yy, xx):
            return img[rows, :, yy[:, :, None], xx[:, None, :]]

        upper = at(top, left) + (at(top, right) - at(top, left)) * dx
        lower = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * dx
        out = upper + (lower - upper) * dy
    out = np.where(inside[..., None], out, work.dtype.type(extrapolation_value))
    return np.ascontiguousarray(np.moveaxis(out, -1, 1)).astype(x.dtype, copy=False)


@shape_rule("CropAndResize", domain="com.microsoft")
def _shape(ctx) -> None:
    x, r, c = ctx.input_shape(0), ctx.input_shape(1), ctx.input_value(3)
    size = [None, None] if c is None else [int(v) for v in np.asarray(c).reshape(-1)][:2]
    ctx.set_output(
        0,
        ctx.input_elem(0),
        [r[0] if r else None, x[1] if x and len(x) == 4 else None, *size],
    )
