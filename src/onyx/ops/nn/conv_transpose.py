"""ConvTranspose: one GEMM per group (batched) producing columns, then col2im by strided adds."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import as_compute_weight, as_ints, back, check_rank, compute_dtype, norm_auto_pad
from onyx.ops.nn._conv_attrs import ConvAttributes, with_conv_attributes
from onyx.ops.nn._shapes import conv_transpose_rule
from onyx.ops.registry import op, shape_rule


def new_image(n, m, full_shape, dtype, bias=None) -> np.ndarray:
    """A zero (or per-channel ``bias``) image (N, M, *full_shape) to scatter columns into."""
    if bias is None:
        return np.zeros((n, m) + tuple(full_shape), dtype=dtype)
    y = np.empty((n, m) + tuple(full_shape), dtype=dtype)
    y[...] = bias.reshape((m,) + (1,) * len(full_shape))
    return y


def scatter_cols(y, cols, kernel, strides, dilations, in_shape, origin=None) -> None:
    """Add ``cols`` (N, M, *kernel, *in_shape) into ``y``: column (k, i) lands at ``origin + i*s + k*d``.

    One strided add per kernel offset.
    """
    nd = len(kernel)
    origin = origin or (0,) * nd
    for kidx in np.ndindex(*kernel):
        sl = tuple(
            slice(
                origin[i] + kidx[i] * dilations[i],
                origin[i] + kidx[i] * dilations[i] + (in_shape[i] - 1) * strides[i] + 1,
                strides[i],
            )
            for i in range(nd)
        )
        y[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kidx]


def col2im_add(cols, full_shape, kernel, strides, dilations, in_shape, dtype, bias=None) -> np.ndarray:
    """Scatter-add ``cols`` (N, M, *kernel, *in_shape) into a zero (or ``bias``) (N, M, *full_shape) image."""
    y = new_image(cols.shape[0], cols.shape[1], full_shape, dtype, bias)
    scatter_cols(y, cols, kernel, strides, dilations, in_shape)
    return y


_COLS_BYTES = 64 << 20  # largest column buffer before the GEMM is split over blocks of input rows


@op("ConvTranspose", since=1)
@with_conv_attributes
def conv_transpose(
    X,
    W,
    B=None,
    *,
    output_padding=None,
    output_shape=None,
    **conv,
):
    auto_pad, dilations, group, kernel_shape, pads, strides = ConvAttributes(**conv)
    check_rank(X, 3, "ConvTranspose X")
    dtype = X.dtype
    ct = compute_dtype(dtype)
    x = X.astype(ct, copy=False)
    w = as_compute_weight(W, ct)
    nd = x.ndim - 2
    n, c = x.shape[:2]
    in_shape = tuple(x.shape[2:])
    if w.ndim != x.ndim or w.shape[0] != c:
        raise InvalidArgument(f"ConvTranspose: W of shape {W.shape} does not fit X of shape {X.shape}")
    group = int(group)
    if group <= 0 or c % group:
        raise InvalidArgument(f"ConvTranspose: channels {c} not divisible by group={group}")
    mg = w.shape[1]
    m = mg * group
    cg = c // group
    kernel = tuple(w.shape[2:])
    if kernel_shape and tuple(int(k) for k in kernel_shape) != kernel:
        raise InvalidArgument(
            f"ConvTranspose: kernel_shape {kernel_shape} does not match W of shape {W.shape}"
        )
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    opad = as_ints(output_padding, nd, 0, "output_padding")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    ap = norm_auto_pad(auto_pad)
    ek = tuple((kernel[i] - 1) * dilations[i] + 1 for i in range(nd))
    natural = tuple(strides[i] * (in_shape[i] - 1) + opad[i] + ek[i] for i in range(nd))
    if output_shape:
        osh = tuple(int(v) for v in output_shape)[-nd:]
    elif ap in ("SAME_UPPER", "SAME_LOWER"):
        osh = tuple(in_shape[i] * strides[i] for i in range(nd))
    else:
        osh = None
    if osh is not None:
        pb, pe = [], []
        for i in range(nd):
            total = natural[i] - osh[i]
            if ap == "SAME_UPPER":
                pb.append(total // 2)
                pe.append(total - total // 2)
            else:
                pb.append(total - total // 2)
                pe.append(total // 2)
        out = osh
    else:
        pb, pe = list(pads[:nd]), list(pads[nd:])
        if ap == "VALID":
            pb = pe = [0] * nd
        out = tuple(natural[i] - pb[i] - pe[i] for i in range(nd))
    if any(o < 0 for o in out):
        raise InvalidArgument(f"ConvTranspose: negative output shape {out} for X of shape {X.shape}")
    kp = int(np.prod(kernel))
    p = int(np.prod(in_shape))
    # the full image must hold every column and the cropped window [pb, pb + out)
    full = tuple(max(natural[i], pb[i] + out[i]) + max(0, -pb[i]) for i in range(nd))
    shift = tuple(max(0, -pb[i]) for i in range(nd))
    bias = None
    if B is not None:
        if B.shape != (m,):
            raise InvalidArgument(f"ConvTranspose: B of shape {B.shape}, expected ({m},)")
        bias = B.astype(ct, copy=False)
    y = new_image(n, m, full, ct, bias)
    # columns: (N, group, mg * kp, P) = W_g^T (group, mg*kp, cg) @ X (N, group, cg, P), by blocks of rows
    wt = w.reshape(group, cg, mg * kp).transpose(0, 2, 1)
    rows = in_shape[0]
    row_p = p // rows if rows else 0
    block = max(1, min(rows, _COLS_BYTES // max(n * m * kp * row_p * ct.itemsize, 1))) if rows else 1
    for r0 in range(0, rows, block):
        r1 = min(rows, r0 + block)
        sub = (r1 - r0,) + in_shape[1:]
        xb = x[:, :, r0:r1].reshape(n, group, cg, (r1 - r0) * row_p)
        cols = np.matmul(wt, xb).reshape((n, m) + kernel + sub)
        origin = (shift[0] + r0 * strides[0],) + shift[1:]
        scatter_cols(y, cols, kernel, strides, dilations, sub, origin)
    crop = tuple(slice(pb[i] + shift[i], pb[i] + shift[i] + out[i]) for i in range(nd))
    if y.shape[2:] != tuple(out):
        y = np.ascontiguousarray(y[(slice(None), slice(None)) + crop])
    return back(y, dtype)


shape_rule("ConvTranspose")(conv_transpose_rule)
