"""Pooling shared by MaxPool, AveragePool and LpPool: one vectorised pass per kernel offset."""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import pool as kernels_pool
from onyx.kernels.pool import lowest, separable_reduce, taps_in_range
from onyx.ops.nn._common import as_ints, check_rank, norm_auto_pad, pad_spatial, window_geometry


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


#: kernel taps between two checks of the run's stop in :func:`max_pool_with_indices`
TAPS_PER_STOP_CHECK = 64


def max_pool_with_indices(x, kernel, strides, dilations, pb, pe, out, storage_order, stop=None):
    """Max pooling with the flat index of each maximum, one vectorised pass per kernel tap.

    Only the taps that can read an input position are visited (``taps_in_range``): the others read
    padding only and never win, and a hostile kernel_shape of 2**20 x 7 would otherwise loop 7 million
    times. The run's stop (terminate, deadline) is checked between taps.
    """
    n, c = x.shape[:2]
    sp = tuple(x.shape[2:])
    nd = len(sp)
    best = np.full((n, c) + tuple(out), lowest(x.dtype), dtype=x.dtype)
    bidx = np.full(best.shape, -1, dtype=np.int64)
    total = int(np.prod(sp))
    base = (np.arange(n * c, dtype=np.int64) * total).reshape((n, c) + (1,) * nd)
    if storage_order:
        mults = [int(np.prod(sp[:i])) for i in range(nd)]
    else:
        mults = [int(np.prod(sp[i + 1 :])) for i in range(nd)]
    taps = [taps_in_range(kernel[i], dilations[i], pb[i], sp[i], out[i], strides[i]) for i in range(nd)]
    xp = pad_spatial(x, pb, pe, lowest(x.dtype)) if best.size else x
    for count, k in enumerate(itertools.product(*taps) if best.size else ()):
        if stop is not None and count % TAPS_PER_STOP_CHECK == 0:
            stop.check(f"MaxPool (kernel tap {k} of {tuple(kernel)})")
        v = xp[
            (slice(None), slice(None))
            + tuple(
                slice(k[i] * dilations[i], k[i] * dilations[i] + (out[i] - 1) * strides[i] + 1, strides[i])
                for i in range(nd)
            )
        ]
        lin = np.zeros(out, dtype=np.int64)
        valid = np.ones(out, dtype=bool)
        for i in range(nd):
            shp = [1] * nd
            shp[i] = out[i]
            p = (np.arange(out[i]) * strides[i] + k[i] * dilations[i] - pb[i]).reshape(shp)
            lin = lin + p * mults[i]
            valid = valid & ((p >= 0) & (p < sp[i]))
        upd = (v > best) | ((bidx < 0) & valid)
        np.copyto(best, v, where=upd)
        np.copyto(bidx, np.broadcast_to(lin, bidx.shape), where=upd)
    return best, bidx + base


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
