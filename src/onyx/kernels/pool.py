"""Pooling kernels: max pooling (compiled for 2-D float32/float64/8-bit) and the separable window
reductions that are its numpy path and the sum pools' only one.

The compiled loop (``onyx.kernels._pool``) takes, per output row, the elementwise max of the valid
kernel rows over whole contiguous input rows and then the window max along the row: one pass, where
numpy's separable passes write an intermediate array per axis.
"""

from __future__ import annotations

import numpy as np

from onyx.kernels._loader import compiled
from onyx.kernels._threads import resolve

_COMPILED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_EIGHT_BIT = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2}  # the compiled loop's codes for 8-bit integers

#: output elements from which the compiled max pool runs its planes on several threads
PARALLEL_MIN_ELEMENTS = 1 << 14
#: separable passes over blocks of channels of about this many input bytes: each block's intermediate
#: arrays stay in L2 between the passes
_BLOCK_BYTES = 1 << 20


def lowest(dtype: np.dtype):
    """The value a max never picks over a real element: the padding of max pooling."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "b":
        return False
    return -np.inf


#: the largest window row (or pad) the compiled loop takes; its scratch row and index arithmetic are
#: sized from these, so absurd attribute values go to the numpy path, which skips taps outside the input
_COMPILED_MAX_SPAN = 1 << 24


def _fits_compiled(kernel, strides, dilations, pads_begin, out_shape) -> bool:
    for k, s, d, p, o in zip(kernel, strides, dilations, pads_begin, out_shape):
        span = (o - 1) * s + (k - 1) * d + 1  # Python ints: no overflow here
        if span > _COMPILED_MAX_SPAN or p > _COMPILED_MAX_SPAN:
            return False
    return True


def max_pool2d(
    x: np.ndarray,
    *,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads_begin: tuple[int, ...],
    out_shape: tuple[int, ...],
    threads: int = 0,
) -> np.ndarray:
    """Max pooling of ``x`` (N, C, *spatial) into a new (N, C, *out_shape) array: window positions
    outside ``x`` (padding, ceil mode) are ignored, NaNs propagate, a window with no position inside
    ``x`` gives the dtype's lowest value. Compiled for 2-D float32/float64/uint8/int8, numpy otherwise."""
    n, c = x.shape[:2]
    out_shape = tuple(out_shape)
    eight = _EIGHT_BIT.get(x.dtype, 0)
    mod = compiled("_pool") if x.ndim == 4 and (x.dtype in _COMPILED_DTYPES or eight) else None
    if mod is not None and not _fits_compiled(kernel, strides, dilations, pads_begin, out_shape):
        mod = None  # a hostile geometry (a kernel of 2**62): the loop's sizes would overflow in C
    if n * c * int(np.prod(out_shape)) == 0:
        return np.empty((n, c) + out_shape, dtype=x.dtype)
    if mod is None:
        return window_reduce(
            x, kernel, strides, dilations, pads_begin, out_shape, np.maximum, lowest(x.dtype)
        )
    y = np.empty((n, c) + out_shape, dtype=x.dtype)
    t = resolve(threads) if y.size >= PARALLEL_MIN_ELEMENTS else 1
    if eight:  # 8-bit integers go as uint8 views, the loop told their sign
        xv, yv = np.ascontiguousarray(x).view(np.uint8), y.view(np.uint8)
        mod.max_pool2d(xv, yv, *kernel, *strides, *dilations, pads_begin[0], pads_begin[1], t, eight)
        return y
    mod.max_pool2d(np.ascontiguousarray(x), y, *kernel, *strides, *dilations, pads_begin[0], pads_begin[1], t)
    return y


def taps_in_range(k: int, dil: int, pb: int, n_in: int, o: int, s: int) -> range:
    """The kernel taps that read some input position of some output window: tap t reads input index
    ``t * dil - pb + j * s`` for outputs j in [0, o), so it matters only when that can fall in [0, n_in).
    The others read padding only; skipping them keeps a kernel of 2**62 taps (a hostile attribute with
    SAME padding) from looping 2**62 times."""
    if n_in <= 0 or o <= 0:
        return range(0)
    first = -(-(pb - (o - 1) * s) // dil)  # ceil: the first tap whose last window reaches index >= 0
    last = (pb + n_in - 1) // dil  # the last tap whose first window starts at index <= n_in - 1
    return range(max(0, first), min(k, last + 1))


def separable_reduce(x, kernel, strides, dilations, pb, out, ufunc, pad_value) -> np.ndarray:
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
        for k in taps_in_range(kernel[d], dil, pb[d], n_in, o, s):
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


def window_reduce(x, kernel, strides, dilations, pb, out, ufunc, pad_value) -> np.ndarray:
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
