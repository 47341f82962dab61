"""numba-compiled loops of the math kernels: the optional ``perf`` extra (see onyx.ops._perf).

Each function has a numpy twin in the kernel that calls it (tests/perf compares the two). The loops
keep every value of an element in registers (one pass over memory) and use no libm call, so that
LLVM vectorises them: exp is our own (:func:`_exp32`), its 2^k built from the exponent bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from onyx.ops._jit_team import f32_array, share
from onyx.ops.math._erf import _G32C, _S32C

_F = np.float32
_SQRT_HALF = _F(0.7071067811865476)
_LOG2E = _F(1.4426950408889634)
# ln 2 split in two (Cody-Waite): k * _LN2_HI is exact for every |k| <= 2^15
_LN2_HI = _F(0.693359375)
_LN2_LO = _F(-2.1219444005469057e-4)
#: exp(r) on |r| <= ln(2)/2 by its Taylor polynomial of degree 7 (truncation error below 6e-9),
#: coefficients of decreasing degree
_EXP = tuple(_F(c) for c in (1 / 5040, 1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1, 1))
#: exp's range: below _EXP_LO it gives 0 (the true value is under 3e-38), above _EXP_HI inf
_EXP_LO = _F(-86.5)
_EXP_HI = _F(88.5)
_HALF = _F(0.5)
_ONE = _F(1.0)
_TWO = _F(2.0)


@intrinsic
def _f32_from_bits(typingctx, i):  # pragma: no cover - compiled
    """The float32 whose bit pattern is the int32 ``i``."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return types.float32(types.int32), codegen


@intrinsic
def _f32_bits(typingctx, x):  # pragma: no cover - compiled
    """The bit pattern of the float32 ``x`` as an int32."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int32))

    return types.int32(types.float32), codegen


_MAGNITUDE = np.int32(0x7FFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _poly(coefs, s):  # pragma: no cover - compiled
    """The polynomial with the (constant tuple of) coefficients of decreasing degree at ``s``."""
    acc = coefs[0]
    for i in range(1, len(coefs)):
        acc = acc * s + coefs[i]
    return acc


@njit(cache=True, nogil=True, inline="always")
def _exp32(u):  # pragma: no cover - compiled
    """exp of the float32 ``u``: 2^k exp(r), u = k ln 2 + r, |r| <= ln(2)/2; within 1.2 ulps of the
    exact value on [_EXP_LO, _EXP_HI] (numpy's own float32 exp: within 2), 0 below, inf above, NaN
    for NaN (tests/perf/test_attention_jit.py)."""
    c = u if u > _EXP_LO else _EXP_LO
    c = c if c < _EXP_HI else _EXP_HI
    k = np.floor(c * _LOG2E + _HALF)  # -125 .. 128
    r = c - k * _LN2_HI - k * _LN2_LO
    e = _poly(_EXP, r) * _f32_from_bits((np.int32(k) + 126) << 23) * _TWO
    e = _F(0.0) if u < _EXP_LO else e
    e = _F(np.inf) if u > _EXP_HI else e
    return u if u != u else e


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def gelu32(x, bias, out, r0, r1):  # pragma: no cover - compiled
    """out[r] = gelu(x[r] + bias) for rows r0:r1 of the float32 (R, C) ``x`` (``bias`` (C,) or empty),
    gelu(v) = 0.5 v (1 + erf(v / sqrt 2)).

    The algorithm of onyx.ops.math._erf._erf32, with its fits S and G: erf(a) = a S(a^2 - s_c) below
    1, 1 - exp(-a^2) G(a - g_c) from 1 (a clamped to 4), both computed for every element and one
    chosen.
    """
    s_c, s_coef = _S32C
    g_c, g_coef = _G32C
    cols = x.shape[1]
    has_bias = bias.shape[0] > 0
    four = _F(4.0)
    for r in range(r0, r1):
        xr = x[r]
        o = out[r]
        for j in range(cols):
            v = xr[j] + bias[j] if has_bias else xr[j]
            a = abs(v * _SQRT_HALF)
            a = a if a < four else four
            a2 = a * a
            small = _poly(s_coef, a2 - s_c) * a
            big = _ONE - _exp32(-a2) * _poly(g_coef, a - g_c)
            m = small if a < _ONE else big
            m = -m if v < 0 else m
            res = (_ONE + m) * v * _HALF  # in the numpy path's order
            o[j] = v if v != v else res


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def gelu_tanh32(x, bias, out, r0, r1):  # pragma: no cover - compiled
    """out[r] = 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), v = x[r] + bias (``bias`` (C,) or
    empty), rows r0:r1 of the float32 (R, C) ``x``; computed as v / (1 + exp(-2 t)), which is the same
    function and has no cancellation where tanh is near -1."""
    cols = x.shape[1]
    has_bias = bias.shape[0] > 0
    k2 = _F(-2.0 * 0.7978845608028654)
    c3 = _F(0.044715)
    for r in range(r0, r1):
        xr = x[r]
        o = out[r]
        for j in range(cols):
            v = xr[j] + bias[j] if has_bias else xr[j]
            u = k2 * (v + c3 * v * v * v)
            res = v / (_ONE + _exp32(u))
            o[j] = v if v != v else res


@njit(cache=True, nogil=True, inline="always")
def _row_max(sr):  # pragma: no cover - compiled
    """The largest value of the float32 ``sr`` by a maximum over integers that order as the floats
    do (LLVM vectorises integer, not float, max reductions): a positive NaN wins (and the row becomes
    NaN, as numpy's max makes it); a negative NaN shows later, through exp."""
    m = np.int32(-(2**31))
    for j in range(sr.shape[0]):
        i = _f32_bits(sr[j])
        k = i ^ ((i >> 31) & _MAGNITUDE)
        m = k if k > m else m
    return _f32_from_bits(m ^ ((m >> 31) & _MAGNITUDE))


@njit(cache=True, nogil=True, fastmath={"contract", "reassoc"}, error_model="numpy")
def softmax_rows(s, scale, bias, has_bias, r0, r1):  # pragma: no cover - compiled
    """In place, for rows r0:r1 of the flattened leading axes of the float32 4-D ``s`` (B, N, S, T):
    s[row] = softmax(s[row] * scale (+ bias[row] when ``has_bias``)), ``bias`` 4-D with the last axis
    T and each other axis 1 (broadcast) or s's (pass it C-contiguous: its rows are then read as
    vectors). Without a bias and with a positive scale, the scale goes into exp's argument (one pass
    less). As the numpy path: a row whose largest value is -inf gives zeros; a row holding NaN (or
    +inf) gives NaN."""
    nh, ns = s.shape[1], s.shape[2]
    t = s.shape[3]
    folded = not has_bias and scale > 0
    for row in range(r0, r1):
        i = row % ns
        h = (row // ns) % nh
        b = row // (ns * nh)
        sr = s[b, h, i]
        if has_bias:
            bb = b if bias.shape[0] > 1 else 0
            bh = h if bias.shape[1] > 1 else 0
            bi = i if bias.shape[2] > 1 else 0
            br = bias[bb, bh, bi]
            for j in range(t):
                sr[j] = sr[j] * scale + br[j]
        elif not folded:
            for j in range(t):
                sr[j] = sr[j] * scale
        m = _row_max(sr)
        if m == -np.inf:  # no finite value: zeros, or NaN if there is one
            fill = _F(0.0)
            for j in range(t):
                if sr[j] != sr[j]:
                    fill = _F(np.nan)
            sr[:] = fill
            continue
        if folded:  # exp(scale * s - scale * max): the max of s * scale for a positive scale
            total = _F(0.0)
            for j in range(t):
                e = _exp32((sr[j] - m) * scale)
                sr[j] = e
                total += e
            inv = _ONE / total
            for j in range(t):
                sr[j] *= inv
            continue
        total = _F(0.0)
        for j in range(t):
            e = _exp32(sr[j] - m)
            sr[j] = e
            total += e
        inv = _ONE / total  # NaN when the row held NaN or +inf: all NaN, as numpy gives
        for j in range(t):
            sr[j] *= inv


def _gelu32_task(gtid, tid, p):  # pragma: no cover - compiled
    """gelu32 as a team task: parameters [threads, rows, cols, x, bias, bias length, out]."""
    rows, cols = p[1], p[2]
    r0, r1 = share(rows, tid[0], p[0])
    gelu32(f32_array(p[3], (rows, cols)), f32_array(p[4], (p[5],)), f32_array(p[6], (rows, cols)), r0, r1)


def _gelu_tanh32_task(gtid, tid, p):  # pragma: no cover - compiled
    """gelu_tanh32 as a team task: parameters as gelu32's."""
    rows, cols = p[1], p[2]
    r0, r1 = share(rows, tid[0], p[0])
    gelu_tanh32(
        f32_array(p[3], (rows, cols)), f32_array(p[4], (p[5],)), f32_array(p[6], (rows, cols)), r0, r1
    )


def _softmax_rows_task(gtid, tid, p):  # pragma: no cover - compiled
    """softmax_rows as a team task: parameters [threads, B, N, S, T, scores, bias, bias B, N, S, T,
    has_bias, the scale's float32 bits]."""
    shape = (p[1], p[2], p[3], p[4])
    r0, r1 = share(p[1] * p[2] * p[3], tid[0], p[0])
    bias = f32_array(p[6], (p[7], p[8], p[9], p[10]))
    softmax_rows(f32_array(p[5], shape), _f32_from_bits(np.int32(p[12])), bias, p[11] != 0, r0, r1)
