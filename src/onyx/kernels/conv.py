"""Convolution kernels: depthwise convolution (NCHW and channels-last) and the epilogues that finish a
GEMM's output (bias, residual and activation in one pass), each with its numpy path.

These loops are memory-bound, where numpy's one-pass-per-operation costs most: the compiled path
(``onyx.kernels._conv``, float32 and float64) does the whole of each in one pass per output row. The
numpy path is complete (any float dtype, any rank where it makes sense) and is the reference the
compiled path is tested against (tests/kernels/test_conv.py).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels._loader import compiled
from onyx.kernels._threads import resolve
from onyx.kernels.parallel import parallel_for

_COMPILED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: output elements from which a compiled loop runs on several threads (below, waking them costs more)
PARALLEL_MIN_ELEMENTS = 1 << 14
#: depthwise NCHW: multiply-adds from which the channels go to several threads
PARALLEL_MIN_MACS = 1 << 20
#: numpy depthwise: bytes of one work array of a block of channels (the block stays in cache across taps)
_DW_BLOCK_BYTES = 256 << 10
#: numpy depthwise: channels-last planes from this many channels ...
_DW_CL_CHANNELS = 128
#: ... and at most this many (padded-row) output positions: small maps, many channels (bench/README.md)
_DW_CL_LENGTH = 1024


class ActivationKind(enum.IntEnum):
    """The activations the convolution loops apply on the way out (the C loops' codes)."""

    NONE = 0
    RELU = 1
    CLIP = 2
    LEAKY_RELU = 3


@dataclass(frozen=True)
class Activation:
    """An activation fused into a convolution kernel: ``alpha`` is Clip's min or LeakyRelu's slope,
    ``beta`` Clip's max."""

    kind: ActivationKind = ActivationKind.NONE
    alpha: float = 0.0
    beta: float = 0.0

    @classmethod
    def from_onnx(cls, name: str, params=()) -> Activation | None:
        """The activation of an ONNX op name (FusedConv's ``activation``, "" for none) and its
        parameters; None for one the kernels do not apply (the caller applies it)."""
        params = list(params or ())
        if not name:
            return NO_ACTIVATION
        if name == "Relu":
            return cls(ActivationKind.RELU)
        if name == "Clip":
            lo = float(params[0]) if len(params) > 0 else -math.inf
            hi = float(params[1]) if len(params) > 1 else math.inf
            return cls(ActivationKind.CLIP, lo, hi)
        if name == "LeakyRelu":
            return cls(ActivationKind.LEAKY_RELU, float(params[0]) if params else 0.01)
        return None

    @property
    def args(self) -> tuple[int, float, float]:
        """(kind, alpha, beta) as the compiled loops take them."""
        return int(self.kind), float(self.alpha), float(self.beta)

    def apply_(self, y: np.ndarray) -> None:
        """The activation in place over ``y`` (numpy); NaN stays NaN."""
        if self.kind == ActivationKind.RELU:
            np.maximum(y, 0, out=y)
        elif self.kind == ActivationKind.CLIP:
            lo, hi = y.dtype.type(self.alpha), y.dtype.type(self.beta)
            np.minimum(np.maximum(y, lo, out=y), hi, out=y)
        elif self.kind == ActivationKind.LEAKY_RELU:
            np.copyto(y, y * y.dtype.type(self.alpha), where=y < 0)


NO_ACTIVATION = Activation()


def _threads(threads: int, work: int, minimum: int = PARALLEL_MIN_ELEMENTS) -> int:
    return resolve(threads) if work >= minimum else 1


def _compiled_for(*arrays: np.ndarray | None):
    """The compiled module when every array is float32 (or every one float64), else None."""
    dt = arrays[0].dtype
    if dt not in _COMPILED_DTYPES or any(a is not None and a.dtype != dt for a in arrays):
        return None
    return compiled("_conv")


# ---------------------------------------------------------------------------------------------------
# phase planes


@lru_cache(maxsize=512)
def phase_geometry(
    spatial: tuple, kernel: tuple, strides: tuple, dilations: tuple, pb: tuple, pe: tuple, out: tuple
):
    """The phase-plane layout of a convolution: the padded input split into its stride phases, each
    flattened, so that the input under any kernel offset is one contiguous run of a phase plane.
    Returns (phase extents q, positions per plane, output run length, (phase, offset) per tap, plane
    width, phases used)."""
    nd = len(kernel)
    q = tuple(-(-(spatial[i] + pb[i] + pe[i]) // strides[i]) for i in range(nd))
    qstrides = [math.prod(q[i + 1 :]) for i in range(nd)]
    total = math.prod(q)
    length = out[0] * qstrides[0]
    taps = []
    for k in np.ndindex(*kernel):
        phase = tuple((k[i] * dilations[i]) % strides[i] for i in range(nd))
        off = sum((k[i] * dilations[i]) // strides[i] * qstrides[i] for i in range(nd))
        taps.append((phase, off))
    width = max(total, length + max(off for _, off in taps))
    phases = sorted({ph for ph, _ in taps})
    return q, total, length, tuple(taps), width, phases


def phase_planes(x: np.ndarray, pb, strides, q, total: int, width: int, phases) -> dict:
    """``x`` (N, C, *spatial) zero-padded, split into its stride phases and flattened: {phase: (N, C,
    width)}, each phase's extents ``q`` in its first ``total`` positions and zeros after them. Each
    plane is filled by one strided copy straight from ``x`` (no padded intermediate)."""
    n, c = x.shape[:2]
    nd = len(q)
    planes = {}
    for phase in phases:
        plane = np.zeros((n, c, width), dtype=x.dtype)
        dst, src = [slice(None)] * 2, [slice(None)] * 2
        for i in range(nd):
            st, before, size = strides[i], pb[i], x.shape[2 + i]
            lo = max(0, -(-(before - phase[i]) // st))  # first phase position on an input element
            hi = min(q[i], -(-(size + before - phase[i]) // st))
            first = lo * st + phase[i] - before
            dst.append(slice(lo, max(lo, hi)))
            src.append(slice(first, first + max(0, hi - lo - 1) * st + 1, st) if hi > lo else slice(0, 0))
        plane[:, :, :total].reshape((n, c) + tuple(q))[tuple(dst)] = x[tuple(src)]
        planes[phase] = plane
    return planes


# ---------------------------------------------------------------------------------------------------
# depthwise NCHW


def depthwise_conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads_begin: tuple[int, ...],
    pads_end: tuple[int, ...],
    out_shape: tuple[int, ...],
    activation: Activation = NO_ACTIVATION,
    threads: int = 0,
) -> np.ndarray:
    """Depthwise convolution of ``x`` (N, C, *spatial) with ``w`` (C * mult, 1, *kernel) (one input
    channel per group, any multiplier), bias ``b`` (C * mult,) or None, then ``activation``; returns
    (N, C * mult, *out_shape). 2-D float32/float64 runs compiled, the rest in numpy."""
    n, c = x.shape[:2]
    m = w.shape[0]
    if m % max(c, 1) or w.shape[1] != 1:
        raise InvalidArgument(f"depthwise_conv: W of shape {w.shape} for X of shape {x.shape}")
    mod = _compiled_for(x, w, b) if x.ndim == 4 else None
    if mod is None or n * m * math.prod(out_shape) == 0:
        y = _depthwise_numpy(x, w, b, pads_begin, pads_end, strides, dilations, out_shape, threads)
        activation.apply_(y)
        return y
    y = np.empty((n, m) + tuple(out_shape), dtype=x.dtype)
    kh, kw = w.shape[2:]
    bias = _EMPTY[x.dtype] if b is None else np.ascontiguousarray(b)
    _, _, length, _, _, _ = phase_geometry(
        tuple(x.shape[2:]),
        (kh, kw),
        tuple(strides),
        tuple(dilations),
        tuple(pads_begin),
        tuple(pads_end),
        tuple(out_shape),
    )
    t = _threads(threads, n * c * length * kh * kw, PARALLEL_MIN_MACS)
    mod.depthwise_nchw(
        np.ascontiguousarray(x), np.ascontiguousarray(w.reshape(m, kh * kw)), bias, y, kh, kw, *strides,
        *dilations, pads_begin[0], pads_begin[1], pads_end[0], pads_end[1], *activation.args, t,
    )  # fmt: skip
    return y


_EMPTY = {dt: np.empty(0, dtype=dt) for dt in _COMPILED_DTYPES}


def _depthwise_numpy(x, w, b, pb, pe, strides, dilations, out, threads=0):
    """Depthwise convolution on flattened (polyphase) planes, in numpy.

    The padded image is split into its stride phases (one phase when the stride is 1) and each phase
    is flattened per channel, so every kernel offset is one contiguous shift of a whole phase plane:
    each multiply-add runs over one long contiguous run per channel instead of one short (strided)
    run per output row. Positions that wrap across a row end land in columns that are cut off.
    Channels go in blocks small enough for the work arrays to stay in cache across the taps.
    """
    from onyx.kernels.parallel import loop_threads

    threads = loop_threads() if threads <= 0 else threads
    n, c = x.shape[:2]
    kernel = tuple(w.shape[2:])
    q, total, length, taps, width, phases = phase_geometry(
        tuple(x.shape[2:]), kernel, tuple(strides), tuple(dilations), tuple(pb), tuple(pe), tuple(out)
    )
    mult = w.shape[0] // c
    wk = w.reshape(c, mult, -1, 1)
    bk = None if b is None else b.reshape(c, mult, 1)
    if c >= _DW_CL_CHANNELS and length <= _DW_CL_LENGTH:
        return _depthwise_numpy_channels_last(
            x, wk, bk, pb, strides, q, total, width, length, taps, phases, out, threads
        )
    y = np.empty((n, c * mult) + tuple(out), dtype=x.dtype)
    crop = (slice(None),) * 3 + tuple(slice(0, o) for o in out[1:])
    per_channel = n * mult * max(width, length) * x.dtype.itemsize
    step = max(1, min(c, _DW_BLOCK_BYTES // max(per_channel, 1)))
    if threads > 1 and n * c * length * len(taps) >= PARALLEL_MIN_MACS:
        step = min(step, max(1, -(-c // (2 * threads))))
    parts = [(c0, min(c, c0 + step)) for c0 in range(0, c, step)]

    def task(i: int) -> None:
        c0, c1 = parts[i]
        cc = c1 - c0
        planes = phase_planes(x[:, c0:c1], pb, strides, q, total, width, phases)
        wc = wk[c0:c1]
        acc = np.empty((n, cc, mult, length), dtype=x.dtype)
        tmp = np.empty_like(acc)
        for j, (phase, off) in enumerate(taps):
            view = planes[phase][:, :, None, off : off + length]
            if j == 0:
                np.multiply(view, wc[:, :, j], out=acc)
            else:
                np.multiply(view, wc[:, :, j], out=tmp)
                acc += tmp
        if bk is not None:
            acc += bk[c0:c1]
        y[:, c0 * mult : c1 * mult] = acc.reshape((n, cc * mult, out[0]) + q[1:])[crop]

    parallel_for(task, len(parts), threads)
    return y


def _depthwise_numpy_channels_last(
    x, wk, bk, pb, strides, q, total, width, length, taps, phases, out, threads
):
    """The numpy depthwise taps on channels-last planes (n, position, channel): for small maps with
    many channels, where every multiply-add then runs over rows of channels instead of short
    per-channel runs."""
    n, c = x.shape[:2]
    nd = len(q)
    mult = wk.shape[1]
    stride1 = all(v == 1 for v in strides)
    wt = np.ascontiguousarray(np.moveaxis(wk[..., 0], 2, 0))  # (taps, c, mult)
    y = np.empty((n, c * mult) + tuple(out), dtype=x.dtype)
    crop = (slice(None), slice(None)) + tuple(slice(0, o) for o in out[1:])
    step = c
    if threads > 1 and n * c * length * len(taps) >= PARALLEL_MIN_MACS:
        step = max(_DW_CL_CHANNELS // 2, -(-c // (2 * threads)))
    parts = [(c0, min(c, c0 + step)) for c0 in range(0, c, step)]
    st = tuple(x.shape[2 + i] for i in range(nd))

    def task(i: int) -> None:
        c0, c1 = parts[i]
        cc = c1 - c0
        xc = np.moveaxis(x[:, c0:c1], 1, -1)  # (n, *spatial, cc), a view
        inner = (slice(None),) + tuple(slice(pb[i], pb[i] + st[i]) for i in range(nd))
        if stride1:
            flat = np.zeros((n, width, cc), dtype=x.dtype)
            flat[:, :total].reshape((n,) + q + (cc,))[inner] = xc
            planes = {phases[0]: flat}
        else:
            full = np.zeros((n,) + tuple(q[i] * strides[i] for i in range(nd)) + (cc,), dtype=x.dtype)
            full[inner] = xc
            split = full.reshape((n,) + tuple(v for i in range(nd) for v in (q[i], strides[i])) + (cc,))
            planes = {}
            for phase in phases:
                plane = np.zeros((n, width, cc), dtype=x.dtype)
                sel = (slice(None),) + tuple(v for i in range(nd) for v in (slice(None), phase[i]))
                plane[:, :total].reshape((n,) + q + (cc,))[...] = split[sel]
                planes[phase] = plane
        wc = wt[:, c0:c1] if mult > 1 else wt[:, c0:c1, 0]
        acc = np.empty((n, length, cc, mult) if mult > 1 else (n, length, cc), dtype=x.dtype)
        tmp = np.empty_like(acc)
        for j, (phase, off) in enumerate(taps):
            view = planes[phase][:, off : off + length]
            if mult > 1:
                view = view[..., None]
            if j == 0:
                np.multiply(view, wc[j], out=acc)
            else:
                np.multiply(view, wc[j], out=tmp)
                acc += tmp
        if bk is not None:
            acc += bk[c0:c1, :, 0] if mult > 1 else bk[c0:c1, 0, 0]
        res = acc.reshape((n, out[0]) + q[1:] + (cc * mult,))[crop]
        y[:, c0 * mult : c1 * mult] = np.moveaxis(res, -1, 1)

    parallel_for(task, len(parts), threads)
    return y


# ---------------------------------------------------------------------------------------------------
# depthwise channels-last


def depthwise_conv2d_nhwc(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    activation: Activation = NO_ACTIVATION,
    threads: int = 0,
) -> np.ndarray:
    """2-D depthwise convolution (multiplier 1, no dilation) on channels-last arrays: ``x`` (N, H, W,
    C), ``w`` (KH, KW, C), ``b`` (C,) or None, ``pads`` (top, left, bottom, right); returns act(y)
    (N, OH, OW, C), C-contiguous. Every multiply-add runs over the channels of one position,
    contiguous in memory, so small maps and strides cost no plane copies."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    if w.shape != (kh, kw, c) or (b is not None and b.shape != (c,)):
        raise InvalidArgument(
            f"depthwise_conv2d_nhwc: W {w.shape} / B {None if b is None else b.shape} for X {x.shape}"
        )
    sh, sw = strides
    oh = (h + pads[0] + pads[2] - kh) // sh + 1
    ow = (wd + pads[1] + pads[3] - kw) // sw + 1
    mod = _compiled_for(x, w, b)
    if mod is None:
        return _depthwise_nhwc_numpy(x, w, b, strides, pads, (oh, ow), activation)
    y = np.empty((n, oh, ow, c), dtype=x.dtype)
    bias = np.zeros(c, dtype=x.dtype) if b is None else np.ascontiguousarray(b)
    xc = np.ascontiguousarray(x)
    mod.depthwise_nhwc(
        xc,
        np.ascontiguousarray(w),
        bias,
        y,
        sh,
        sw,
        pads[0],
        pads[1],
        *activation.args,
        _threads(threads, y.size),
    )
    return y


def _depthwise_nhwc_numpy(x, w, b, strides, pads, out, activation):
    """The channels-last depthwise convolution in numpy: one multiply-add per tap over a strided view
    of the zero-padded input."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    sh, sw = strides
    oh, ow = out
    xp = np.zeros(
        (
            n,
            max(h + pads[0] + pads[2], (oh - 1) * sh + kh),
            max(wd + pads[1] + pads[3], (ow - 1) * sw + kw),
            c,
        ),
        x.dtype,
    )
    xp[:, pads[0] : pads[0] + h, pads[1] : pads[1] + wd] = x
    y = np.zeros((n, oh, ow, c), dtype=x.dtype) if b is None else np.broadcast_to(b, (n, oh, ow, c)).copy()
    for ky in range(kh):
        for kx in range(kw):
            y += xp[:, ky : ky + (oh - 1) * sh + 1 : sh, kx : kx + (ow - 1) * sw + 1 : sw] * w[ky, kx]
    activation.apply_(y)
    return y


# ---------------------------------------------------------------------------------------------------
# epilogues


def conv_epilogue(
    y: np.ndarray,
    bias: np.ndarray | None = None,
    residual: np.ndarray | None = None,
    activation: Activation = NO_ACTIVATION,
    *,
    source: np.ndarray | None = None,
    rows: tuple[int, int] | None = None,
    threads: int = 0,
) -> None:
    """A convolution's NCHW output finished in one pass, in place: ``y`` (P, R, W) (P = images x
    channels, C-contiguous), for the rows r0:r1 of ``rows`` (all by default):
    ``y[i, r0:r1] = act(s + bias[i % len(bias)] + residual[i, r0:r1])`` where s is ``source[i, :,
    :W]`` (a GEMM's result (P, r1 - r0, S), S >= W, its extra columns dropped) or ``y`` itself.
    ``residual`` (P, R, W) or None."""
    planes, nrows_all, width = y.shape
    r0, r1 = rows if rows is not None else (0, nrows_all)
    mod = _compiled_for(y, bias, residual, source) if y.flags.c_contiguous else None
    if mod is None:
        _conv_epilogue_numpy(y, bias, residual, activation, source, r0, r1)
        return
    b = _EMPTY[y.dtype] if bias is None else np.ascontiguousarray(bias)
    z = None if residual is None else np.ascontiguousarray(residual)
    src = None if source is None else np.ascontiguousarray(source)
    t = _threads(threads, planes * (r1 - r0) * width)
    mod.epilogue_nchw(y, r0, r1 - r0, src, b, z, *activation.args, t)


def _conv_epilogue_numpy(y, bias, residual, activation, source, r0, r1):
    planes, _, width = y.shape
    dst = y[:, r0:r1]
    if source is not None:
        np.copyto(dst, source[:, :, :width])
    if bias is not None and bias.size:
        dst += np.resize(bias, planes)[:, None, None]
    if residual is not None:
        dst += residual[:, r0:r1]
    activation.apply_(dst)


def channels_last_epilogue(
    y: np.ndarray,
    bias: np.ndarray | None,
    residual: np.ndarray | None = None,
    activation: Activation = NO_ACTIVATION,
    *,
    threads: int = 0,
) -> None:
    """Channels-last rows finished in place: ``y[r] = act(y[r] + bias + residual[r])`` for ``y`` (rows,
    C) C-contiguous, ``bias`` (C,) or None, ``residual`` (rows, C) or None."""
    mod = _compiled_for(y, bias, residual) if y.flags.c_contiguous else None
    if mod is None:
        if residual is not None:
            y += residual
        if bias is not None:
            y += bias
        activation.apply_(y)
        return
    b = np.zeros(y.shape[1], dtype=y.dtype) if bias is None else np.ascontiguousarray(bias)
    z = None if residual is None else np.ascontiguousarray(residual)
    mod.epilogue_nhwc(y, b, z, *activation.args, _threads(threads, y.size))


def channels_last_crop_epilogue(
    source: np.ndarray,
    y: np.ndarray,
    tiled_bias: np.ndarray | None,
    activation: Activation = NO_ACTIVATION,
    *,
    threads: int = 0,
) -> None:
    """A channels-last output finished from its GEMM result in one pass: ``y[r] = act(source[r, :L] +
    tiled_bias)`` for ``y`` (R, L) C-contiguous and ``source`` (R, S), S >= L (rows computed on a
    phase plane's width, the extra positions dropped); ``tiled_bias`` (L,) (a bias of C tiled L / C
    times) or None."""
    width = y.shape[1]
    mod = _compiled_for(y, source, tiled_bias) if y.flags.c_contiguous else None
    if mod is None:
        np.copyto(y, source[:, :width])
        if tiled_bias is not None:
            y += tiled_bias
        activation.apply_(y)
        return
    bt = _EMPTY[y.dtype] if tiled_bias is None else np.ascontiguousarray(tiled_bias)
    mod.epilogue_crop_nhwc(np.ascontiguousarray(source), y, bt, *activation.args, _threads(threads, y.size))


def has_compiled(dtype: np.dtype) -> bool:
    """Whether the compiled convolution loops run for ``dtype`` (built, not switched off, float32/64):
    strategies that only pay with them (channels-last) check this when the plan is built."""
    return np.dtype(dtype) in _COMPILED_DTYPES and compiled("_conv") is not None
