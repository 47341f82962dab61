"""Pooling shared by MaxPool, AveragePool and LpPool: one vectorised pass per kernel offset."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops import _native, _perf
from onyx.ops.nn._common import as_ints, check_rank, norm_auto_pad, pad_spatial, window_geometry, window_views
from onyx.runtime import team


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


def _lowest(dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "b":
        return False
    return -np.inf


def separable_reduce(x, kernel, strides, dilations, pb, out, ufunc, pad_value):
    """Reduce windows axis by axis (max and sum are separable): sum(k_i) passes instead of prod(k_i).

    No padded copy is made: along each axis, every kernel tap updates only the output positions whose
    input index falls inside the tensor; positions a tap never reaches keep ``pad_value`` (the value
    the padding would have contributed). The outer axes go first: their passes read whole contiguous
    rows, and the innermost axis (whose strided reads are the slow part) is reduced last, on the
    smallest array.
    """
    y = x
    nd = len(kernel)
    for d in range(nd):
        axis = 2 + d
        n_in, o, s, dil = y.shape[axis], out[d], strides[d], dilations[d]
        if kernel[d] == 1 and s == 1 and pb[d] == 0 and n_in == o:
            continue
        pre = (slice(None),) * axis
        shape = y.shape[:axis] + (o,) + y.shape[axis + 1 :]
        whole, part = [], []  # taps reaching every output position, and the others
        for k in range(kernel[d]):
            first = k * dil - pb[d]  # input index of output 0 for this tap
            lo = max(0, -(first // s) if first < 0 else 0)
            hi = min(o, (n_in - 1 - first) // s + 1) if n_in - 1 - first >= 0 else 0
            if hi <= lo:
                continue
            src = y[pre + (slice(first + lo * s, first + (hi - 1) * s + 1, s),)]
            (whole if lo == 0 and hi == o else part).append((lo, hi, src))
        if len(whole) >= 2:  # the first two whole taps make the accumulator in one pass
            acc = ufunc(whole[0][2], whole[1][2])
            whole = whole[2:]
        elif whole:
            acc = whole.pop(0)[2].copy()
        else:
            acc = np.full(shape, pad_value, dtype=y.dtype)
        for lo, hi, src in whole + part:
            dst = acc[pre + (slice(lo, hi),)]
            ufunc(dst, src, out=dst)
        y = acc
    return y if y is not x else x.copy()


_JIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: output elements from which a max pool's planes go to MKL's threads (onyx.runtime.team)
_TEAM_MIN = 1 << 14


def max_pool(x, kernel, strides, dilations, pb, pe, out):
    n, c = x.shape[:2]
    if n * c * int(np.prod(out)) == 0:
        return np.empty((n, c) + out, dtype=x.dtype)
    if x.ndim == 4 and x.dtype == np.float32 and _native.available():
        # the compiled loop from its cached machine code (no numba in the process: onyx.ops._native),
        # planes over MKL's threads when they are there
        y = np.empty((n, c) + tuple(out), dtype=x.dtype)
        xc = np.ascontiguousarray(x)
        params = np.array(
            [0, n * c, *xc.shape[2:], xc.ctypes.data, *out, y.ctypes.data, *kernel, *strides, *dilations,
             pb[0], pb[1]],
            np.int64,
        )  # fmt: skip
        team.run_rows(
            _native.task("onyx.ops.nn._jit", "_max_pool2d_task"), params, n * c, y.size >= _TEAM_MIN
        )
        return y
    jit = _perf.jit_module("onyx.ops.nn._jit", if_loaded=True)  # saves ~1 ms: not worth loading numba
    if x.ndim == 4 and x.dtype in _JIT_DTYPES and jit is not None:
        y = np.empty((n, c) + tuple(out), dtype=x.dtype)
        jit.max_pool2d(np.ascontiguousarray(x), y, *kernel, *strides, *dilations, pb[0], pb[1])
        return y
    return blocked_reduce(x, kernel, strides, dilations, pb, out, np.maximum, _lowest(x.dtype))


#: separable passes over blocks of channels of about this many input bytes: each block's intermediate
#: arrays stay in L2 between the passes (ResNet-18's 64 x 112 x 112 max pool in the model: 1005 -> 876 us)
_BLOCK_BYTES = 1 << 20


def blocked_reduce(x, kernel, strides, dilations, pb, out, ufunc, pad_value):
    """:func:`separable_reduce` one block of channels at a time (see _BLOCK_BYTES)."""
    n, c = x.shape[:2]
    per_channel = x.nbytes // max(n * c, 1)
    step = max(1, _BLOCK_BYTES // max(n * per_channel, 1))
    if step >= c:
        return separable_reduce(x, kernel, strides, dilations, pb, out, ufunc, pad_value)
    y = np.empty((n, c) + tuple(out), dtype=x.dtype)
    for c0 in range(0, c, step):
        y[:, c0 : c0 + step] = separable_reduce(
            x[:, c0 : c0 + step], kernel, strides, dilations, pb, out, ufunc, pad_value
        )
    return y


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
    xp = pad_spatial(x, pb, pe, _lowest(x.dtype))
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
