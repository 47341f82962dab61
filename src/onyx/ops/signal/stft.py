"""STFT: short-time Fourier transform of [batch, length, 1|2] signals, frame by frame."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.signal._common import from_complex, scalar_int, to_complex


@op("STFT", since=17)
def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    x = np.asarray(signal)
    if x.ndim != 3:
        raise InvalidArgument(f"STFT: signal must be [batch, length, 1|2], got shape {x.shape}")
    if x.dtype.kind not in "fV":
        raise InvalidArgument(f"STFT: signal must be floating-point, got {x.dtype}")
    sig, is_real = to_complex(x, "STFT")
    length = sig.shape[1]
    step = scalar_int(frame_step, "STFT: frame_step")
    if step < 1:
        raise InvalidArgument(f"STFT: frame_step must be >= 1, got {step}")
    win = None
    if window is not None:
        win = np.asarray(window)
        if win.ndim != 1:
            raise InvalidArgument(f"STFT: window must be 1-D, got shape {win.shape}")
    if frame_length is not None:
        flen = scalar_int(frame_length, "STFT: frame_length")
        if win is not None and win.shape[0] != flen:
            raise InvalidArgument(f"STFT: window has length {win.shape[0]}, frame_length is {flen}")
    else:
        flen = win.shape[0] if win is not None else length
    if not 1 <= flen <= length:
        raise InvalidArgument(f"STFT: frame_length {flen} must lie in [1, signal length {length}]")
    if onesided and not is_real:
        raise InvalidArgument("STFT: onesided=1 needs a real signal (last dimension 1); got a complex one")
    frames = np.lib.stride_tricks.sliding_window_view(sig, flen, axis=1)[:, ::step]  # (B, F, flen)
    if win is not None:
        frames = frames * win.astype(sig.real.dtype, copy=False)
    y = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return from_complex(y, x.dtype)
