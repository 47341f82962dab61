"""STFT: short-time Fourier transform of [batch, length, 1|2] signals, frame by frame."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.signal._common import from_complex, known_int, scalar_int, to_complex


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


@shape_rule("STFT")
def _stft_shape(ctx) -> None:
    """[batch, frames, bins, 2]: frames = (length - frame_length) // frame_step + 1, bins =
    frame_length // 2 + 1 when onesided, else frame_length (frame_length: input, window's length, or
    the signal's length)."""
    x, elem = ctx.input_shape(0), ctx.input_elem(0)
    if x is not None and len(x) != 3:
        ctx.fail(f"signal must be [batch, length, 1|2], got {x}")
    batch, length = (None, None) if x is None else (x[0], x[1])
    step = known_int(ctx, 1)
    if step is not None and step < 1:
        ctx.fail(f"frame_step must be >= 1, got {step}")
    flen = known_int(ctx, 3) if ctx.has_input(3) else None
    if flen is None and ctx.has_input(2):
        w = ctx.input_shape(2)
        flen = w[0] if w is not None and len(w) == 1 else None
    if flen is None and not ctx.has_input(3) and not ctx.has_input(2):
        flen = length
    frames = None
    if isinstance(length, int) and isinstance(flen, int) and isinstance(step, int):
        if not 1 <= flen <= length:
            ctx.fail(f"frame_length {flen} must lie in [1, signal length {length}]")
        frames = (length - flen) // step + 1
    elif flen is not None and flen == length:
        frames = 1
    bins = flen
    if int(ctx.attr("onesided", 1)):
        bins = flen // 2 + 1 if isinstance(flen, int) else None
    frames = frames if frames is not None else ctx.new_dim()
    bins = bins if bins is not None else ctx.new_dim()
    ctx.set_output(0, elem, [batch, frames, bins, 2])
