"""MelWeightMatrix: triangular mel filter banks over the bins of a one-sided DFT.

``num_mel_bins + 2`` points are spread evenly on the mel scale (mel(f) = 2595 log10(1 + f / 700)) from
``lower_edge_hertz``, with a step of (mel(upper) - mel(lower)) / (num_mel_bins + 2) as onnxruntime and
the node suite do; each is mapped to the DFT bin floor((dft_length + 1) * f / sample_rate). Filter i
rises linearly from its left point to 1 at its centre and falls back to 0 at its right point.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.signal._common import known_int, output_dtype, scalar_int


def _scalar_float(v, what):
    a = np.asarray(v)
    if a.size != 1:
        raise InvalidArgument(f"MelWeightMatrix: {what} must be a scalar, got shape {a.shape}")
    return float(a.reshape(-1)[0])


@op("MelWeightMatrix", since=17)
def mel_weight_matrix(
    num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *, output_datatype=1
):
    mels = scalar_int(num_mel_bins, "MelWeightMatrix: num_mel_bins")
    n_fft = scalar_int(dft_length, "MelWeightMatrix: dft_length")
    rate = scalar_int(sample_rate, "MelWeightMatrix: sample_rate")
    low = _scalar_float(lower_edge_hertz, "lower_edge_hertz")
    high = _scalar_float(upper_edge_hertz, "upper_edge_hertz")
    if mels < 1 or n_fft < 1 or rate < 1:
        raise InvalidArgument(
            f"MelWeightMatrix: num_mel_bins ({mels}), dft_length ({n_fft}) and sample_rate ({rate}) "
            "must be positive"
        )
    if not 0 <= low < high:
        raise InvalidArgument(
            f"MelWeightMatrix: need 0 <= lower_edge_hertz ({low}) < upper_edge_hertz ({high})"
        )
    dt = output_dtype(output_datatype, "MelWeightMatrix")
    bins = n_fft // 2 + 1
    low_mel = 2595.0 * np.log10(1.0 + low / 700.0)
    high_mel = 2595.0 * np.log10(1.0 + high / 700.0)
    step = (high_mel - low_mel) / (mels + 2)
    points_mel = np.arange(mels + 2, dtype=np.float64) * step + low_mel
    points_hz = 700.0 * np.expm1(points_mel * (np.log(10.0) / 2595.0))
    points = np.floor((n_fft + 1) * points_hz / rate).astype(np.int64)
    left, centre, right = points[:-2], points[1:-1], points[2:]
    j = np.arange(bins, dtype=np.int64)[:, None]
    rise_w = np.maximum(centre - left, 1).astype(np.float64)
    fall_w = np.maximum(right - centre, 1).astype(np.float64)
    rising = np.where((j >= left) & (j <= centre), (j - left) / rise_w, 0.0)
    falling = np.where((j >= centre) & (j < right), (right - j) / fall_w, 0.0)
    out = np.maximum(rising, falling)
    # A filter whose left and centre coincide is 1 at its centre.
    out[np.broadcast_to(j == centre, out.shape)] = 1.0
    return out.astype(dt)


@shape_rule("MelWeightMatrix")
def _mel_weight_matrix_shape(ctx) -> None:
    """[dft_length // 2 + 1, num_mel_bins] of output_datatype (default float)."""
    mels, n_fft = known_int(ctx, 0), known_int(ctx, 1)
    bins = n_fft // 2 + 1 if isinstance(n_fft, int) else ctx.new_dim()
    ctx.set_output(
        0, int(ctx.attr("output_datatype", 1)), [bins, mels if mels is not None else ctx.new_dim()]
    )
