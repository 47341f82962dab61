"""DeformConv (v19, v22): deformable convolution, N-D.

Sampling positions (kernel grid + learned offsets) are bilinearly interpolated with vectorised
gathers into a column matrix (N, C * k, P), optionally modulated by the mask, followed by one matmul
batched over images and groups, as in Conv.
"""

from __future__ import annotations

import itertools

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import as_ints, back, compute_dtype
from onyx.ops.nn._shapes import deform_conv_rule
from onyx.ops.registry import op, shape_rule


@op("DeformConv", since=19)
def deform_conv(
    X,
    W,
    offset,
    B=None,
    mask=None,
    *,
    dilations=None,
    group=1,
    kernel_shape=None,
    offset_group=1,
    pads=None,
    strides=None,
):
    if X.ndim < 3 or W.ndim != X.ndim:
        raise InvalidArgument(f"DeformConv: X {X.shape} and W {W.shape} must have the same rank >= 3")
    nd = X.ndim - 2
    n, c = X.shape[:2]
    sp = X.shape[2:]
    m, cg = W.shape[:2]
    kernel = tuple(W.shape[2:])
    if kernel_shape and tuple(int(v) for v in kernel_shape) != kernel:
        raise InvalidArgument(f"DeformConv: kernel_shape {kernel_shape} does not match W {W.shape}")
    group, og = int(group), int(offset_group)
    if c != cg * group or m % group or c % og:
        raise InvalidArgument(
            f"DeformConv: X {X.shape}, W {W.shape}, group={group}, offset_group={og} disagree"
        )
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    out = tuple(
        (sp[i] + pads[i] + pads[i + nd] - ((kernel[i] - 1) * dilations[i] + 1)) // strides[i] + 1
        for i in range(nd)
    )
    kp = int(np.prod(kernel))
    p = int(np.prod(out))
    if offset.shape != (n, og * kp * nd) + out:
        raise InvalidArgument(f"DeformConv: offset {offset.shape}, expected {(n, og * kp * nd) + out}")
    if mask is not None and mask.shape != (n, og * kp) + out:
        raise InvalidArgument(f"DeformConv: mask {mask.shape}, expected {(n, og * kp) + out}")
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    off = offset.astype(np.float64).reshape(n, og, kp, nd, p)
    # base sampling position of (kernel offset, output position) along each axis: (kp, P)
    kidx = np.array(list(np.ndindex(*kernel)), dtype=np.float64).reshape(kp, nd)
    oidx = np.array(list(np.ndindex(*out)), dtype=np.float64).reshape(p, nd)
    base = [
        oidx[None, :, i] * strides[i] - pads[i] + kidx[:, i : i + 1] * dilations[i] for i in range(nd)
    ]  # each (kp, P)
    cog = c // og
    xf = x.reshape(n, og, cog, -1)
    spatial_mult = [int(np.prod(sp[i + 1 :])) for i in range(nd)]
    cols = np.zeros((n, og, cog, kp * p), dtype=ct)
    pos = [base[i][None, None] + off[:, :, :, i, :] for i in range(nd)]  # (N, og, kp, P)
    lows = [np.floor(pi) for pi in pos]
    for corner in itertools.product((0, 1), repeat=nd):
        w = None
        valid = None
        lin = None
        for i in range(nd):
            ci = lows[i] + corner[i]
            wi = 1 - np.abs(pos[i] - ci)
            vi = (ci >= 0) & (ci <= sp[i] - 1)
            w = wi if w is None else w * wi
            valid = vi if valid is None else valid & vi
            li = np.clip(ci, 0, sp[i] - 1).astype(np.int64) * spatial_mult[i]
            lin = li if lin is None else lin + li
        w = np.where(valid, w, 0.0).astype(ct).reshape(n, og, 1, kp * p)
        vals = np.take_along_axis(xf, lin.reshape(n, og, 1, kp * p), axis=3)
        vals *= w
        cols += vals
    if mask is not None:
        cols *= mask.astype(ct, copy=False).reshape(n, og, 1, kp * p)
    cols = cols.reshape(n, group, cg * kp, p)
    mg = m // group
    y = np.matmul(W.astype(ct, copy=False).reshape(group, mg, cg * kp), cols).reshape((n, m) + out)
    if B is not None:
        y += B.astype(ct, copy=False).reshape((m,) + (1,) * nd)
    return back(y, X.dtype)


shape_rule("DeformConv")(deform_conv_rule)
