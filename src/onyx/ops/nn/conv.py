"""Conv: N-d convolution as GEMM.

1x1 kernels are a plain (batched) matmul, depthwise kernels are shifted multiply-adds, everything else
is im2col (a strided view copied once) followed by one matmul batched over images and groups.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import (
    as_compute_weight,
    as_ints,
    back,
    check_rank,
    compute_dtype,
    im2col,
    norm_auto_pad,
    pad_spatial,
    window_geometry,
)
from onyx.ops.nn._shapes import conv_rule
from onyx.ops.registry import op, shape_rule

_COLS_BYTES = 64 << 20  # largest im2col buffer before the GEMM is split over blocks of output rows


def conv_forward(x, w, b, *, auto_pad, dilations, group, kernel_shape, pads, strides):
    """The convolution shared by Conv, ConvInteger and QLinearConv (inputs already in compute dtype)."""
    check_rank(x, 3, "Conv X")
    if w.ndim != x.ndim:
        raise InvalidArgument(f"Conv: W of shape {w.shape} must have the rank of X {x.shape}")
    nd = x.ndim - 2
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    if kernel_shape:
        ks = tuple(int(k) for k in kernel_shape)
        if ks != kernel:
            raise InvalidArgument(f"Conv: kernel_shape {ks} does not match W of shape {w.shape}")
    group = int(group)
    if group <= 0 or c != cg * group or m % group:
        raise InvalidArgument(
            f"Conv: X of shape {x.shape} and W of shape {w.shape} do not agree with group={group} "
            "(need C = W.shape[1] * group and M divisible by group)"
        )
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    pb, pe, out, _ = window_geometry(
        tuple(x.shape[2:]), kernel, strides, dilations, pads, norm_auto_pad(auto_pad)
    )
    mg = m // group
    p = int(np.prod(out))
    if b is not None and b.shape != (m,):
        raise InvalidArgument(f"Conv: B of shape {b.shape}, expected ({m},)")
    if n == 0 or p == 0 or m == 0:
        return np.zeros((n, m) + out, dtype=x.dtype)
    kp = int(np.prod(kernel))
    if kp == 1 and not any(pb) and not any(pe):
        xs = x
        if any(s != 1 for s in strides):
            xs = x[
                (slice(None), slice(None))
                + tuple(slice(0, (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(nd))
            ]
        cols = xs.reshape(n, group, cg, p)
        y = np.matmul(w.reshape(group, mg, cg), cols)
    elif cg == 1 and group == c and kp > 1:
        return _depthwise(x, w, b, pb, pe, kernel, strides, dilations, out)
    else:
        xp = pad_spatial(x, pb, pe)
        wm = w.reshape(group, mg, cg * kp)
        rows = out[0]
        row_bytes = n * c * kp * (p // rows) * x.dtype.itemsize
        block = max(1, min(rows, _COLS_BYTES // max(row_bytes, 1)))
        if block >= rows:
            cols = im2col(xp, kernel, strides, dilations, out).reshape(n, group, cg * kp, p)
            y = np.matmul(wm, cols)
        else:
            # bound the column buffer: im2col + GEMM over blocks of output rows
            y = np.empty((n, group, mg, rows, p // rows), dtype=x.dtype)
            for r0 in range(0, rows, block):
                r1 = min(rows, r0 + block)
                sub = (r1 - r0,) + out[1:]
                cols = im2col(xp[:, :, r0 * strides[0] :], kernel, strides, dilations, sub)
                cols = cols.reshape(n, group, cg * kp, (r1 - r0) * (p // rows))
                y[:, :, :, r0:r1] = np.matmul(wm, cols).reshape(n, group, mg, r1 - r0, p // rows)
    y = y.reshape((n, m) + out)
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y


def _depthwise(x, w, b, pb, pe, kernel, strides, dilations, out):
    """Depthwise convolution (one input channel per group, any multiplier) on flattened (polyphase) planes.

    The padded image is split into its stride phases (one phase when the stride is 1) and each phase
    is flattened per channel, so every kernel offset is one contiguous shift of a whole phase plane:
    each multiply-add runs over one long contiguous run per channel instead of one short (strided)
    run per output row. Positions that wrap across a row end land in columns that are cut off.
    """
    n, c = x.shape[:2]
    nd = len(kernel)
    q = tuple(-(-(x.shape[2 + i] + pb[i] + pe[i]) // strides[i]) for i in range(nd))  # phase extents
    qstrides = [int(np.prod(q[i + 1 :])) for i in range(nd)]
    total = int(np.prod(q))
    length = out[0] * qstrides[0]
    taps = []
    for k in np.ndindex(*kernel):
        phase = tuple((k[i] * dilations[i]) % strides[i] for i in range(nd))
        off = sum((k[i] * dilations[i]) // strides[i] * qstrides[i] for i in range(nd))
        taps.append((phase, off))
    width = max(total, length + max(off for _, off in taps))
    inner = (slice(None), slice(None)) + tuple(slice(pb[i], pb[i] + x.shape[2 + i]) for i in range(nd))
    if all(st == 1 for st in strides):
        flat = np.zeros((n, c, width), dtype=x.dtype)
        flat[:, :, :total].reshape((n, c) + q)[inner] = x
        planes = {(0,) * nd: flat}
    else:
        full = np.zeros((n, c) + tuple(q[i] * strides[i] for i in range(nd)), dtype=x.dtype)
        full[inner] = x
        split = full.reshape((n, c) + tuple(v for i in range(nd) for v in (q[i], strides[i])))
        planes = {}
        for phase in {ph for ph, _ in taps}:
            plane = np.zeros((n, c, width), dtype=x.dtype)
            sel = (slice(None), slice(None)) + tuple(v for i in range(nd) for v in (slice(None), phase[i]))
            plane[:, :, :total].reshape((n, c) + q)[...] = split[sel]
            planes[phase] = plane
    mult = w.shape[0] // c
    wk = w.reshape(c, mult, -1, 1)
    acc = np.empty((n, c, mult, length), dtype=x.dtype)
    tmp = np.empty_like(acc)
    for j, (phase, off) in enumerate(taps):
        view = planes[phase][:, :, None, off : off + length]
        if j == 0:
            np.multiply(view, wk[:, :, 0], out=acc)
        else:
            np.multiply(view, wk[:, :, j], out=tmp)
            acc += tmp
    if b is not None:
        acc += b.reshape(c, mult, 1)
    full_out = acc.reshape((n, c * mult, out[0]) + q[1:])
    return np.ascontiguousarray(full_out[(slice(None),) * 3 + tuple(slice(0, o) for o in out[1:])])


@op("Conv", since=1)
def conv(
    X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None
):
    dtype = X.dtype
    ct = compute_dtype(dtype)
    y = conv_forward(
        X.astype(ct, copy=False),
        as_compute_weight(W, ct),
        None if B is None else B.astype(ct, copy=False),
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    return back(y, dtype)


shape_rule("Conv")(conv_rule)
