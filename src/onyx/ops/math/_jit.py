"""numba-compiled loops of the math kernels: the optional ``perf`` extra (see onyx.ops._perf).

Each function has a numpy twin in the kernel that calls it (tests/perf compares the two).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_F = np.float32
_SQRT_HALF = _F(0.7071067811865476)
_LOG2E = _F(1.4426950408889634)
# ln 2 split in two (Cody-Waite): k * _LN2_HI is exact for the |k| <= 24 met here
_LN2_HI = _F(0.693359375)
_LN2_LO = _F(-2.1219444005469057e-4)
#: exp(r) on |r| <= ln(2)/2 by its Taylor polynomial of degree 7 (truncation error below 6e-9),
#: coefficients of decreasing degree
_EXP = np.array([1 / 5040, 1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1, 1], dtype=_F)
#: elements per block: every work array of a block stays in L1
_BLOCK = 1024


@njit(cache=True, nogil=True, inline="always")
def _horner(coefs, s, out, n):  # pragma: no cover - compiled
    """out[:n] = polynomial (coefficients of decreasing degree) at s[:n], one pass per coefficient."""
    c0 = coefs[0]
    for j in range(n):
        out[j] = c0
    for i in range(1, coefs.shape[0]):
        c = coefs[i]
        for j in range(n):
            out[j] = out[j] * s[j] + c


@njit(cache=True, nogil=True)
def gelu32(x, bias, out, r0, r1, s_c, s_coef, g_c, g_coef):  # pragma: no cover - compiled
    """out[r] = gelu(x[r] + bias) for rows r0:r1 of the float32 (R, C) ``x`` (``bias`` (C,) or empty),
    gelu(v) = 0.5 v (1 + erf(v / sqrt 2)).

    The algorithm of onyx.ops.math._erf._erf32 (same fits ``s_coef``/``g_coef`` with centres
    ``s_c``/``g_c``): erf(a) = a S(a^2 - s_c) below 1, 1 - exp(-a^2) G(a - g_c) from 1 (a clamped to 4),
    with exp(-a^2) = 2^k exp(r) built from k's exponent bits. Each step is one pass over a block of
    ``_BLOCK`` elements held in L1, so that every loop vectorises.
    """
    cols = x.shape[1]
    has_bias = bias.shape[0] > 0
    v = np.empty(_BLOCK, dtype=_F)
    a = np.empty(_BLOCK, dtype=_F)
    t = np.empty(_BLOCK, dtype=_F)
    e = np.empty(_BLOCK, dtype=_F)
    y = np.empty(_BLOCK, dtype=_F)
    g = np.empty(_BLOCK, dtype=_F)
    bits = np.empty(_BLOCK, dtype=np.int32)
    scale = bits.view(np.float32)
    one = _F(1.0)
    half = _F(0.5)
    four = _F(4.0)
    for r in range(r0, r1):
        for c0 in range(0, cols, _BLOCK):
            n = min(_BLOCK, cols - c0)
            xr = x[r, c0 : c0 + n]
            if has_bias:
                br = bias[c0 : c0 + n]
                for j in range(n):
                    v[j] = xr[j] + br[j]
            else:
                for j in range(n):
                    v[j] = xr[j]
            for j in range(n):
                aj = abs(v[j] * _SQRT_HALF)
                aj = aj if aj < four else four
                a[j] = aj
                u = -(aj * aj)
                k = np.floor(u * _LOG2E + half)
                t[j] = u - k * _LN2_HI - k * _LN2_LO
                bits[j] = (np.int32(k) + 127) << 23
            _horner(_EXP, t, e, n)
            for j in range(n):
                e[j] *= scale[j]  # exp(-a^2)
                t[j] = a[j] * a[j] - s_c
            _horner(s_coef, t, y, n)
            for j in range(n):
                t[j] = a[j] - g_c
            _horner(g_coef, t, g, n)
            o = out[r, c0 : c0 + n]
            for j in range(n):
                aj = a[j]
                m = y[j] * aj if aj < one else one - e[j] * g[j]
                vj = v[j]
                m = -m if vj < 0 else m
                res = (one + m) * vj * half  # in the numpy path's order
                o[j] = vj if vj != vj else res
