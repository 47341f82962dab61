"""erf and GELU (erf and tanh forms, with an optional bias over the last axis), elementwise.

The compiled path (``_activation.c``) evaluates every element in registers in one pass over memory;
the numpy path below is the reference it is tested against, and what runs when the module was not
built (or ``ONYX_NO_PERF=1``). Both compute float32 and float64; other float types go through float32
and are cast back.

numpy has no erf, so both use onyx's own fits (least squares on Chebyshev nodes against 40-digit mpmath
values), evaluated on every element without masks or gathers:

* small |x| < 1:  erf(x) = x * S(x^2 - c), S a polynomial (fitted to erf(x) / x);
* large |x| >= 1: erf(|x|) = 1 - exp(-x^2) * G(|x|), G fitted to erfc(x) * exp(x^2); float64 fits
  x * erfc(x) * exp(x^2) as a polynomial in 1/x instead (|x| clamped to [1, 6], beyond which erf
  is 1 in double precision); float32 fits G in |x| - c on [1, 4] (erf is 1 in float32 beyond 3.92);
* numpy merges the two and restores the sign of x with bit masks (so -0.0, inf and NaN come out
  right; numpy's ``where`` is ten times slower on unpredictable masks).

numpy's ~50 passes run over cache-sized blocks of the input (``BLOCK_BYTES``). Maximum relative error:
about 1e-15 for float64, 1.5e-7 (two float32 ulps) for float32 (tests/kernels/test_activation.py
measures both paths against math.erf). The numpy path calls math.erf per element on tiny arrays
(up to ``SMALL`` elements).
"""

from __future__ import annotations

import math

import numpy as np

from onyx.kernels import _loader, _threads

__all__ = ["erf", "gelu", "gelu_tanh", "erf_numpy", "gelu_numpy", "gelu_tanh_numpy"]

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)

#: Elements from which the compiled loops split their work over threads (below, a thread handoff
#: costs about what the work does).
PARALLEL_MIN = 1 << 16


# ---- the compiled path -----------------------------------------------------------------------------


def erf(x: np.ndarray, *, threads: int = 0) -> np.ndarray:
    """erf of a float array, in the array's own type (a new array, also for 0-d input)."""
    return _compiled_map("erf", x, None, threads, erf_numpy)


def gelu(x: np.ndarray, bias: np.ndarray | None = None, *, threads: int = 0) -> np.ndarray:
    """0.5 * v * (1 + erf(v / sqrt(2))) with v = x (+ ``bias``, which must broadcast to x), a new array
    of x's type."""
    return _compiled_map("gelu", x, bias, threads, gelu_numpy)


def gelu_tanh(x: np.ndarray, bias: np.ndarray | None = None, *, threads: int = 0) -> np.ndarray:
    """0.5 * v * (1 + tanh(sqrt(2/pi) * (v + 0.044715 v^3))), v = x (+ ``bias``), a new array of x's
    type. The compiled path computes it as v / (1 + exp(-2 t)): the same function, without the
    cancellation where tanh is near -1."""
    return _compiled_map("gelu_tanh", x, bias, threads, gelu_tanh_numpy)


def _compiled_map(name: str, x: np.ndarray, bias: np.ndarray | None, threads: int, numpy_path):
    """Runs the compiled ``name`` on x (+ bias) where it applies, else ``numpy_path``."""
    mod = _loader.compiled("_activation")
    dt = x.dtype
    if mod is None or dt.kind in "biucOSUM":  # not a float type (bfloat16 and float8 are kind "V")
        return numpy_path(x, bias) if bias is not None else numpy_path(x)
    ct = dt if dt in (_F32, _F64) else _F32
    xc = np.asarray(x, dtype=ct, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    b = None
    if bias is not None:
        if xc.ndim and bias.ndim <= xc.ndim and bias.shape[-1:] == xc.shape[-1:] == (bias.size,):
            b = np.ascontiguousarray(bias, dtype=ct).reshape(-1)
        else:  # not one value per element of the last axis: add it here
            xc = np.add(xc, bias, dtype=ct)
    out = np.empty(xc.shape, dtype=ct)
    n = _threads.resolve(threads) if xc.size >= PARALLEL_MIN else 1
    if name == "erf":
        mod.erf(xc, out, n)
    else:
        getattr(mod, name)(xc, b, out, n)
    return out if ct == dt else out.astype(dt)


# ---- the numpy path --------------------------------------------------------------------------------

# (centre, coefficients of increasing degree)
_S64 = (
    0.5,
    (
        0.9654687386698673,
        -0.2810721780454342,
        0.07940998675593687,
        -0.018283884489152906,
        0.0034802744965701446,
        -0.0005611894221159944,
        7.829649688394879e-05,
        -9.614808686849139e-06,
        1.0536323833826933e-06,
        -1.0420369433085271e-07,
        9.432321288548624e-09,
        -7.798543850549947e-10,
    ),
)
_S32 = (
    0.5,
    (
        0.9654687386375511,
        -0.28107219456307414,
        0.07940999089111836,
        -0.01828335623113844,
        0.0034801918361182706,
        -0.0005654105859760388,
        7.882497110086663e-05,
    ),
)
_G32 = (
    2.5,
    (
        0.21080635752833896,
        -0.07434760092710317,
        0.024938203738504222,
        -0.007999345595343389,
        0.002465982357676093,
        -0.000738997567746934,
        0.00021297208021972148,
        -5.35858090596747e-05,
        1.435366257269743e-05,
        -6.3860857039413425e-06,
        1.6718017850688058e-06,
    ),
)
_H64 = (
    0.5833333333333334,
    (
        0.4966664851259376,
        -0.17107890702111914,
        -0.011156475268370405,
        0.08598137592104492,
        -0.08856239570570126,
        0.051029890627973515,
        -0.0004660743574782559,
        -0.04267019622273293,
        0.06551144646290044,
        -0.06301828781221525,
        0.037442293501776164,
        0.003166033340202935,
        -0.04763185019590349,
        0.08221594129284007,
        -0.08801156394436697,
        0.06628547485901293,
        -0.06743581322740265,
        0.0341820473861779,
        0.2341193739225236,
        -0.4243746624475736,
        0.02262149302498069,
        0.25078657571760904,
    ),
)

# coefficients of decreasing degree, as Horner's rule takes them
_S64C = (_S64[0], _S64[1][::-1])
_H64C = (_H64[0], _H64[1][::-1])
_S32C = (np.float32(_S32[0]), tuple(np.float32(c) for c in _S32[1][::-1]))
_G32C = (np.float32(_G32[0]), tuple(np.float32(c) for c in _G32[1][::-1]))

#: Bytes per block and work array: a block's five work arrays stay in the L2 cache. The ~50 passes
#: over memory are what erf costs; blocking them in cache makes big tensors 3-5x faster.
BLOCK_BYTES = 1 << 17
#: Below this many elements the fixed cost of ~50 ufunc calls exceeds calling math.erf per element.
SMALL = 128

_math_erf = np.frompyfunc(math.erf, 1, 1)


def _horner(coefs, s: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Polynomial with coefficients of decreasing degree at ``s``, written to ``out`` (not ``s``)."""
    r = np.multiply(s, coefs[0], out=out)
    r += coefs[1]
    for c in coefs[2:]:
        r *= s
        r += c
    return r


def _finish(x, small, y, big, s, itype, sign_bit):
    """``y`` where ``small`` else ``big``, then the sign of ``x``, by bit masks (numpy's ``where`` is
    branchy, ten times slower on unpredictable masks). ``s`` is a free buffer. Returns ``big``."""
    m = np.negative(small.view(np.int8), out=s.view(itype))  # 0 or all ones
    yi = y.view(itype)
    bi = big.view(itype)
    yi &= m
    np.invert(m, out=m)
    bi &= m
    bi |= yi
    np.bitwise_and(x.view(itype), sign_bit, out=yi)
    bi |= yi
    return big


def _erf64(x, out, t, s, y, small):
    """erf of the 1-D float64 ``x`` into ``out``; ``t``, ``s``, ``y``, ``small`` are work buffers."""
    a = np.abs(x, out=out)
    np.less(a, 1.0, out=small)
    np.minimum(a, 6.0, out=a)
    np.multiply(a, a, out=t)
    # small branch: y = a * S(t - c)
    np.subtract(t, _S64C[0], out=s)
    _horner(_S64C[1], s, y)
    y *= a
    # large branch: 1 - exp(-a^2) * H(1/a - c) / a, with a clamped to [1, 6]
    np.maximum(a, 1.0, out=a)
    np.multiply(a, a, out=t)
    np.negative(t, out=t)
    np.exp(t, out=t)
    t /= a
    np.reciprocal(a, out=s)
    s -= _H64C[0]
    big = _horner(_H64C[1], s, a)
    big *= t
    np.subtract(1.0, big, out=big)
    return _finish(x, small, y, big, s, np.int64, np.int64(-(2**63)))


def _erf32(x, out, t, s, y, small):
    """erf of the 1-D float32 ``x`` into ``out``; ``t``, ``s``, ``y``, ``small`` are work buffers."""
    a = np.abs(x, out=out)
    np.less(a, np.float32(1.0), out=small)
    np.minimum(a, np.float32(4.0), out=a)
    np.multiply(a, a, out=t)
    np.subtract(t, _S32C[0], out=s)
    _horner(_S32C[1], s, y)
    y *= a
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.subtract(a, _G32C[0], out=s)
    big = _horner(_G32C[1], s, a)
    big *= t
    np.subtract(np.float32(1.0), big, out=big)
    return _finish(x, small, y, big, s, np.int32, np.int32(-(2**31)))


def _blocked(x: np.ndarray, dt: np.dtype, gelu: bool = False) -> np.ndarray:
    """erf (or gelu) of ``x`` computed in ``dt`` (float32 or float64) block by block."""
    f = _erf64 if dt == _F64 else _erf32
    xf = np.ascontiguousarray(x, dtype=dt).reshape(-1)
    n = xf.size
    out = np.empty(n, dt)
    b = max(1, min(n, BLOCK_BYTES // dt.itemsize))
    t, s, y = np.empty(b, dt), np.empty(b, dt), np.empty(b, dt)
    small = np.empty(b, np.bool_)
    w = np.empty(b, dt) if gelu else None
    half = dt.type(0.5)
    for i in range(0, n, b):
        j = min(i + b, n)
        k = j - i
        if gelu:  # (1 + erf(x / sqrt(2))) * (x / 2), fused per block (halving first: no overflow)
            xb = xf[i:j]
            z = np.multiply(xb, dt.type(_SQRT_HALF), out=w[:k])
            r = f(z, out[i:j], t[:k], s[:k], y[:k], small[:k])
            r += 1
            r *= np.multiply(xb, half, out=w[:k])
        else:
            f(xf[i:j], out[i:j], t[:k], s[:k], y[:k], small[:k])
    return out.reshape(np.shape(x))


def _compute_type(dt: np.dtype) -> np.dtype:
    return dt if dt in (_F32, _F64) else _F32


def erf_numpy(x: np.ndarray) -> np.ndarray:
    """erf by numpy: the reference of :func:`erf` (same contract)."""
    dt = x.dtype
    if x.size <= SMALL:
        return np.asarray(_math_erf(x)).astype(dt)
    return _blocked(x, _compute_type(dt)).astype(dt, copy=False)


def gelu_numpy(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """GELU (erf form) by numpy: the reference of :func:`gelu` (same contract)."""
    dt = x.dtype
    if bias is not None:
        x = np.add(x, bias, dtype=_compute_type(dt))
    if x.size <= SMALL:
        xd = x.astype(np.float64)
        e = np.asarray(_math_erf(xd * _SQRT_HALF), dtype=np.float64)
        e += 1.0
        e *= 0.5 * xd
        return e.astype(dt)
    with np.errstate(invalid="ignore"):  # gelu(-inf) = -inf * 0: NaN, as the compiled path gives
        return _blocked(x, _compute_type(x.dtype), gelu=True).astype(dt, copy=False)


def gelu_tanh_numpy(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """GELU (tanh form) by numpy: the reference of :func:`gelu_tanh` (same contract)."""
    dt = x.dtype
    ct = _compute_type(dt)
    v = np.asarray(x, dtype=ct) if bias is None else np.add(x, bias, dtype=ct)
    with np.errstate(over="ignore", invalid="ignore"):  # huge |v|: v^3 overflows, tanh saturates
        t = np.multiply(v, v, out=...)  # (out=...: an array also for 0-d input)
        t *= 0.044715
        t += 1
        t *= v
        t *= ct.type(_SQRT_2_PI)
        np.tanh(t, out=t)
        t += 1
        t *= np.multiply(v, ct.type(0.5))  # halving first: no overflow near the largest float
    return t.astype(dt, copy=False)
