"""Pooling shared by MaxPool, AveragePool and LpPool: one vectorised pass per kernel offset."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import pool as kernels_pool
from onyx.kernels.pool import lowest, separable_reduce
from onyx.ops.nn._common import as_ints, check_rank, norm_auto_pad, pad_spatial, window_geometry, window_views


def pool_setup(x, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, what):
    check_rank(x, 3, what)
    nd = x.ndim - 2
    if kernel_shape is None or len(kernel_shape) != nd:
        raise InvalidArgument(
            f"{what}: kernel_shape {kernel_shape} must have one value per spatial axis of {x.shape}"
        )
    kernel = tuple(int(k) for k in kernel_shape)
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    ap = norm_auto_pad(auto_pad)
    pb, pe, out, pe0 = window_geometry(
        tuple(x.shape[2:]), kernel, strides, dilations, pads, ap, bool(ceil_mode)
    )
    return kernel, strides, dilations, pb, pe, out, pe0


def max_pool(x, kernel, strides, dilations, pb, pe, out, threads: int = 0):
    """Max pooling (onyx.kernels.pool.max_pool2d: compiled for 2-D float32/float64)."""
    return kernels_pool.max_pool2d(
        x, kernel=kernel, strides=strides, dilations=dilations, pads_begin=pb, out_shape=out, threads=threads
    )


@lru_cache(maxsize=256)
def _positions(in_shape, kernel, strides, dilations, pb, out):
    """Per kernel offset: per-axis input positions (length out_i) and validity."""
    res = []
    nd = len(kernel)
    for kidx in np.ndindex(*kernel):
        pos = [np.arange(out[i]) * strides[i] + kidx[i] * dilations[i] - pb[i] for i in range(nd)]
        res.append(pos)
    return res


def max_pool_with_indices(x, kernel, strides, dilations, pb, pe, out, storage_order):
    n, c = x.shape[:2]
    sp = tuple(x.shape[2:])
    nd = len(sp)
    xp = pad_spatial(x, pb, pe, lowest(x.dtype))
    best = None
    bidx = None
    total = int(np.prod(sp))
    base = (np.arange(n * c, dtype=np.int64) * total).reshape((n, c) + (1,) * nd)
    if storage_order:
        mults = [int(np.prod(sp[:i])) for i in range(nd)]
    else:
        mults = [int(np.prod(sp[i + 1 :])) for i in range(nd)]
    positions = _positions(sp, kernel, strides, dilations, pb, out)
    for (_, v), pos in zip(window_views(xp, kernel, strides, dilations, out), positions):
        lin = np.zeros(out, dtype=np.int64)
        valid = np.ones(out, dtype=bool)
        for i in range(nd):
            shp = [1] * nd
            shp[i] = out[i]
            p = pos[i].reshape(shp)
            lin = lin + p * mults[i]
            valid = valid & ((p >= 0) & (p < sp[i]))
        if best is None:
            best = v.copy()
            bidx = np.where(valid, lin, -1) + np.zeros((n, c) + (1,) * nd, dtype=np.int64)
            continue
        upd = (v > best) | ((bidx < 0) & valid)
        np.copyto(best, v, where=upd)
        np.copyto(bidx, np.broadcast_to(lin, bidx.shape), where=upd)
    bidx = bidx + base
    return best, bidx


@lru_cache(maxsize=256)
def _counts(in_shape, kernel, strides, dilations, pb, pe0, out, include_pad):
    """Number of elements each window averages over (product of per-axis counts)."""
    nd = len(kernel)
    cnt = np.ones((), dtype=np.float64)
    for i in range(nd):
        lo = -pb[i] if include_pad else 0
        hi = in_shape[i] + pe0[i] if include_pad else in_shape[i]
        start = np.arange(out[i]) * strides[i] - pb[i]
        pos = start[:, None] + np.arange(kernel[i])[None, :] * dilations[i]
        ci = ((pos >= lo) & (pos < hi)).sum(axis=1).astype(np.float64)
        cnt = np.multiply.outer(cnt, ci)
    cnt[cnt == 0] = 1
    return cnt


def sum_pool(x, kernel, strides, dilations, pb, pe, out, power=None):
    """Sum over windows (zero padding); with ``power`` p, the sum of |x|^p."""
    n, c = x.shape[:2]
    if n * c * int(np.prod(out)) == 0:
        return np.zeros((n, c) + out, dtype=x.dtype)
    if power is not None:
        x = np.abs(x)
        if power != 1:
            x = x**power
    return separable_reduce(x, kernel, strides, dilations, pb, out, np.add, 0)


def avg_pool(x, kernel, strides, dilations, pb, pe, out, pe0, count_include_pad):
    acc = sum_pool(x, kernel, strides, dilations, pb, pe, out)
    cnt = _counts(tuple(x.shape[2:]), kernel, strides, dilations, pb, pe0, out, bool(count_include_pad))
    acc /= cnt.astype(acc.dtype)
    return acc
