"""Convolution as GEMM, blocked over output rows: the column-matrix GEMM (:func:`columns_conv`) and the
phase-plane GEMMs (:func:`planes_conv`), each block's output finished (bias, residual, activation)
while it is still in cache.

The operator (onyx.ops.nn.conv) chooses the strategy and describes the geometry; how the output is cut
in blocks, which blocks run on which of onyx's threads, and how each block's GEMM and epilogue run is
decided here. ``threads`` is the session's ``intra_op_num_threads`` (0: the default).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from onyx.errors import Fail
from onyx.kernels import blas
from onyx.kernels import conv as kernels
from onyx.kernels.conv import Activation
from onyx.kernels.parallel import GEMM_SPLIT_MACS, loop_pool_threads, parallel_for, split_ranges

#: an in-place numpy function finishing a block of the output (its activation)
Post = Callable[[np.ndarray], object]

#: column matrix: largest im2col buffer of one block of output rows
COLS_BYTES = 4 << 20
#: column matrix: fewest output positions in one GEMM block (narrower, BLAS runs below speed)
MIN_COLS = 512
#: phase planes: largest column buffer of one block of output rows
PLANES_BYTES = 32 << 20
#: phase planes: largest column-matrix weight (elements) that takes the bias as an extra column (numpy
#: finish)
FOLD_MAX = 1 << 16


def columns_conv(
    w_groups: np.ndarray,
    columns: Callable[[int, int], np.ndarray],
    y: np.ndarray,
    out: tuple[int, ...],
    bias: np.ndarray | None,
    z: np.ndarray | None,
    *,
    row_bytes: int,
    activation: Activation | None,
    post: Post,
    threads: int = 0,
) -> None:
    """A convolution as one GEMM per block of output rows over its column matrix, into ``y``.

    ``w_groups`` (G, Mg, K): the weights per group; ``columns(r0, r1)``: the column matrix (N, G, K,
    (r1 - r0) * inner) of output rows r0:r1 (a view of x or a copy); ``y`` (N, G, Mg, rows, inner)
    C-contiguous, the output of spatial shape ``out`` (rows = out[0]); ``bias`` (M,) or None; ``z``
    broadcastable to (N, M, *out) or None, added before the activation; ``row_bytes``: bytes a block's
    column buffer takes per output row (0: the columns are views). ``activation``: applied by the
    kernels' epilogue where it can run, else by ``post`` (an in-place function of a block of ``y``
    that applies the activation in numpy, with ``activation`` None when only numpy knows it)."""
    n, group, mg, rows, inner = y.shape
    m = group * mg
    p = rows * inner
    bias_g = None if bias is None else bias.reshape(group, mg, 1, 1)
    zb = None if z is None else np.broadcast_to(z, (n, m) + tuple(out)).reshape(n, group, mg, rows, inner)
    loop_threads = loop_pool_threads(threads)
    macs = n * m * w_groups.shape[2] * p
    # blocks of output rows: several per thread (a busy worker's share goes to the others), each
    # block's column buffer small enough to stay in cache while its GEMM reads it, and wide enough
    # (MIN_COLS) for BLAS to run at speed
    split = loop_threads > 1 and macs >= GEMM_SPLIT_MACS
    blocks = 4 * loop_threads if split else 1
    if row_bytes:
        blocks = max(blocks, -(-rows * row_bytes // COLS_BYTES))
    blocks = min(blocks, max(1, p // MIN_COLS))
    if split and blocks < 2 * loop_threads and mg >= 32:
        # few output positions (late layers): one column buffer, the GEMM split over output channels
        cols = columns(0, rows)
        y4 = y.reshape(n, group, mg, p)
        mparts = split_ranges(mg, 2 * loop_threads, 16)

        def mtask(i: int) -> None:
            m0, m1 = mparts[i]
            blas.matmul(w_groups[:, m0:m1], cols, out=y4[:, :, m0:m1])
            if bias_g is not None:
                y4[:, :, m0:m1] += bias_g[:, m0:m1, 0]
            if zb is not None:
                y[:, :, m0:m1] += zb[:, :, m0:m1]
            post(y4[:, :, m0:m1])

        parallel_for(mtask, len(mparts), loop_threads)
        return
    parts = split_ranges(rows, blocks)
    kernel_threads = threads if len(parts) == 1 else 1
    y3 = y.reshape(n * m, rows, inner)
    z3 = None
    if z is not None and z.shape == (n, m) + tuple(out) and z.dtype == y.dtype:
        z3 = np.ascontiguousarray(z).reshape(n * m, rows, inner)
    fused = activation is not None and (z is None or z3 is not None)

    def task(i: int) -> None:
        r0, r1 = parts[i]
        dst = y[:, :, :, r0:r1].reshape(n, group, mg, (r1 - r0) * inner)  # whole rows: a view of y
        if not np.may_share_memory(dst, y):  # (np.reshape's copy=False says so from numpy 2.1 only)
            raise Fail(f"Conv: an output block of rows {r0}:{r1} is not a view of the output {y.shape}")
        blas.matmul(w_groups, columns(r0, r1), out=dst)
        if fused:
            if r1 - r0 == rows:  # whole planes: one long run each (faster on small maps)
                flat = y3.reshape(n * m, 1, p)
                fz = None if z3 is None else z3.reshape(n * m, 1, p)
                kernels.conv_epilogue(flat, bias, fz, activation, threads=kernel_threads)
            else:
                kernels.conv_epilogue(y3, bias, z3, activation, rows=(r0, r1), threads=kernel_threads)
            return
        if bias_g is not None:
            y[:, :, :, r0:r1] += bias_g
        if zb is not None:
            y[:, :, :, r0:r1] += zb[:, :, :, r0:r1]
        post(y[:, :, :, r0:r1])

    parallel_for(task, len(parts), loop_threads)


def planes_conv(
    x: np.ndarray,
    w_taps: np.ndarray,
    bias: np.ndarray | None,
    z: np.ndarray | None,
    *,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads_begin: tuple[int, ...],
    pads_end: tuple[int, ...],
    out_shape: tuple[int, ...],
    direct: bool,
    channels_last: bool,
    activation: Activation | None,
    post: Post,
    threads: int = 0,
) -> np.ndarray:
    """A one-group convolution of ``x`` (N, C, *spatial) on its phase planes (kernels.conv.phase_planes),
    blocked over output rows: (N, M, *out_shape), or an NCHW view of a channels-last array.

    ``direct``: each kernel offset is its own GEMM reading its window of the planes in place (BLAS's
    beta adds it into the output), ``w_taps`` (kernel offsets, M, C); else the column matrix (offsets x
    channels, positions) is filled by one long copy per offset and multiplied once, ``w_taps`` (M,
    offsets x channels). ``channels_last``: leave the output channels-last where the kernels can (the
    column matrix's GEMM, no ``z``, the activation known to the kernels). ``bias`` (M,), ``z``
    (broadcastable to the output), ``activation`` and ``post`` as for :func:`columns_conv`."""
    n, c = x.shape[:2]
    m = w_taps.shape[-2] if direct else w_taps.shape[0]
    nd = len(kernel)
    kp = math.prod(kernel)
    out = tuple(out_shape)
    q, total, length, taps, width, phases = kernels.phase_geometry(
        tuple(x.shape[2:]), tuple(kernel), strides, dilations, pads_begin, pads_end, out
    )
    planes = kernels.phase_planes(x, pads_begin, strides, q, total, width, phases)
    wt = w_taps
    y = np.empty((n, m) + out, dtype=x.dtype)
    row = length // out[0]  # positions per output row on the phase plane
    crop = (slice(None), slice(None), slice(None)) + tuple(slice(0, o) for o in out[1:])
    bias_nd = None if bias is None else bias.reshape((m,) + (1,) * nd)
    zz = None if z is None else np.broadcast_to(z, y.shape)
    loop_threads = loop_pool_threads(threads)
    blocks = 1 if direct else max(1, -(-n * kp * c * length * x.dtype.itemsize // PLANES_BYTES))
    if loop_threads > 1:
        blocks = max(blocks, 2 * loop_threads)
    parts = split_ranges(out[0], min(blocks, out[0]))
    kernel_threads = threads if len(parts) == 1 else 1
    finished_by_kernels = activation is not None
    cl = (
        channels_last
        and not direct
        and nd == 2
        and z is None
        and finished_by_kernels
        and kernels.has_compiled(x.dtype)
    )
    # a kernel epilogue (2-D, the activation known to it): bias, z and activation in one pass
    z3 = None
    if nd == 2 and z is not None and z.shape == y.shape:
        z3 = np.ascontiguousarray(z).reshape(n * m, out[0], out[1])
    fused = (
        nd == 2
        and not cl
        and finished_by_kernels
        and (z is None or z3 is not None)
        and kernels.has_compiled(x.dtype)
    )
    # numpy finishes the output: the bias rides in the GEMM (a row of ones under a column of biases),
    # and a ReLU goes with the copy out of the wider rows, one pass instead of three
    fold = not direct and not cl and not fused and bias_nd is not None and wt.size <= FOLD_MAX
    if fold:
        wt = np.concatenate([wt, bias.reshape(m, 1).astype(wt.dtype, copy=False)], axis=1)
        bias_nd = None
    relu = z is None and activation == kernels.Activation(kernels.ActivationKind.RELU)
    if cl:
        ycl = np.empty((n,) + out + (m,), dtype=x.dtype)
        tiled = None if bias is None else np.tile(np.ascontiguousarray(bias, dtype=x.dtype), out[1])

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
            for img in range(n):
                full_t = blas.matmul(cols[img].T, wt.T)  # (positions, M)
                dst = ycl[img, r0:r1].reshape(r1 - r0, out[1] * m)
                src = full_t.reshape(r1 - r0, row * m)
                kernels.channels_last_crop_epilogue(src, dst, tiled, activation, threads=kernel_threads)
            return
        if direct:
            full = np.empty((n, m, span), dtype=x.dtype)
            starts = [off + r0 * row for _, off in taps]
            for img in range(n):
                blas.gemm_taps(wt, [planes[phase][img] for phase, _ in taps], starts, full[img])
        else:
            full = blas.matmul(wt, cols)
        if fused:
            src = full.reshape(n * m, r1 - r0, row)
            y3 = y.reshape(n * m, out[0], out[1])
            kernels.conv_epilogue(y3, bias, z3, activation, source=src, rows=(r0, r1), threads=kernel_threads)
            return
        src = full.reshape((n, m, r1 - r0) + q[1:])[crop]
        dst = y[:, :, r0:r1]
        if bias_nd is not None:
            np.add(src, bias_nd, out=dst)
        elif relu:
            np.maximum(src, 0, out=dst)
            return
        else:
            np.copyto(dst, src)
        if zz is not None:
            dst += zz[:, :, r0:r1]
        post(dst)

    parallel_for(task, len(parts), loop_threads)
    return ycl.transpose(0, 3, 1, 2) if cl else y
