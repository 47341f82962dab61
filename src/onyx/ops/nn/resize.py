"""Resize (all versions): nearest / linear / cubic, every coordinate transformation, antialias, axes."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._resize import CTMS, MODES, NEAREST, resample
from onyx.ops.nn._shapes import resize_rule
from onyx.ops.registry import op, shape_rule


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def _round_half_up(v):
    return int(math.floor(v + 0.5))


def resize_impl(
    X,
    roi,
    scales,
    sizes,
    *,
    axes=None,
    antialias=0,
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    keep_aspect_ratio_policy="stretch",
    mode="nearest",
    nearest_mode="round_prefer_floor",
):
    r = X.ndim
    if axes is None or len(axes) == 0:
        axes = list(range(r))
    else:
        axes = [a + r if a < 0 else a for a in axes]
        if any(not 0 <= a < r for a in axes) or len(set(axes)) != len(axes):
            raise InvalidArgument(f"Resize: axes {axes} invalid for input of rank {r}")
    k = len(axes)
    ctm = _s(coordinate_transformation_mode)
    mode = _s(mode)
    policy = _s(keep_aspect_ratio_policy)
    if mode not in MODES:
        raise InvalidArgument(f"Resize: mode {mode!r} is not one of {MODES}")
    if ctm not in CTMS:
        raise InvalidArgument(f"Resize: coordinate_transformation_mode {ctm!r} is not one of {CTMS}")
    if _s(nearest_mode) not in NEAREST:
        raise InvalidArgument(f"Resize: nearest_mode {nearest_mode!r} is not one of {NEAREST}")
    in_shape = X.shape
    roi_full = [(0.0, 1.0)] * r
    if roi is not None and np.size(roi) > 0 and ctm == "tf_crop_and_resize":
        rv = np.asarray(roi, dtype=np.float64).ravel()
        if rv.size != 2 * k:
            raise InvalidArgument(f"Resize: roi has {rv.size} values, expected {2 * k}")
        for i, a in enumerate(axes):
            roi_full[a] = (float(rv[i]), float(rv[i + k]))
    sc = [1.0] * r
    out = list(in_shape)
    out_f = None
    if sizes is not None and np.size(sizes) > 0:
        if scales is not None and np.size(scales) > 0:
            raise InvalidArgument("Resize: only one of scales and sizes may be given")
        sv = [int(v) for v in np.asarray(sizes).ravel()]
        if len(sv) != k:
            raise InvalidArgument(f"Resize: sizes has {len(sv)} values, expected {k} for input {in_shape}")
        if policy == "stretch":
            for i, a in enumerate(axes):
                out[a] = sv[i]
                sc[a] = sv[i] / in_shape[a] if in_shape[a] else 1.0
        elif policy in ("not_larger", "not_smaller"):
            ratios = [sv[i] / in_shape[a] for i, a in enumerate(axes)]
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a] = _round_half_up(s * in_shape[a])
                sc[a] = s
        else:
            raise InvalidArgument(
                f"Resize: keep_aspect_ratio_policy {policy!r} is not stretch/not_larger/not_smaller"
            )
    elif scales is not None and np.size(scales) > 0:
        sv = [float(v) for v in np.asarray(scales).ravel()]
        if len(sv) != k:
            raise InvalidArgument(f"Resize: scales has {len(sv)} values, expected {k} for input {in_shape}")
        for i, a in enumerate(axes):
            if sv[i] <= 0:
                raise InvalidArgument(f"Resize: scales must be positive, got {sv}")
            sc[a] = sv[i]
            span = roi_full[a][1] - roi_full[a][0] if ctm == "tf_crop_and_resize" else 1.0
            out[a] = int(math.floor(in_shape[a] * span * sv[i]))
        out_f = [float(in_shape[d]) * sc[d] for d in range(r)]
    else:
        raise InvalidArgument("Resize: one of scales and sizes must be given")
    return resample(
        X,
        out,
        sc,
        mode=mode,
        ctm=ctm,
        nearest_mode=_s(nearest_mode),
        cubic_a=cubic_coeff_a,
        exclude_outside=exclude_outside,
        antialias=antialias,
        roi=roi_full,
        extrap=extrapolation_value,
        out_f=out_f,
    )


def resize_legacy(X, scales, mode):
    """Resize-10 / Upsample: asymmetric coordinates, nearest rounds down, output floor(in * scale)."""
    mode = _s(mode)
    if mode == "bilinear":
        mode = "linear"
    sv = [float(v) for v in np.asarray(scales).ravel()]
    if len(sv) != X.ndim:
        raise InvalidArgument(f"scales has {len(sv)} values, expected {X.ndim} for input {X.shape}")
    if any(v <= 0 for v in sv):
        raise InvalidArgument(f"scales must be positive, got {sv}")
    out = [int(math.floor(n * s)) for n, s in zip(X.shape, sv)]
    return resample(
        X,
        out,
        sv,
        mode=mode,
        ctm="asymmetric",
        nearest_mode="floor",
        cubic_a=-0.75,
        exclude_outside=0,
        antialias=0,
        roi=[(0.0, 1.0)] * X.ndim,
        extrap=0.0,
    )


@op("Resize", since=10, until=11)
def resize_10(X, scales, *, mode="nearest"):
    return resize_legacy(X, scales, mode)


@op("Resize", since=11, until=18)
def resize_11(
    X,
    roi=None,
    scales=None,
    sizes=None,
    *,
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    mode="nearest",
    nearest_mode="round_prefer_floor",
):
    return resize_impl(
        X,
        roi,
        scales,
        sizes,
        coordinate_transformation_mode=coordinate_transformation_mode,
        cubic_coeff_a=cubic_coeff_a,
        exclude_outside=exclude_outside,
        extrapolation_value=extrapolation_value,
        mode=mode,
        nearest_mode=nearest_mode,
    )


@op("Resize", since=18)
def resize_18(
    X,
    roi=None,
    scales=None,
    sizes=None,
    *,
    antialias=0,
    axes=None,
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    keep_aspect_ratio_policy="stretch",
    mode="nearest",
    nearest_mode="round_prefer_floor",
):
    return resize_impl(
        X,
        roi,
        scales,
        sizes,
        axes=axes,
        antialias=antialias,
        coordinate_transformation_mode=coordinate_transformation_mode,
        cubic_coeff_a=cubic_coeff_a,
        exclude_outside=exclude_outside,
        extrapolation_value=extrapolation_value,
        keep_aspect_ratio_policy=keep_aspect_ratio_policy,
        mode=mode,
        nearest_mode=nearest_mode,
    )


shape_rule("Resize")(resize_rule)
