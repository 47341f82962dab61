"""Channels-last convolutions: a depthwise convolution (multiplier 1) on a channels-last input, and a
1x1 convolution (stride 1, no padding) on either layout, their output an NCHW view of an NHWC array.

A MobileNet block (1x1 expand, 3x3 depthwise, 1x1 project) then runs without a layout change: the
depthwise loop reads whole rows of channels (onyx.kernels.conv.depthwise_conv2d_nhwc) and the 1x1
convolutions are one GEMM each (positions x channels) finished by a channels-last epilogue. The
optimizer's layout pass (onyx.optimizer.channels_last_layout) marks the convolutions whose output
stays channels-last; an input that already is channels-last runs so wherever a kernel exists.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.kernels import blas
from onyx.kernels import conv as kernels
from onyx.ops._derived import derived
from onyx.ops.nn.conv._finish import Finish
from onyx.ops.nn.conv._geometry import Geometry


def is_channels_last(x: np.ndarray) -> bool:
    """Whether the 4-D ``x`` is an NCHW view of a C-contiguous NHWC buffer (and not plainly NCHW)."""
    return x.ndim == 4 and not x.flags.c_contiguous and x.transpose(0, 2, 3, 1).flags.c_contiguous


def run(x, w, b, z, group: int, geo: Geometry, finish: Finish, threads: int, memo=None):
    """The convolution channels-last, or None where no channels-last kernel applies (dilations, other
    kernels, no compiled loops). With a ``memo``, the run is recorded there as a replay."""
    n, c = x.shape[:2]
    m = w.shape[0]
    kernel = w.shape[2:]
    if any(d != 1 for d in geo.dilations) or not kernels.has_compiled(x.dtype):
        return None
    act = finish.activation if z is None and finish.fused else kernels.NO_ACTIVATION
    numpy_finish = z is not None or not finish.fused  # Z first, then the activation, by numpy
    bias = np.zeros(m, dtype=x.dtype) if b is None else np.ascontiguousarray(b, dtype=x.dtype)
    xcl = x.transpose(0, 2, 3, 1)
    depthwise = group == c and w.shape[1] == 1 and m == c and math.prod(kernel) > 1
    if depthwise and xcl.flags.c_contiguous:
        wk = derived(w, "depthwise_cl", lambda: np.ascontiguousarray(np.moveaxis(w[:, 0], 0, -1)))
        strides, pads = geo.strides, (geo.pb[0], geo.pb[1], geo.pe[0], geo.pe[1])

        def replay(x, z):
            xcl = x.transpose(0, 2, 3, 1)
            ycl = kernels.depthwise_conv2d_nhwc(
                xcl, wk, bias, strides=strides, pads=pads, activation=act, threads=threads
            )
            return _finish(ycl, z, finish if numpy_finish else None)

    elif (
        math.prod(kernel) == 1
        and group == 1
        and all(s == 1 for s in geo.strides)
        and not any(geo.pb + geo.pe)
    ):
        hw = geo.positions
        wt = derived(w, "1x1_channels_last", lambda: np.ascontiguousarray(w.reshape(m, c).T))
        shape = (n, geo.out[0], geo.out[1], m)

        def replay(x, z):
            xcl = x.transpose(0, 2, 3, 1)
            a = xcl.reshape(n, hw, c) if xcl.flags.c_contiguous else x.reshape(n, c, hw).transpose(0, 2, 1)
            ycl = blas.matmul(a, wt).reshape(shape)
            kernels.channels_last_epilogue(ycl.reshape(-1, m), bias, None, act, threads=threads)
            return _finish(ycl, z, finish if numpy_finish else None)

    else:
        return None
    if memo is not None and not w.flags.writeable and (b is None or not b.flags.writeable):
        memo.record(x, w, b, z, replay)  # frozen weights only: the replay keeps what it derived from them
    return replay(x, z)


def _finish(ycl, z, finish: Finish | None):
    """A channels-last output as its NCHW view, ``z`` added and then the activation (when numpy
    finishes)."""
    y = ycl.transpose(0, 3, 1, 2)
    if z is not None:
        y += z
    return y if finish is None else finish.numpy_post(y)


class ReplayMemo:
    """A convolution node's recorded channels-last runs, one per input signature (shape, strides and
    type of X; Z given or not) and the same W and B objects: a hit repeats the kernel calls only
    (most of a small layer's Python time is checks, lookups and argument handling)."""

    MAX_SIGNATURES = 16

    def __init__(self) -> None:
        self._runs: dict = {}

    @staticmethod
    def _key(x, z) -> tuple:
        return (x.shape, x.strides, x.dtype, z is None)

    def record(self, x, w, b, z, replay) -> None:
        if len(self._runs) >= self.MAX_SIGNATURES:
            self._runs.clear()
        self._runs[self._key(x, z)] = (w, b, replay)

    def replay(self, x, w, b, z):
        """The recorded run's output, or None when this signature (or W, B) was not recorded."""
        hit = self._runs.get(self._key(x, z))
        if hit is None or hit[0] is not w or hit[1] is not b:
            return None
        return hit[2](x, z)
