"""DFT: discrete Fourier transform along one axis of a [..., 1|2] real/complex tensor.

Versions 17 (axis attribute, default 1) and 20 (axis input, default -2). ``onesided`` selects RFFT
(forward, real input) or IRFFT (inverse, real output); ``dft_length`` truncates or zero-pads.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.signal._common import from_complex, scalar_int, to_complex


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
