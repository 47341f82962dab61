"""Depthwise convolution (one input channel per group, any multiplier), NCHW: shifted multiply-adds on
phase planes (onyx.kernels.conv.depthwise_conv), the kernel applying the activation when there is no
``z`` to add before it."""

from __future__ import annotations

import numpy as np

from onyx.kernels import conv as kernels
from onyx.ops.nn.conv._finish import Finish
from onyx.ops.nn.conv._geometry import Geometry


def applies(x: np.ndarray, w: np.ndarray, group: int, geo: Geometry) -> bool:
    """One input channel per group and a kernel larger than one position."""
    return w.shape[1] == 1 and group == x.shape[1] and geo.kernel_positions > 1


def run(x, w, b, z, geo: Geometry, finish: Finish, threads: int) -> np.ndarray:
    act = finish.activation if z is None and finish.fused else kernels.NO_ACTIVATION
    y = kernels.depthwise_conv(
        x, w, b, strides=geo.strides, dilations=geo.dilations, pads_begin=geo.pb, pads_end=geo.pe,
        out_shape=geo.out, activation=act, threads=threads,
    )  # fmt: skip
    if z is not None:
        y += z
    if act is kernels.NO_ACTIVATION:
        y = finish.numpy_post(y)
    return y
