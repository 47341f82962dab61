"""A vectorised erf for numpy, which has none.

Our own fits (least squares on Chebyshev nodes against 40-digit mpmath values), evaluated on every
element without masks or gathers (those cost more than the arithmetic):

* small |x| < 1:  erf(x) = x * S(x^2 - c), S a polynomial (fitted to erf(x) / x);
* large |x| >= 1: erf(|x|) = 1 - exp(-x^2) * G(|x|), G fitted to erfc(x) * exp(x^2); float64 fits
  x * erfc(x) * exp(x^2) as a polynomial in 1/x instead (|x| clamped to [1, 6], beyond which erf
  is 1 in double precision); float32 fits G in |x| - c on [1, 4] (erf is 1 in float32 beyond 3.92);
* the two are merged, and the sign of x restored, with bit masks (so -0.0, inf and NaN come out
  right; numpy's ``where`` is ten times slower on unpredictable masks).

The ~50 passes run over cache-sized blocks of the input (``BLOCK_BYTES``). Maximum relative error:
about 1e-15 for float64, 1.5e-7 (two float32 ulps) for float32. Other float types go through
float32. Tiny arrays (up to ``SMALL`` elements) call math.erf per element.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.ops import _native
from onyx.runtime import team
from onyx.runtime.threads import loop_threads, parallel_for, split_ranges

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

_S64C = (_S64[0], _S64[1][::-1])
_H64C = (_H64[0], _H64[1][::-1])
_S32C = (np.float32(_S32[0]), tuple(np.float32(c) for c in _S32[1][::-1]))
_G32C = (np.float32(_G32[0]), tuple(np.float32(c) for c in _G32[1][::-1]))


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


#: Bytes per block and work array: a block's five work arrays stay in the L2 cache. The ~50 passes
#: over memory are what erf costs; blocking them in cache makes big tensors 3-5x faster.
BLOCK_BYTES = 1 << 17


def _blocked(f, x, dt, gelu=False):
    xf = np.ascontiguousarray(x, dtype=dt).reshape(-1)
    n = xf.size
    out = np.empty(n, dt)
    b = min(n, BLOCK_BYTES // dt.itemsize)
    half = dt.type(0.5)
    nblocks = -(-n // b) if n else 0
    threads = loop_threads() if nblocks >= PARALLEL_BLOCKS else 1
    parts = split_ranges(nblocks, 4 * threads) if threads > 1 else [(0, nblocks)]

    def run(part: int) -> None:
        t, s, y = np.empty(b, dt), np.empty(b, dt), np.empty(b, dt)
        small = np.empty(b, np.bool_)
        w = np.empty(b, dt) if gelu else None
        lo, hi = parts[part]
        for i in range(lo * b, min(hi * b, n), b):
            j = min(i + b, n)
            k = j - i
            if gelu:  # 0.5 * x * (1 + erf(x / sqrt(2))), fused per block
                xb = xf[i:j]
                z = np.multiply(xb, dt.type(_SQRT_HALF), out=w[:k])
                r = f(z, out[i:j], t[:k], s[:k], y[:k], small[:k])
                r += 1
                r *= xb
                r *= half
            else:
                f(xf[i:j], out[i:j], t[:k], s[:k], y[:k], small[:k])

    parallel_for(run, len(parts), threads)
    return out.reshape(x.shape)


#: Blocks from which erf goes to several threads (each piece of work costs far more than a handoff).
PARALLEL_BLOCKS = 4


_SQRT_HALF = math.sqrt(0.5)


def gelu(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """0.5 * v * (1 + erf(v / sqrt(2))) with v = x (+ ``bias``, broadcast over the last axis) of a
    float32 or float64 array (others go through float32); float32 runs in the compiled loop of the
    ``perf`` extra when it is installed."""
    if bias is not None:
        if (
            x.dtype == _F32
            and bias.dtype == _F32
            and x.ndim
            and bias.size == x.shape[-1]
            and x.size >= JIT_MIN
        ):
            if _native.available():
                return _gelu_native(x, bias.reshape(-1))
        x = np.add(x, bias)
    dt = x.dtype
    if x.size <= SMALL:
        xd = x.astype(np.float64)
        e = np.asarray(_math_erf(xd * _SQRT_HALF), dtype=np.float64)
        e += 1.0
        e *= xd
        e *= 0.5
        return e.astype(dt)
    if dt == _F32 and x.size >= JIT_MIN and _native.available():
        return _gelu_native(x, None)
    if dt == np.float64 or dt == np.float32:
        return _blocked(_erf64 if dt == np.float64 else _erf32, x, dt, gelu=True)
    return _blocked(_erf32, x, _F32, gelu=True).astype(dt)


#: elements from which gelu uses the compiled loop: below, the numpy path costs about as much, and a
#: model with only small GELUs (an MLP at batch 1: 2048) need not load numba (~0.4 s, ~130 MB) at all;
#: at 16k (that MLP at batch 8) the numpy path's ~50 passes took 0.4 ms, the compiled loop ~0.05
JIT_MIN = 1 << 13
#: row length of a bias-free input handed to the compiled loop (its rows are split over threads)
_JIT_ROW = 4096


def map_rows_jit(task: str, x: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """A new float32 array that the compiled row map ``task`` (a team task of onyx.ops.math._jit, run
    from its cached machine code: onyx.ops._native) gives for ``x`` (+ ``bias`` over the last axis).
    From ``_JIT_PARALLEL`` elements its rows go to MKL's threads (onyx.runtime.team), or to onyx's
    own while BLAS runs none."""
    xc = np.ascontiguousarray(x, dtype=_F32)
    out = np.empty(xc.shape, dtype=_F32)
    if bias is not None:
        pieces = [(xc.reshape(-1, xc.shape[-1]), out.reshape(-1, xc.shape[-1]))]
        b = np.ascontiguousarray(bias, dtype=_F32).reshape(-1)
    else:
        flat, oflat = xc.reshape(-1), out.reshape(-1)
        full = flat.size // _JIT_ROW * _JIT_ROW
        pieces = [(flat[:full].reshape(-1, _JIT_ROW), oflat[:full].reshape(-1, _JIT_ROW))]
        if full < flat.size:
            pieces.append((flat[full:].reshape(1, -1), oflat[full:].reshape(1, -1)))
        b = np.zeros(0, dtype=_F32)
    address = _native.task("onyx.ops.math._jit", task)
    for xs, os_ in pieces:
        rows, cols = xs.shape
        params = np.array([0, rows, cols, xs.ctypes.data, b.ctypes.data, b.size, os_.ctypes.data], np.int64)
        team.run_rows(address, params, rows, x.size >= _JIT_PARALLEL)
    return out


def _gelu_native(x: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """gelu of the float32 ``x`` (+ ``bias`` over the last axis) by the compiled jit.gelu32."""
    return map_rows_jit("_gelu32_task", x, bias)


#: elements from which the compiled gelu splits its rows over threads
_JIT_PARALLEL = 1 << 16


_F32 = np.dtype(np.float32)
_math_erf = np.frompyfunc(math.erf, 1, 1)
#: Below this many elements the fixed cost of ~50 ufunc calls exceeds calling math.erf per element.
SMALL = 128


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a float array, in the array's own dtype (a new array, also for 0-d input)."""
    dt = x.dtype
    if x.size <= SMALL:
        return np.asarray(_math_erf(x)).astype(dt)
    if dt == np.float64:
        return _blocked(_erf64, x, dt)
    if dt == np.float32:
        return _blocked(_erf32, x, dt)
    return _blocked(_erf32, x, _F32).astype(dt)
