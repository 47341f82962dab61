"""The ``perf`` extra's compiled time loop of LSTM (default activations, no peepholes or sequence
lengths, float32, small batches): each step's recurrent product (R read once for all batch rows) and
gates in one call, instead of ten numpy calls a step. numpy's twin: lstm._recurrence_default."""

from __future__ import annotations

import numpy as np
from numba import njit

from onyx.ops.math._jit import _exp32

_F = np.float32
_ONE = _F(1.0)
_TWO = _F(2.0)


@njit(cache=True, nogil=True, inline="always")
def _sigmoid32(x):  # pragma: no cover - compiled
    return _ONE / (_ONE + _exp32(-x))


@njit(cache=True, nogil=True, inline="always")
def _tanh32(x):  # pragma: no cover - compiled
    """tanh as 1 - 2 / (exp(2x) + 1): +-1 at the ends, absolute error ~1e-7 near 0."""
    return _ONE - _TWO / (_exp32(_TWO * x) + _ONE)


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def lstm_default32(xw, r_t, h, c, y, clip, input_forget):  # pragma: no cover - compiled
    """The LSTM time loop: for each step t and batch row b, gates = xw[t, b] + h[b] @ r_t in i, o, f,
    c order (clipped to +-``clip`` when it is positive), i, o, f = sigmoid, g = tanh, c = f c + i g (f
    = 1 - i with ``input_forget``), h = o tanh(c), y[t] = h. ``xw`` (T, B, 4H) holds the input
    projections with both biases, ``r_t`` (H, 4H) is R transposed; ``h`` and ``c`` (B, H) hold the
    initial state and are left holding the final one."""
    steps, rows, width = xw.shape
    hidden = width // 4
    gates = np.empty((rows, width), dtype=_F)
    for t in range(steps):
        for b in range(rows):
            src = xw[t, b]
            gb = gates[b]
            for j in range(width):
                gb[j] = src[j]
        for k in range(hidden):  # R's row k read once a step for every batch row
            rk = r_t[k]
            for b in range(rows):
                hk = h[b, k]
                gb = gates[b]
                for j in range(width):
                    gb[j] += hk * rk[j]
        for b in range(rows):
            gb = gates[b]
            hb = h[b]
            cb = c[b]
            if clip > 0:
                lo = -clip
                for j in range(width):
                    v = gb[j]
                    v = lo if v < lo else v
                    gb[j] = clip if v > clip else v
            for j in range(hidden):
                i = _sigmoid32(gb[j])
                o = _sigmoid32(gb[hidden + j])
                f = _ONE - i if input_forget else _sigmoid32(gb[2 * hidden + j])
                g = _tanh32(gb[3 * hidden + j])
                cv = f * cb[j] + i * g
                cb[j] = cv
                hb[j] = o * _tanh32(cv)
            out = y[t, b]
            for j in range(hidden):
                out[j] = hb[j]
