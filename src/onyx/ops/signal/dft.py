"""DFT: discrete Fourier transform along one axis of a [..., 1|2] real/complex tensor.

Versions 17 (axis attribute, default 1) and 20 (axis input, default -2). ``onesided`` selects RFFT
(forward, real input) or IRFFT (inverse, real output); ``dft_length`` truncates or zero-pads.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.signal._common import from_complex, known_int, scalar_int, to_complex


def _dft(x, dft_length, axis, inverse, onesided):
    x = np.asarray(x)
    if x.dtype.kind not in "fV":
        raise InvalidArgument(f"DFT: input must be floating-point, got {x.dtype}")
    r = x.ndim
    if r < 2:
        raise InvalidArgument(f"DFT: input must have rank >= 2 ([..., 1|2]), got shape {x.shape}")
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        raise InvalidArgument(
            f"DFT: axis {axis} is out of range [{-r}, -2] U [0, {r - 2}] for shape {x.shape}"
        )
    ax = axis + r if axis < 0 else axis
    signal, is_real = to_complex(x, "DFT")
    dim = signal.shape[ax]
    if dft_length is not None:
        n = scalar_int(dft_length, "DFT: dft_length")
    elif onesided and inverse:
        n = 2 * (dim - 1)
    else:
        n = dim
    if n < 1:
        raise InvalidArgument(f"DFT: dft_length must be >= 1, got {n} (axis {ax} of shape {x.shape})")
    if onesided and inverse:
        y = np.fft.irfft(signal, n=n, axis=ax)
        out = y.astype(x.dtype if x.dtype == np.float64 else np.float32, copy=False)[..., None]
        return out if out.dtype == x.dtype else out.astype(x.dtype)
    if inverse:
        y = np.fft.ifft(signal, n=n, axis=ax)
    elif onesided:
        if is_real:
            y = np.fft.rfft(signal, n=n, axis=ax)
        else:
            y = np.take(np.fft.fft(signal, n=n, axis=ax), np.arange(n // 2 + 1), axis=ax)
    else:
        y = np.fft.fft(signal, n=n, axis=ax)
    return from_complex(y, x.dtype)


@op("DFT", since=17, until=20)
def dft_17(input, dft_length=None, *, axis=1, inverse=0, onesided=0):  # noqa: A002
    return _dft(input, dft_length, axis, inverse, onesided)


@op("DFT", since=20)
def dft_20(input, dft_length=None, axis=None, *, inverse=0, onesided=0):  # noqa: A002
    ax = -2 if axis is None else scalar_int(axis, "DFT: axis")
    return _dft(input, dft_length, ax, inverse, onesided)


@shape_rule("DFT")
def _dft_shape(ctx) -> None:
    """The input's shape with the last dim 2 (1 for onesided inverse: a real signal) and the axis dim
    dft_length (default: the input's; 2*(n-1) for onesided inverse), halved + 1 when onesided."""
    x, elem = ctx.input_shape(0), ctx.input_elem(0)
    if x is None:
        ctx.set_output(0, elem, None)
        return
    r = len(x)
    if r < 2:
        ctx.fail(f"input must have rank >= 2 ([..., 1|2]), got {x}")
    if isinstance(x[-1], int) and x[-1] not in (1, 2):
        ctx.fail(f"the last dim must be 1 (real) or 2 (complex), got {x}")
    if ctx.opset >= 20:
        axis = known_int(ctx, 2) if ctx.has_input(2) else -2
    else:
        axis = int(ctx.attr("axis", 1))
    inverse, onesided = int(ctx.attr("inverse", 0)), int(ctx.attr("onesided", 0))
    dims = list(x)
    if axis is None:  # axis unknown: a full-length transform keeps every dim, others may change any
        keep = not onesided and not ctx.has_input(1)
        ctx.set_output(
            0, elem, (dims[:-1] if keep else [None] * (r - 1)) + [1 if onesided and inverse else 2]
        )
        return
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        ctx.fail(f"axis {axis} is out of range [{-r}, -2] U [0, {r - 2}] for shape {x}")
    ax = axis + r if axis < 0 else axis
    n = known_int(ctx, 1) if ctx.has_input(1) else None
    if not ctx.has_input(1):
        n = x[ax]
        if onesided and inverse:
            n = 2 * (n - 1) if n is not None else None
    if isinstance(n, int) and n < 1:
        ctx.fail(f"dft_length must be >= 1, got {n}")
    if onesided and inverse:
        dims[ax], dims[-1] = n, 1
    elif onesided:
        dims[ax], dims[-1] = (n // 2 + 1 if isinstance(n, int) else ctx.new_dim()), 2
    else:
        dims[ax], dims[-1] = n, 2
    ctx.set_output(0, elem, dims)
