"""Conv: N-d convolution as GEMM.

1x1 kernels are a plain (batched) matmul, depthwise kernels are shifted multiply-adds, everything else
is im2col (a strided view copied once) followed by one matmul batched over images and groups.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops import _native, _perf
from onyx.ops._derived import derived
from onyx.ops.nn._common import (
    JIT_ACTIVATIONS,
    as_compute_weight,
    as_ints,
    back,
    check_rank,
    compute_dtype,
    im2col,
    norm_auto_pad,
    pad_spatial,
    window_geometry,
)
from onyx.ops.nn._shapes import conv_rule
from onyx.ops.registry import op, shape_rule
from onyx.runtime import blas, team
from onyx.runtime.threads import GEMM_SPLIT_MACS, loop_threads, parallel_for, split_ranges

_COLS_BYTES = 4 << 20  # largest im2col buffer of one block of output rows
_MIN_COLS = 512  # fewest output positions in one GEMM block
_DW_BLOCK_BYTES = 256 << 10  # depthwise: bytes of one work array of a block of channels
_DW_CL_CHANNELS = 128  # depthwise: channels-last planes from this many channels ...
_DW_CL_LENGTH = 1024  # ... and at most this many (padded-row) output positions
_DW_SPLIT = 1 << 20  # depthwise: multiply-adds above which the channel blocks go to several threads
_NN_JIT = "onyx.ops.nn._jit"
_TEAM_MIN = 1 << 14  # channels-last kernels: output elements from which they run on MKL's threads (team)


def _key(v):
    """An attribute value as an lru_cache key: sequences as tuples."""
    return v if v is None or isinstance(v, (str, bytes, int)) else tuple(v)


@lru_cache(maxsize=1024)
def _geometry(x_shape, w_shape, group, kernel_shape, pads, strides, dilations, auto_pad):
    """A convolution's checked geometry, computed once per shape signature: (strides, dilations, begin
    pads, end pads, output spatial shape, output positions, kernel positions)."""
    nd = len(x_shape) - 2
    if len(w_shape) != len(x_shape):
        raise InvalidArgument(f"Conv: W of shape {w_shape} must have the rank of X {x_shape}")
    c = x_shape[1]
    m, cg = w_shape[:2]
    kernel = tuple(w_shape[2:])
    if kernel_shape:
        ks = tuple(int(k) for k in kernel_shape)
        if ks != kernel:
            raise InvalidArgument(f"Conv: kernel_shape {ks} does not match W of shape {w_shape}")
    if group <= 0 or c != cg * group or m % group:
        raise InvalidArgument(
            f"Conv: X of shape {x_shape} and W of shape {w_shape} do not agree with group={group} "
            "(need C = W.shape[1] * group and M divisible by group)"
        )
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    ap = norm_auto_pad(auto_pad)
    pb, pe, out, _ = window_geometry(tuple(x_shape[2:]), kernel, strides, dilations, pads, ap)
    return strides, dilations, pb, pe, out, math.prod(out), math.prod(kernel)


def conv_forward(
    x,
    w,
    b,
    *,
    auto_pad,
    dilations,
    group,
    kernel_shape,
    pads,
    strides,
    ctx=None,
    post=None,
    act=None,
    z=None,
    channels_last=False,
    memo=None,
):
    """The convolution shared by Conv, ConvInteger, QLinearConv and FusedConv (inputs already in
    compute dtype). ``ctx``: the kernel context (its intra_op_num_threads); ``z``: an array of the
    output's shape added to it (FusedConv's Z) before ``post``; ``post``: an in-place elementwise
    function (an activation) applied to each finished block of the output while it is still in cache;
    ``act``: the same activation as (ONNX op name, params), for compiled loops that apply it
    themselves; ``channels_last``: leave the output channels-last when the kernel can (see
    :func:`wants_channels_last`). An input that is channels-last (an NCHW view of an NHWC buffer, as
    such outputs are) runs channels-last where a kernel exists and is made contiguous otherwise.
    ``memo``: a node's :class:`ReplayMemo`, given when ``x``, ``w`` and ``b`` are the node's own inputs
    (no conversion): a channels-last run records there what a later run with the same signature
    repeats without the checks and lookups."""
    check_rank(x, 3, "Conv X")
    group = int(group)
    strides, dilations, pb, pe, out, p, kp = _geometry(
        x.shape, w.shape, group, _key(kernel_shape), _key(pads), _key(strides), _key(dilations), auto_pad
    )
    nd = x.ndim - 2
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    mg = m // group
    if b is not None and b.shape != (m,):
        raise InvalidArgument(f"Conv: B of shape {b.shape}, expected ({m},)")
    if n == 0 or p == 0 or m == 0:
        return np.zeros((n, m) + out, dtype=x.dtype)
    threads = loop_threads(ctx)
    if nd == 2 and x.dtype in _JIT_DTYPES and (channels_last or _is_channels_last(x)):
        y = _conv_channels_last(x, w, b, z, group, kernel, strides, dilations, pb, pe, out, act, post, memo)
        if y is not None:
            return y
        x = np.ascontiguousarray(x)
    if cg == 1 and group == c and kp > 1:
        if nd == 2 and x.dtype in _JIT_DTYPES and (jit := _perf.jit_module("onyx.ops.nn._jit")) is not None:
            act = act if z is None else None
            y, done = _depthwise_jit(jit, x, w, b, pb, pe, kernel, strides, dilations, out, threads, act)
            if done:
                return y
        else:
            y = _depthwise(x, w, b, pb, pe, kernel, strides, dilations, out, threads)
        if z is not None:
            y += z
        return y if post is None else _post_whole(post, y)
    patches = kp > 1 and _is_patchify(kernel, strides, dilations, pb, pe)
    if (
        not patches
        and group == 1
        and kp > 1
        and _planes_pay(x.shape[2:], kernel, strides, dilations, pb, pe, out)
    ):
        return _conv_planes(
            x, w, b, z, pb, pe, kernel, strides, dilations, out, threads, post, act, channels_last
        )
    rows = out[0]
    inner = p // rows
    y = np.empty((n, group, mg, rows, inner), dtype=x.dtype)
    bias = None if b is None else b.reshape(group, mg, 1, 1)
    zb = None if z is None else np.broadcast_to(z, (n, m) + out).reshape(n, group, mg, rows, inner)
    wm = w.reshape(group, mg, cg * kp)
    if kp == 1 and not any(pb) and not any(pe):
        st = strides[0]

        def cols_of(r0, r1):
            xs = x[:, :, r0 * st : (r1 - 1) * st + 1 : st]
            if any(s != 1 for s in strides):
                xs = xs[
                    (slice(None), slice(None), slice(None))
                    + tuple(slice(0, (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(1, nd))
                ]
            return xs.reshape(n, group, cg, (r1 - r0) * inner)

        row_bytes = 0 if all(s == 1 for s in strides) else n * c * inner * x.dtype.itemsize
    elif patches:  # non-overlapping patches (a ViT's patch embedding): the columns are a transpose of x
        k0 = kernel[0]
        crop = tuple(slice(0, out[i] * kernel[i]) for i in range(1, nd))
        # (N, C, o0, k0, o1, k1, ...) -> (N, C, k0, k1, ..., o0, o1, ...)
        order = (0, 1) + tuple(3 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))

        def cols_of(r0, r1):
            slab = x[(slice(None), slice(None), slice(r0 * k0, r1 * k0)) + crop]
            dims = (r1 - r0,) + tuple(out[1:])
            split = slab.reshape((n, c) + tuple(v for i in range(nd) for v in (dims[i], kernel[i])))
            return split.transpose(order).reshape(n, group, cg * kp, (r1 - r0) * inner)

        row_bytes = n * c * kp * inner * x.dtype.itemsize
    else:
        xp = pad_spatial(x, pb, pe)

        def cols_of(r0, r1):
            sub = (r1 - r0,) + out[1:]
            cols = im2col(xp[:, :, r0 * strides[0] :], kernel, strides, dilations, sub)
            return cols.reshape(n, group, cg * kp, (r1 - r0) * inner)

        row_bytes = n * c * kp * inner * x.dtype.itemsize
    macs = n * m * cg * kp * p
    # blocks of output rows: several per thread (a busy worker's share goes to the others), each
    # block's column buffer small enough to stay in cache while its GEMM reads it, and wide enough
    # (_MIN_COLS) for BLAS to run at speed
    blocks = 4 * threads if threads > 1 and macs >= GEMM_SPLIT_MACS else 1
    if row_bytes:
        blocks = max(blocks, -(-rows * row_bytes // _COLS_BYTES))
    blocks = min(blocks, max(1, p // _MIN_COLS))
    if threads > 1 and macs >= GEMM_SPLIT_MACS and blocks < 2 * threads and mg >= 32:
        # few output positions (late layers): one column buffer, the GEMM split over output channels
        cols = cols_of(0, rows)
        y4 = y.reshape(n, group, mg, p)
        mparts = split_ranges(mg, 2 * threads, 16)

        def mtask(i: int) -> None:
            m0, m1 = mparts[i]
            blas.matmul(wm[:, m0:m1], cols, out=y4[:, :, m0:m1])
            if bias is not None:
                y4[:, :, m0:m1] += bias[:, m0:m1, 0]
            if zb is not None:
                y[:, :, m0:m1] += zb[:, :, m0:m1]
            if post is not None:
                post(y4[:, :, m0:m1])

        parallel_for(mtask, len(mparts), threads)
        return y.reshape((n, m) + out)
    parts = split_ranges(rows, blocks)

    fin = _epilogue_args(x, b, z, (n, m) + out, act, post)
    y3 = y.reshape(n * m, rows, inner)

    def task(i: int) -> None:
        r0, r1 = parts[i]
        dst = y[:, :, :, r0:r1].reshape(n, group, mg, (r1 - r0) * inner)  # whole rows: a view of y
        assert np.may_share_memory(dst, y)  # (np.reshape's copy=False says so from numpy 2.1 only)
        blas.matmul(wm, cols_of(r0, r1), out=dst)
        if fin is not None:
            fz = fin[2]
            if r1 - r0 == rows:  # whole planes: one long run each (3-4x faster on 7x7..28x28 maps)
                flat = y3.reshape(n * m, 1, p)
                fz = fz if fz.shape[0] == 0 else fz.reshape(n * m, 1, p)
                _run_epilogue(fin, _NO_SOURCE[y.dtype], flat, 0, 1, fz)
            else:
                _run_epilogue(fin, _NO_SOURCE[y.dtype], y3, r0, r1 - r0, fz)
            return
        if bias is not None:
            y[:, :, :, r0:r1] += bias
        if zb is not None:
            y[:, :, :, r0:r1] += zb[:, :, :, r0:r1]
        if post is not None:
            post(y[:, :, :, r0:r1])

    parallel_for(task, len(parts), threads)
    return y.reshape((n, m) + out)


def _is_channels_last(x) -> bool:
    """Whether the 4-D ``x`` is an NCHW view of a C-contiguous NHWC buffer (and not plainly NCHW)."""
    return x.ndim == 4 and not x.flags.c_contiguous and x.transpose(0, 2, 3, 1).flags.c_contiguous


def wants_channels_last(node) -> bool:
    """Whether the convolution ``node`` should leave its output channels-last: every consumer is a
    2-D depthwise convolution (multiplier 1), which runs channels-last without plane copies
    (_jit.depthwise_cl), and the 1x1 convolutions after it keep the layout (MobileNet's blocks).
    Decided once per node, when the plan is built."""
    if node is None or len(node.outputs) != 1 or not node.outputs[0].uses:
        return False
    for consumer, index in node.outputs[0].uses:
        if index != 0 or consumer.op_type not in ("Conv", "FusedConv") or len(consumer.inputs) < 2:
            return False
        wv = consumer.inputs[1]
        dims = tuple(wv.const.dims) if wv.const is not None else None
        group = consumer.attr("group", 1)
        if dims is None or len(dims) != 4 or dims[1] != 1 or group <= 1 or dims[0] != group:
            return False
    return True


def _conv_channels_last(x, w, b, z, group, kernel, strides, dilations, pb, pe, out, act, post, memo=None):
    """The 2-D convolutions that run channels-last (depthwise with multiplier 1 on a channels-last
    input; 1x1 with stride 1 and no padding on either layout), their output an NCHW view of an NHWC
    array; None for the others (and when the ``perf`` extra is missing). With a ``memo``, the run is
    recorded there as a replay (see conv_forward)."""
    n, c = x.shape[:2]
    m = w.shape[0]
    if any(d != 1 for d in dilations) or not _native.available():
        return None
    # float32 runs the team tasks (machine code numba compiled once, loaded without numba:
    # onyx.ops._native), on MKL's threads when they are there; float64 the numba loops themselves
    native = x.dtype == np.float32
    jit = None if native else _perf.jit_module("onyx.ops.nn._jit")
    if not native and jit is None:
        return None
    code, alpha, beta = _act_args(act)
    if z is not None or (post is not None and code is None):
        code = 0  # numpy finishes: Z first, then the activation
    bias = np.zeros(m, dtype=x.dtype) if b is None else np.ascontiguousarray(b, dtype=x.dtype)
    xcl = x.transpose(0, 2, 3, 1)
    depthwise = group == c and w.shape[1] == 1 and m == c and math.prod(kernel) > 1
    finish = post if post is not None and code == 0 else None
    act_args = np.array([alpha, beta], np.float64)  # the team tasks read them from memory
    if depthwise and xcl.flags.c_contiguous:
        wk = derived(w, "depthwise_cl", lambda: np.ascontiguousarray(np.moveaxis(w[:, 0], 0, -1)))
        shape = (n, out[0], out[1], m)
        sh, sw, ph, pw = strides[0], strides[1], pb[0], pb[1]
        task = _native.task(_NN_JIT, "_depthwise_cl_task") if native else None

        def replay(x, z):
            ycl = np.empty(shape, dtype=x.dtype)
            xcl = x.transpose(0, 2, 3, 1)
            if task is None:
                jit.depthwise_cl(xcl, wk, bias, ycl, sh, sw, ph, pw, code, alpha, beta)
            else:
                params = np.array(
                    [0, *xcl.shape, xcl.ctypes.data, *wk.shape[:2], wk.ctypes.data, bias.ctypes.data,
                     ycl.ctypes.data, *shape[1:3], sh, sw, ph, pw, code, act_args.ctypes.data],
                    np.int64,
                )  # fmt: skip
                team.run_rows(task, params, n * shape[1], ycl.size >= _TEAM_MIN)
            return _cl_finish(ycl, z, finish)

    elif (
        math.prod(kernel) == 1 and group == 1 and all(s == 1 for s in strides) and not any(pb) and not any(pe)
    ):
        hw = out[0] * out[1]
        wt = derived(w, "1x1_channels_last", lambda: np.ascontiguousarray(w.reshape(m, c).T))
        shape = (n, out[0], out[1], m)
        no_rows = _NO_ROWS[x.dtype]
        task = _native.task(_NN_JIT, "_epilogue_cl_task") if native else None

        def replay(x, z):
            xcl = x.transpose(0, 2, 3, 1)
            a = xcl.reshape(n, hw, c) if xcl.flags.c_contiguous else x.reshape(n, c, hw).transpose(0, 2, 1)
            ycl = blas.matmul(a, wt).reshape(shape)
            rows = ycl.reshape(-1, m)
            if task is None:
                jit.epilogue_cl(rows, bias, no_rows, code, alpha, beta)
            else:
                params = np.array(
                    [0, *rows.shape, rows.ctypes.data, bias.ctypes.data, code, act_args.ctypes.data], np.int64
                )
                team.run_rows(task, params, rows.shape[0], rows.size >= _TEAM_MIN)
            return _cl_finish(ycl, z, finish)

    else:
        return None
    if memo is not None and not w.flags.writeable and (b is None or not b.flags.writeable):
        memo.record(x, w, b, z, replay)  # frozen weights only: the replay keeps what it derived from them
    return replay(x, z)


def _cl_finish(ycl, z, post):
    """A channels-last output as its NCHW view, ``z`` added and then ``post`` (when numpy finishes)."""
    y = ycl.transpose(0, 3, 1, 2)
    if z is not None:
        y += z
    return y if post is None else _post_whole(post, y)


class ReplayMemo:
    """A convolution node's recorded channels-last runs, one per input signature (shape, strides and
    type of X; Z given or not) and the same W and B objects: a hit repeats the kernel calls only
    (a MobileNetV2 layer's checks, lookups and argument handling took ~10 of its ~13 us of Python)."""

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


def _is_patchify(kernel, strides, dilations, pb, pe) -> bool:
    """Kernel equal to the stride, no dilation, no padding: every input position falls under exactly
    one kernel offset (or none, past the last whole patch), so the column matrix is a transpose of x."""
    return tuple(kernel) == tuple(strides) and all(d == 1 for d in dilations) and not any(pb) and not any(pe)


#: phase-plane convolution: input channels from which each kernel offset is its own GEMM on the planes
#: (fewer: the column matrix, one GEMM with a deeper inner dimension)
_DIRECT_MIN_CHANNELS = 32
#: ... and, for a strided convolution, positions per output block (each offset's GEMM width) from which
#: it does: narrower GEMMs on the phase planes run slower than one over the column matrix and its
#: copies (ResNet-18's stride-2 3x3 layers, 812 / 210 / 56 positions: 963 / 683 / 783 us against 602
#: / 545 / 657 alone; the model 29.9 against 29.7 ms, in one process alternating). Stride 1 keeps the
#: per-offset GEMMs at any width: its planes are the input itself, still in cache (the model 31.2
#: against 31.0 ms with the same bound there)
_DIRECT_MIN_SPAN = 2048

_PLANES_BYTES = 32 << 20  # phase-plane convolution: largest column buffer of one block of output rows

#: largest column-matrix weight (elements) that takes the bias as an extra column (see _conv_planes)
_FOLD_MAX = 1 << 16


#: phase-plane convolution: at most this many computed positions per output position (the extra
#: columns of each row); on small maps the wider GEMM costs more than the strided im2col it saves
_PLANES_WASTE = 1.2


def _planes_pay(spatial, kernel, strides, dilations, pb, pe, out) -> bool:
    _, _, length, _, _, _ = _dw_geometry(
        tuple(spatial), tuple(kernel), tuple(strides), tuple(dilations), tuple(pb), tuple(pe), tuple(out)
    )
    return length <= _PLANES_WASTE * math.prod(out)


def _conv_planes(
    x, w, b, z, pb, pe, kernel, strides, dilations, out, threads, post, act, channels_last=False
):
    """Convolution (one group, kernel larger than 1x1) as one GEMM over columns copied from phase planes.

    The padded input is split into its stride phases (one when the stride is 1) and each phase is
    flattened per channel, so the input under any kernel offset is one contiguous run of a phase
    plane: the column matrix (offsets x channels, positions) is filled by ``prod(kernel)`` long
    contiguous copies instead of a strided im2col gather. Positions are computed on the phase plane's
    row width, so each output row carries a few extra columns that are dropped when the bias (and
    ``z``) is added on the way into the output. ``channels_last`` (the column matrix's GEMM, a compiled
    epilogue, no ``z``): the output is left channels-last, the GEMM run the other way round
    (positions x output channels) and finished by _jit.epilogue_crop_cl's team task (an RGB stem
    feeding a depthwise convolution: MobileNetV2's).
    """
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = len(kernel)
    kp = math.prod(kernel)
    q, total, length, taps, width, phases = _dw_geometry(
        tuple(x.shape[2:]), tuple(kernel), tuple(strides), tuple(dilations), tuple(pb), tuple(pe), tuple(out)
    )
    planes = _phase_planes(x, pb, strides, q, total, width, phases)
    # with enough channels per tap, each tap's GEMM reads its window of the planes in place and adds
    # into the output (BLAS's beta): no column matrix at all
    wide = length >= _DIRECT_MIN_SPAN or all(st == 1 for st in strides)
    direct = c >= _DIRECT_MIN_CHANNELS and wide and blas.available(x.dtype)
    if direct:  # (M, C, *kernel) -> (kernel offsets, M, C)
        wt = derived(w, "conv_taps_first", lambda: np.moveaxis(w.reshape(m, c, kp), 2, 0).copy())
    else:  # (M, C, *kernel) -> (M, kernel offsets x channels), the column matrix's row order
        wt = derived(w, "conv_taps_last", lambda: np.moveaxis(w, 1, -1).reshape(m, kp * c))
    y = np.empty((n, m) + tuple(out), dtype=x.dtype)
    row = length // out[0]  # positions per output row on the phase plane
    crop = (slice(None), slice(None), slice(None)) + tuple(slice(0, o) for o in out[1:])
    bias = None if b is None else b.reshape((m,) + (1,) * nd)
    zz = None if z is None else np.broadcast_to(z, y.shape)
    blocks = 1 if direct else max(1, -(-n * kp * c * length * x.dtype.itemsize // _PLANES_BYTES))
    if threads > 1:
        blocks = max(blocks, 2 * threads)
    parts = split_ranges(out[0], min(blocks, out[0]))
    cl_args = _crop_cl_args(x, b, z, act, post, out[1]) if channels_last and not direct and nd == 2 else None
    cl = cl_args is not None
    fin = _epilogue_args(x, b, z, y.shape, act, post) if nd == 2 and not cl else None
    # numpy finishes the output: the bias rides in the GEMM (a row of ones under a column of biases),
    # and a ReLU goes with the copy out of the wider rows, one pass instead of three (a few input
    # channels, as in an RGB stem; with a big weight the copy with its bias column costs more)
    fold = not direct and not cl and fin is None and bias is not None and wt.size <= _FOLD_MAX
    if fold:
        wt = np.concatenate([wt, b.reshape(m, 1).astype(wt.dtype, copy=False)], axis=1)
        bias = None
    relu = z is None and act is not None and act[0] == "Relu"
    if cl:
        ycl = np.empty((n,) + tuple(out) + (m,), dtype=x.dtype)

    def task(i: int) -> None:
        r0, r1 = parts[i]
        span = (r1 - r0) * row
        if not direct:
            cols = np.empty((n, kp * c + fold, span), dtype=x.dtype)
            if fold:
                cols[:, -1] = 1
            taps_cols = cols[:, : kp * c].reshape(n, kp, c, span)
            for t, (phase, off) in enumerate(taps):
                start = off + r0 * row
                taps_cols[:, t] = planes[phase][:, :, start : start + span]
        if cl:
            finish_task, bias_row, code, act_args = cl_args
            for img in range(n):
                full_t = blas.matmul(cols[img].T, wt.T)  # (positions, M)
                dst = ycl[img, r0:r1].reshape(r1 - r0, out[1] * m)
                params = np.array(
                    [0, *dst.shape, dst.ctypes.data, row * m, full_t.ctypes.data, bias_row.ctypes.data,
                     bias_row.size, code, act_args.ctypes.data],
                    np.int64,
                )  # fmt: skip
                team.run_rows(finish_task, params, dst.shape[0], dst.size >= _TEAM_MIN)
            return
        if direct:
            full = np.empty((n, m, span), dtype=x.dtype)
            starts = [off + r0 * row for _, off in taps]
            for img in range(n):
                blas.gemm_taps(wt, [planes[phase][img] for phase, _ in taps], starts, full[img])
        else:
            full = blas.matmul(wt, cols)
        if fin is not None:
            src = full.reshape(n * m, r1 - r0, row)
            _run_epilogue(fin, src, y.reshape(n * m, out[0], out[1]), r0, r1 - r0, fin[2])
            return
        src = full.reshape((n, m, r1 - r0) + q[1:])[crop]
        dst = y[:, :, r0:r1]
        if bias is not None:
            np.add(src, bias, out=dst)
        elif relu:
            np.maximum(src, 0, out=dst)
            return
        else:
            np.copyto(dst, src)
        if zz is not None:
            dst += zz[:, :, r0:r1]
        if post is not None:
            post(dst)

    parallel_for(task, len(parts), threads)
    return ycl.transpose(0, 3, 1, 2) if cl else y


def _phase_planes(x, pb, strides, q, total, width, phases) -> dict:
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


def _post_whole(post, y):
    r = post(y)
    return y if r is None else r


@lru_cache(maxsize=512)
def _dw_geometry(spatial, kernel, strides, dilations, pb, pe, out):
    """Phase extents, plane size, output run length, (phase, offset) per tap, plane width, phases."""
    nd = len(kernel)
    q = tuple(-(-(spatial[i] + pb[i] + pe[i]) // strides[i]) for i in range(nd))  # phase extents
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


_JIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_NO_SOURCE = {dt: np.empty((0, 0, 0), dtype=dt) for dt in _JIT_DTYPES}  # the epilogue's "in place"
_NO_ROWS = {dt: np.empty((0, 0), dtype=dt) for dt in _JIT_DTYPES}  # epilogue_cl's "no z"


@lru_cache(maxsize=512)
def _dw_tap_arrays(taps: tuple, strides: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The compiled loop's view of _dw_geometry's taps, built once per geometry: each tap's phase plane
    (row-major over the stride phases) and its offset in that plane. Read-only."""
    phase_index = {ph: i for i, ph in enumerate((a, b) for a in range(strides[0]) for b in range(strides[1]))}
    tap_phase = np.array([phase_index[ph] for ph, _ in taps], dtype=np.int64)
    tap_off = np.array([off for _, off in taps], dtype=np.int64)
    tap_phase.flags.writeable = False
    tap_off.flags.writeable = False
    return tap_phase, tap_off


def _act_args(act) -> tuple:
    """(code, alpha, beta) of an activation (ONNX op name, params) for the compiled loops; code None
    when they do not know it."""
    name, params = act if act is not None else ("", ())
    code = JIT_ACTIVATIONS.get(name)
    alpha = beta = 0.0
    if code == 2:
        alpha = float(params[0]) if len(params) > 0 else -np.inf
        beta = float(params[1]) if len(params) > 1 else np.inf
    elif code == 3:
        alpha = float(params[0]) if params else 0.01
    return code, alpha, beta


def _crop_cl_args(x, b, z, act, post, width: int) -> tuple | None:
    """What the channels-last finish of a column-matrix convolution (_jit._epilogue_crop_cl_task)
    needs: (task address, the bias tiled ``width`` times, activation code, (alpha, beta)); None where
    it does not apply (not float32, a ``z``, an activation it does not know, no perf extra)."""
    if (
        x.dtype != np.float32
        or z is not None
        or (post is not None and act is None)
        or not _native.available()
    ):
        return None
    code, alpha, beta = _act_args(act)
    if code is None:
        return None
    bias = np.zeros(0, np.float32) if b is None else np.tile(np.ascontiguousarray(b, dtype=np.float32), width)
    task = _native.task(_NN_JIT, "_epilogue_crop_cl_task")
    return task, bias, code, np.array([alpha, beta], np.float64)


def _run_epilogue(fin, src, y3, y0: int, nrows: int, fz) -> None:
    """The compiled epilogue ``fin`` (from _epilogue_args) over rows y0:y0+nrows of every plane of the
    C-contiguous ``y3`` (see _jit.epilogue): float32 as the cached task (onyx.ops._native), planes over
    MKL's threads when they are there; float64 by numba's loop."""
    jit, fb, _, code, alpha, beta = fin
    planes = y3.shape[0]
    if jit is not None:
        jit.epilogue(src, 0, y3, y0, nrows, fb, fz, code, alpha, beta, 0, planes)
        return
    ab = np.array([alpha, beta], np.float64)
    params = np.array(
        [0, *y3.shape, y3.ctypes.data, y0, nrows, src.ctypes.data if src.size else 0, *src.shape[1:], 0,
         fb.ctypes.data, fb.size, fz.ctypes.data if fz.size else 0, code, ab.ctypes.data],
        np.int64,
    )  # fmt: skip
    team.run_rows(
        _native.task(_NN_JIT, "_epilogue_task"), params, planes, planes * nrows * y3.shape[2] >= _TEAM_MIN
    )


def _epilogue_args(x, b, z, y_shape: tuple, act, post) -> tuple | None:
    """What the compiled epilogue (bias, ``z``, activation in one pass) needs for a convolution's
    output of ``y_shape`` (N, M, rows, ...), seen as (N*M, rows, -1); or None: numpy finishes it."""
    if x.dtype not in _JIT_DTYPES or (post is not None and act is None):
        return None
    if x.dtype == np.float32 and _native.available():
        jit = None  # the cached task (_run_epilogue)
    elif (jit := _perf.jit_module("onyx.ops.nn._jit", if_loaded=True)) is None:
        return None  # float64: numba's loop only once loaded (a few percent: not worth loading numba)
    code, alpha, beta = _act_args(act)
    if code is None:
        return None
    bias = np.zeros(0, dtype=x.dtype) if b is None else np.ascontiguousarray(b, dtype=x.dtype)
    if z is None:
        z3 = np.empty((0, 0, 0), dtype=x.dtype)
    elif z.shape != tuple(y_shape) or z.dtype != x.dtype:
        return None
    else:
        z3 = np.ascontiguousarray(z).reshape(y_shape[0] * y_shape[1], y_shape[2], -1)
    return jit, bias, z3, code, alpha, beta


def _depthwise_jit(jit, x, w, b, pb, pe, kernel, strides, dilations, out, threads, act):
    """_depthwise by the compiled loop (2-D, float32/float64). Returns (y, whether ``act`` was applied)."""
    n, c = x.shape[:2]
    q, total, length, taps, width, phases = _dw_geometry(
        tuple(x.shape[2:]), tuple(kernel), tuple(strides), tuple(dilations), tuple(pb), tuple(pe), tuple(out)
    )
    tap_phase, tap_off = _dw_tap_arrays(taps, tuple(strides))
    code, alpha, beta = _act_args(act)
    mult = w.shape[0] // c
    wk = np.ascontiguousarray(w.reshape(c * mult, -1))
    bias = np.zeros(0, dtype=x.dtype) if b is None else np.ascontiguousarray(b, dtype=x.dtype)
    y = np.empty((n, c * mult) + tuple(out), dtype=x.dtype)
    xc = np.ascontiguousarray(x)
    step = c
    if threads > 1 and n * c * length * len(taps) >= _DW_SPLIT:
        step = -(-c // (2 * threads))
    parts = [(c0, min(c, c0 + step)) for c0 in range(0, c, step)]

    def task(i: int) -> None:
        c0, c1 = parts[i]
        jit.depthwise2d(
            xc,
            wk,
            bias,
            y,
            c0,
            c1,
            mult,
            pb[0],
            pb[1],
            strides[0],
            strides[1],
            tap_phase,
            tap_off,
            q[0],
            q[1],
            width,
            code or 0,
            alpha,
            beta,
        )

    parallel_for(task, len(parts), threads)
    return y, act is not None and code is not None


def _depthwise(x, w, b, pb, pe, kernel, strides, dilations, out, threads=1):
    """Depthwise convolution (one input channel per group, any multiplier) on flattened (polyphase) planes.

    The padded image is split into its stride phases (one phase when the stride is 1) and each phase
    is flattened per channel, so every kernel offset is one contiguous shift of a whole phase plane:
    each multiply-add runs over one long contiguous run per channel instead of one short (strided)
    run per output row. Positions that wrap across a row end land in columns that are cut off.
    Channels go in blocks small enough for the work arrays to stay in cache across the taps, the
    blocks shared out over ``threads`` threads.
    """
    n, c = x.shape[:2]
    q, total, length, taps, width, phases = _dw_geometry(
        tuple(x.shape[2:]), tuple(kernel), tuple(strides), tuple(dilations), tuple(pb), tuple(pe), tuple(out)
    )
    mult = w.shape[0] // c
    wk = w.reshape(c, mult, -1, 1)
    bk = None if b is None else b.reshape(c, mult, 1)
    if c >= _DW_CL_CHANNELS and length <= _DW_CL_LENGTH:
        return _depthwise_channels_last(
            x, wk, bk, pb, strides, q, total, width, length, taps, phases, out, threads
        )
    y = np.empty((n, c * mult) + tuple(out), dtype=x.dtype)
    crop = (slice(None),) * 3 + tuple(slice(0, o) for o in out[1:])
    per_channel = n * mult * max(width, length) * x.dtype.itemsize
    step = max(1, min(c, _DW_BLOCK_BYTES // max(per_channel, 1)))
    if threads > 1 and n * c * length * len(taps) >= _DW_SPLIT:
        step = min(step, max(1, -(-c // (2 * threads))))
    parts = [(c0, min(c, c0 + step)) for c0 in range(0, c, step)]

    def task(i: int) -> None:
        c0, c1 = parts[i]
        cc = c1 - c0
        planes = _phase_planes(x[:, c0:c1], pb, strides, q, total, width, phases)
        wc = wk[c0:c1]
        acc = np.empty((n, cc, mult, length), dtype=x.dtype)
        tmp = np.empty_like(acc)
        for j, (phase, off) in enumerate(taps):
            view = planes[phase][:, :, None, off : off + length]
            if j == 0:
                np.multiply(view, wc[:, :, 0], out=acc)
            else:
                np.multiply(view, wc[:, :, j], out=tmp)
                acc += tmp
        if bk is not None:
            acc += bk[c0:c1]
        y[:, c0 * mult : c1 * mult] = acc.reshape((n, cc * mult, out[0]) + q[1:])[crop]

    parallel_for(task, len(parts), threads)
    return y


def _depthwise_channels_last(x, wk, bk, pb, strides, q, total, width, length, taps, phases, out, threads):
    """_depthwise's taps on channels-last planes (n, position, channel): for small maps with many
    channels, where every multiply-add then runs over rows of channels instead of short per-channel
    runs (2x faster on MobileNet's 14x14 and 7x7 layers)."""
    n, c = x.shape[:2]
    nd = len(q)
    mult = wk.shape[1]
    stride1 = all(v == 1 for v in strides)
    wt = np.ascontiguousarray(np.moveaxis(wk[..., 0], 2, 0))  # (taps, c, mult)
    y = np.empty((n, c * mult) + tuple(out), dtype=x.dtype)
    crop = (slice(None), slice(None)) + tuple(slice(0, o) for o in out[1:])
    step = c
    if threads > 1 and n * c * length * len(taps) >= _DW_SPLIT:
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


@op("Conv", since=1)
def conv(
    X,
    W,
    B=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    pads=None,
    strides=None,
    _ctx=None,
    _node=None,
):
    return _conv(X, W, B, wants_channels_last(_node), _ctx, **conv_attributes(locals()))


#: the attributes every convolution op passes on to conv_forward
CONV_ATTRIBUTES = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def conv_attributes(values: dict) -> dict:
    """The CONV_ATTRIBUTES entries of ``values`` (a kernel's ``locals()``)."""
    return {k: values[k] for k in CONV_ATTRIBUTES}


def _conv(X, W, B, channels_last, ctx, memo=None, **attrs):  # noqa: N803
    dtype = X.dtype
    ct = compute_dtype(dtype)
    x, w = X.astype(ct, copy=False), as_compute_weight(W, ct)
    b = None if B is None else B.astype(ct, copy=False)
    same = x is X and w is W and b is B  # the memo's runs are keyed on the node's own inputs
    y = conv_forward(x, w, b, ctx=ctx, channels_last=channels_last, memo=memo if same else None, **attrs)
    return back(y, dtype)


def _prepare_conv(*, _node=None, _ctx=None, **attrs):
    """Conv bound to its node once: whether its output stays channels-last is decided here, and its
    channels-last runs are replayed per input signature (ReplayMemo)."""
    cl = wants_channels_last(_node)
    memo = ReplayMemo()

    def run(X, W, B=None):  # noqa: N803
        y = memo.replay(X, W, B, None)
        return _conv(X, W, B, cl, _ctx, memo, **attrs) if y is None else y

    return run


conv.prepare = _prepare_conv


shape_rule("Conv")(conv_rule)
