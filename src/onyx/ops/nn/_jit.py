"""numba-compiled loops of the nn kernels: the optional ``perf`` extra (see onyx.ops._perf).

Each function has a numpy twin in the kernel that calls it (tests/perf compares the two).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: activation codes understood by :func:`depthwise2d` (others are applied afterwards in numpy)
ACTIVATIONS = {"": 0, "Relu": 1, "Clip": 2, "LeakyRelu": 3}


@njit(cache=True, nogil=True, fastmath={"contract"})
def depthwise2d(
    x, w, b, y, c0, c1, mult, pad_t, pad_l, sh, sw, tap_phase, tap_off, qh, qw, width, act, alpha, beta
):  # pragma: no cover - compiled
    """2-D depthwise convolution of input channels ``c0:c1`` of ``x`` (N, C, H, W) into ``y``
    (N, C*mult, OH, OW), with the bias ``b`` (empty for none) and an activation (code ``act``: 0 none,
    1 Relu, 2 Clip(alpha, beta), 3 LeakyRelu(alpha)) applied on the way out.

    The algorithm of onyx.ops.nn.conv._depthwise, one channel at a time: the padded channel is split
    into its sh*sw stride phases, each a flat plane of rows of ``qw``; every tap (``tap_phase``,
    ``tap_off``) is then one contiguous shifted run of its phase plane, multiplied and added over the
    whole plane into an accumulator that stays in L1/L2. Output columns past OW (plane padding) are
    dropped when the accumulator is written out.
    """
    n_img, _, h, wd = x.shape
    oh = y.shape[2]
    ow = y.shape[3]
    length = oh * qw
    taps = tap_off.shape[0]
    planes = np.zeros((sh * sw, width), dtype=x.dtype)
    acc = np.empty(length, dtype=x.dtype)
    zero = acc.dtype.type(0)
    lo = acc.dtype.type(alpha)  # in the array's type, so that the loops below stay in float32
    hi = acc.dtype.type(beta)
    for n in range(n_img):
        for c in range(c0, c1):
            for i in range(h):
                hp = i + pad_t
                row = (hp % sh) * sw
                base = (hp // sh) * qw
                for rw in range(sw):  # the columns of phase rw: j = j0, j0 + sw, ... land side by side
                    j0 = (rw - pad_l) % sw
                    start = base + (j0 + pad_l) // sw
                    cnt = (wd - j0 + sw - 1) // sw
                    dst = planes[row + rw, start : start + cnt]  # slices: unsigned indexing vectorises
                    src = x[n, c, i]
                    for t in range(cnt):
                        dst[t] = src[j0 + t * sw]
            for m in range(mult):
                co = c * mult + m
                for k in range(taps):
                    wv = w[co, k]
                    off = tap_off[k]
                    src = planes[tap_phase[k], off : off + length]
                    if k == 0:
                        for t in range(length):
                            acc[t] = wv * src[t]
                    else:
                        for t in range(length):
                            acc[t] += wv * src[t]
                if b.shape[0] > 0:
                    bv = b[co]
                    for t in range(length):
                        acc[t] += bv
                for i in range(oh):
                    arow = acc[i * qw : i * qw + ow]
                    yrow = y[n, co, i]
                    if act == 0:
                        for j in range(ow):
                            yrow[j] = arow[j]
                    elif act == 1:
                        for j in range(ow):
                            v = arow[j]
                            yrow[j] = zero if v < zero else v
                    elif act == 2:
                        for j in range(ow):
                            v = arow[j]
                            v = lo if v < lo else v
                            yrow[j] = hi if v > hi else v
                    else:
                        for j in range(ow):
                            v = arow[j]
                            yrow[j] = v * lo if v < zero else v
