"""Convolution (one group, kernel larger than 1x1) on phase planes.

The padded input is split into its stride phases (one when the stride is 1) and each phase is
flattened per channel, so the input under any kernel offset is one contiguous run of a phase plane
(onyx.kernels.conv.phase_planes). With enough input channels each offset is its own GEMM reading its
window of the planes in place and adding into the output (BLAS's beta: no column matrix at all);
otherwise the column matrix (offsets x channels, positions) is filled by ``prod(kernel)`` long
contiguous copies instead of a strided im2col gather and multiplied once. Positions are computed on
the phase plane's row width, so each output row carries a few extra columns that are dropped when the
output is finished. With ``channels_last`` (the column matrix's GEMM, no ``z``) the output is left
channels-last, the GEMM run the other way round (positions x output channels) and finished by a
channels-last crop (an RGB stem feeding a depthwise convolution: MobileNetV2's).
"""

from __future__ import annotations

import numpy as np

from onyx.kernels import blas
from onyx.kernels import conv as kernels
from onyx.kernels.conv_gemm import planes_conv
from onyx.ops._derived import derived
from onyx.ops.nn.conv._finish import Finish
from onyx.ops.nn.conv._geometry import Geometry

#: input channels from which each kernel offset is its own GEMM on the planes (fewer: the column
#: matrix, one GEMM with a deeper inner dimension)
DIRECT_MIN_CHANNELS = 32
#: ... and, for a strided convolution, positions per output block from which it does: narrower GEMMs
#: on the phase planes ran slower than one over the column matrix (ResNet-18's stride-2 3x3 layers,
#: bench/README.md "Kernels layer"); stride 1 keeps the per-offset GEMMs at any width
DIRECT_MIN_SPAN = 2048
#: at most this many computed positions per output position (the extra columns of each row): on small
#: maps the wider GEMM costs more than the strided im2col it saves
PLANES_WASTE = 1.2


def applies(x: np.ndarray, w: np.ndarray, group: int, geo: Geometry, patches: bool) -> bool:
    """One group, a kernel larger than one position that is not a patch embedding, few wasted columns."""
    if patches or group != 1 or geo.kernel_positions <= 1:
        return False
    spatial, kernel = tuple(x.shape[2:]), tuple(w.shape[2:])
    length = kernels.phase_geometry(spatial, kernel, geo.strides, geo.dilations, geo.pb, geo.pe, geo.out)[2]
    return length <= PLANES_WASTE * geo.positions


def run(x, w, b, z, geo: Geometry, finish: Finish, threads: int, channels_last: bool):
    """The convolution on phase planes: per-offset GEMMs on the planes when there are enough input
    channels (and, strided, wide enough blocks), else the column matrix (onyx.kernels.conv_gemm.
    planes_conv: the blocks, their threads and epilogues); ``threads``: the session's count."""
    m, c = w.shape[:2]
    kernel = tuple(w.shape[2:])
    length = kernels.phase_geometry(
        tuple(x.shape[2:]), kernel, geo.strides, geo.dilations, geo.pb, geo.pe, geo.out
    )[2]
    wide = length >= DIRECT_MIN_SPAN or all(st == 1 for st in geo.strides)
    direct = c >= DIRECT_MIN_CHANNELS and wide and blas.available(x.dtype)
    kp = geo.kernel_positions
    if direct:  # (M, C, *kernel) -> (kernel offsets, M, C)
        wt = derived(w, "conv_taps_first", lambda: np.moveaxis(w.reshape(m, c, kp), 2, 0).copy())
    else:  # (M, C, *kernel) -> (M, kernel offsets x channels), the column matrix's row order
        wt = derived(w, "conv_taps_last", lambda: np.moveaxis(w, 1, -1).reshape(m, kp * c))
    return planes_conv(
        x, wt, b, z, kernel=kernel, strides=geo.strides, dilations=geo.dilations, pads_begin=geo.pb,
        pads_end=geo.pe, out_shape=geo.out, direct=direct, channels_last=channels_last,
        activation=finish.activation, post=finish.numpy_post, threads=threads,
    )  # fmt: skip
