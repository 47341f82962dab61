"""numba-compiled loops of the nn kernels: the optional ``perf`` extra (see onyx.ops._perf).

Each function has a numpy twin in the kernel that calls it (tests/perf compares the two).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onyx.ops._jit_team import f32_array, f64_array, share


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _taps9(planes, wc, tap_phase, tap_off, acc):  # pragma: no cover - compiled
    """acc = the nine taps (3x3 kernels) of one channel, in two passes over the flat planes (four
    taps, then five): LLVM checks at run time that each source run does not overlap ``acc`` and gives
    up vectorising past eight such checks, so one nine-source loop ran scalar."""
    n = acc.shape[0]
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = wc[0], wc[1], wc[2], wc[3], wc[4], wc[5], wc[6], wc[7], wc[8]
    s0 = planes[tap_phase[0], tap_off[0] : tap_off[0] + n]
    s1 = planes[tap_phase[1], tap_off[1] : tap_off[1] + n]
    s2 = planes[tap_phase[2], tap_off[2] : tap_off[2] + n]
    s3 = planes[tap_phase[3], tap_off[3] : tap_off[3] + n]
    for t in range(n):
        acc[t] = w0 * s0[t] + w1 * s1[t] + w2 * s2[t] + w3 * s3[t]
    s4 = planes[tap_phase[4], tap_off[4] : tap_off[4] + n]
    s5 = planes[tap_phase[5], tap_off[5] : tap_off[5] + n]
    s6 = planes[tap_phase[6], tap_off[6] : tap_off[6] + n]
    s7 = planes[tap_phase[7], tap_off[7] : tap_off[7] + n]
    s8 = planes[tap_phase[8], tap_off[8] : tap_off[8] + n]
    for t in range(n):
        acc[t] += w4 * s4[t] + w5 * s5[t] + w6 * s6[t] + w7 * s7[t] + w8 * s8[t]


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _finish_row(s, d, zr, has_z, bv, act, lo, hi):  # pragma: no cover - compiled
    """d = act(s + bv (+ zr when has_z)), one output row."""
    zero = d.dtype.type(0)
    for j in range(d.shape[0]):
        v = s[j] + bv
        if has_z:
            v += zr[j]
        if act == 1:
            v = zero if v < zero else v
        elif act == 2:
            v = lo if v < lo else v
            v = hi if v > hi else v
        elif act == 3:
            v = v * lo if v < zero else v
        d[j] = v


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
    # where each input row goes, worked out once for all channels (integer divisions are slow):
    # input row i -> phase plane row_plane[i] + rw, at row_base[i] + col_start[rw] for the columns
    # j = col_first[rw], + sw, ... (col_count[rw] of them) of column phase rw
    row_plane = np.empty(h, dtype=np.int64)
    row_base = np.empty(h, dtype=np.int64)
    for i in range(h):
        hp = i + pad_t
        row_plane[i] = (hp % sh) * sw
        row_base[i] = (hp // sh) * qw
    col_first = np.empty(sw, dtype=np.int64)
    col_start = np.empty(sw, dtype=np.int64)
    col_count = np.empty(sw, dtype=np.int64)
    for rw in range(sw):
        j0 = (rw - pad_l) % sw
        col_first[rw] = j0
        col_start[rw] = (j0 + pad_l) // sw
        col_count[rw] = max(0, (wd - j0 + sw - 1) // sw)
    for n in range(n_img):
        for c in range(c0, c1):
            for i in range(h):
                for rw in range(sw):
                    start = row_base[i] + col_start[rw]
                    cnt = col_count[rw]
                    j0 = col_first[rw]
                    # slices on both sides: indices from 0 need no wraparound checks, so the copy vectorises
                    dst = planes[row_plane[i] + rw, start : start + cnt]
                    src = x[n, c, i, j0:]
                    if sw == 1:
                        for t in range(cnt):
                            dst[t] = src[t]
                    else:
                        for t in range(cnt):
                            dst[t] = src[t * sw]
            for m in range(mult):
                co = c * mult + m
                if taps == 9:
                    _taps9(planes, w[co], tap_phase, tap_off, acc)
                else:
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
                bv = b[co] if b.shape[0] > 0 else zero
                for i in range(oh):  # bias and activation on the way out, padding columns dropped
                    yrow = y[n, co, i]
                    _finish_row(acc[i * qw : i * qw + ow], yrow, yrow, False, bv, act, lo, hi)


@njit(cache=True, nogil=True, fastmath={"contract"})
def epilogue(src, s0, y, y0, nrows, b, z, act, alpha, beta, i0, i1):  # pragma: no cover - compiled
    """A convolution's output rows finished in one pass: ``y[i, y0 + r, :] = act(src[i, s0 + r, :W] +
    b[i % len(b)] + z[i, y0 + r, :])`` for r < ``nrows`` and the planes i0 <= i < i1, W = y.shape[2].
    ``src`` (planes, rows, row >= W) is the GEMM's result, its extra columns (plane padding) dropped,
    or empty: the GEMM wrote into ``y`` itself. ``b`` and ``z`` are empty for none; ``act`` as in
    :func:`depthwise2d`."""
    width = y.shape[2]
    nb = b.shape[0]
    has_z = z.shape[0] > 0
    inplace = src.shape[0] == 0
    lo = y.dtype.type(alpha)
    hi = y.dtype.type(beta)
    for i in range(i0, i1):
        bv = b[i % nb] if nb > 0 else y.dtype.type(0)
        for r in range(nrows):
            d = y[i, y0 + r]
            zr = z[i, y0 + r] if has_z else d
            if inplace:  # the same array on both sides: the loop then vectorises
                _finish_row(d, d, zr, has_z, bv, act, lo, hi)
            else:
                _finish_row(src[i, s0 + r, :width], d, zr, has_z, bv, act, lo, hi)


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _activate(d, act, lo, hi, zero):  # pragma: no cover - compiled
    """The activation of code ``act`` (see :func:`depthwise2d`) in place over the 1-D ``d``, one
    vectorised loop per activation, as _finish_row applies them."""
    if act == 1:
        for k in range(d.shape[0]):
            d[k] = zero if d[k] < zero else d[k]
    elif act == 2:
        for k in range(d.shape[0]):
            v = lo if d[k] < lo else d[k]
            d[k] = hi if v > hi else v
    elif act == 3:
        for k in range(d.shape[0]):
            d[k] = d[k] * lo if d[k] < zero else d[k]


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _pixel_cl(x, w, b, y, n, oy, ox, sh, sw, pad_t, pad_l):  # pragma: no cover - compiled
    """One output position of :func:`depthwise_cl` with bounds checks (edges, any kernel size)."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    d = y[n, oy, ox]
    for k in range(c):
        d[k] = b[k]
    for ky in range(w.shape[0]):
        iy = oy * sh - pad_t + ky
        if 0 <= iy < h:
            for kx in range(w.shape[1]):
                ix = ox * sw - pad_l + kx
                if 0 <= ix < wd:
                    s = x[n, iy, ix]
                    wv = w[ky, kx]
                    for k in range(c):
                        d[k] += wv[k] * s[k]


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _pairs_3x3(x, w, b, y, n, oy, r, ox0, ox1, pad_l):  # pragma: no cover - compiled
    """Interior output positions ``ox0 .. ox1`` of row ``oy`` (3x3, stride 1) two at a time: the two
    windows share six of their nine input columns, so a pair loads 12 input vectors instead of 18.
    Returns the first position left (at most one)."""
    ox = ox0
    while ox + 1 < ox1:
        q = ox - pad_l
        for k in range(x.shape[3]):
            w0, w1, w2 = w[0, 0, k], w[0, 1, k], w[0, 2, k]
            w3, w4, w5 = w[1, 0, k], w[1, 1, k], w[1, 2, k]
            w6, w7, w8 = w[2, 0, k], w[2, 1, k], w[2, 2, k]
            a0, a1, a2, a3 = x[n, r, q, k], x[n, r, q + 1, k], x[n, r, q + 2, k], x[n, r, q + 3, k]
            r1, r2 = r + 1, r + 2
            b0, b1, b2, b3 = x[n, r1, q, k], x[n, r1, q + 1, k], x[n, r1, q + 2, k], x[n, r1, q + 3, k]
            c0, c1, c2, c3 = x[n, r2, q, k], x[n, r2, q + 1, k], x[n, r2, q + 2, k], x[n, r2, q + 3, k]
            bias = b[k]
            y[n, oy, ox, k] = (
                bias + w0 * a0 + w1 * a1 + w2 * a2 + w3 * b0 + w4 * b1 + w5 * b2 + w6 * c0 + w7 * c1 + w8 * c2
            )
            y[n, oy, ox + 1, k] = (
                bias + w0 * a1 + w1 * a2 + w2 * a3 + w3 * b1 + w4 * b2 + w5 * b3 + w6 * c1 + w7 * c2 + w8 * c3
            )
        ox += 2
    return ox


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _quad_row(xr, wr, q, k):  # pragma: no cover - compiled
    """One kernel row's terms of four stride-1 windows at columns q.. of the channels-last row ``xr``
    (channel ``k``, weights ``wr`` (3, C)): six input values for the four."""
    w0, w1, w2 = wr[0, k], wr[1, k], wr[2, k]
    a0, a1, a2, a3, a4, a5 = xr[q, k], xr[q + 1, k], xr[q + 2, k], xr[q + 3, k], xr[q + 4, k], xr[q + 5, k]
    return (
        w0 * a0 + w1 * a1 + w2 * a2,
        w0 * a1 + w1 * a2 + w2 * a3,
        w0 * a2 + w1 * a3 + w2 * a4,
        w0 * a3 + w1 * a4 + w2 * a5,
    )


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _quads_3x3(x, w, b, y, n, oy, r, ox0, ox1, pad_l):  # pragma: no cover - compiled
    """As :func:`_pairs_3x3`, four positions at a time: 18 input vectors for four windows instead of
    36, and each window's sum in three partial sums, one per kernel row (independent FMA chains:
    MobileNetV2's 56 x 56 x 144 layer 218 -> ~175 us alone, without its edges). Returns the first
    position left (at most three)."""
    ox = ox0
    while ox + 3 < ox1:
        q = ox - pad_l
        for k in range(x.shape[3]):
            t0, t1, t2, t3 = _quad_row(x[n, r], w[0], q, k)
            u0, u1, u2, u3 = _quad_row(x[n, r + 1], w[1], q, k)
            v0, v1, v2, v3 = _quad_row(x[n, r + 2], w[2], q, k)
            bias = b[k]
            y[n, oy, ox, k] = bias + t0 + u0 + v0
            y[n, oy, ox + 1, k] = bias + t1 + u1 + v1
            y[n, oy, ox + 2, k] = bias + t2 + u2 + v2
            y[n, oy, ox + 3, k] = bias + t3 + u3 + v3
        ox += 4
    return ox


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _edge_3x3(x, w, b, y, n, oy, ox, sh, sw, pad_t, pad_l):  # pragma: no cover - compiled
    """One output position of a 3x3 window that crosses the edge of ``x``: the nine taps in one
    vectorised pass over the channels, a tap outside ``x`` reading zeros (its row and column clamped
    inside, its value selected away: no 0 * inf), in :func:`_pixel_cl`'s order of terms (per-tap
    passes there: 93 of MobileNetV2's 295 us on its 112 x 112 x 32 layer went to the edges)."""
    h, wd = x.shape[1], x.shape[2]
    zero = y.dtype.type(0)
    iy = oy * sh - pad_t
    ix = ox * sw - pad_l
    v0, v1, v2 = 0 <= iy < h, 0 <= iy + 1 < h, 0 <= iy + 2 < h
    u0, u1, u2 = 0 <= ix < wd, 0 <= ix + 1 < wd, 0 <= ix + 2 < wd
    r0, r1, r2 = min(max(iy, 0), h - 1), min(max(iy + 1, 0), h - 1), min(max(iy + 2, 0), h - 1)
    q0, q1, q2 = min(max(ix, 0), wd - 1), min(max(ix + 1, 0), wd - 1), min(max(ix + 2, 0), wd - 1)
    f00, f01, f02 = v0 and u0, v0 and u1, v0 and u2
    f10, f11, f12 = v1 and u0, v1 and u1, v1 and u2
    f20, f21, f22 = v2 and u0, v2 and u1, v2 and u2
    for k in range(x.shape[3]):
        y[n, oy, ox, k] = (
            b[k]
            + w[0, 0, k] * (x[n, r0, q0, k] if f00 else zero)
            + w[0, 1, k] * (x[n, r0, q1, k] if f01 else zero)
            + w[0, 2, k] * (x[n, r0, q2, k] if f02 else zero)
            + w[1, 0, k] * (x[n, r1, q0, k] if f10 else zero)
            + w[1, 1, k] * (x[n, r1, q1, k] if f11 else zero)
            + w[1, 2, k] * (x[n, r1, q2, k] if f12 else zero)
            + w[2, 0, k] * (x[n, r2, q0, k] if f20 else zero)
            + w[2, 1, k] * (x[n, r2, q1, k] if f21 else zero)
            + w[2, 2, k] * (x[n, r2, q2, k] if f22 else zero)
        )


@njit(cache=True, nogil=True, fastmath={"contract"})
def depthwise_cl(x, w, b, y, sh, sw, pad_t, pad_l, act, alpha, beta):  # pragma: no cover - compiled
    """Depthwise convolution on channels-last arrays: ``x`` (N, H, W, C), ``w`` (KH, KW, C), ``b`` (C,)
    (zeros for none), into ``y`` (N, OH, OW, C), with the activation of code ``act`` (as in
    :func:`depthwise2d`). Every multiply-add runs over the channels of one position, contiguous in
    memory, so small maps and strides cost no plane copies; 3x3 windows that lie inside ``x`` take
    all nine taps in one pass."""
    depthwise_cl_rows(x, w, b, y, sh, sw, pad_t, pad_l, act, alpha, beta, 0, y.shape[0] * y.shape[1])


@njit(cache=True, nogil=True, fastmath={"contract"})
def depthwise_cl_rows(x, w, b, y, sh, sw, pad_t, pad_l, act, alpha, beta, r0, r1):  # pragma: no cover
    """:func:`depthwise_cl` for the output rows r0:r1 of the flattened (N, OH) axes."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = y.shape[1], y.shape[2]
    lo = y.dtype.type(alpha)
    hi = y.dtype.type(beta)
    zero = y.dtype.type(0)
    three = w.shape[0] == 3 and w.shape[1] == 3
    # output positions whose 3x3 window lies inside x
    oy0 = -(-pad_t // sh)
    ox0 = -(-pad_l // sw)
    oy1 = max(oy0, min(oh, (h - 3 + pad_t) // sh + 1))
    ox1 = max(ox0, min(ow, (wd - 3 + pad_l) // sw + 1))
    for row in range(r0, r1):
        n = row // oh
        oy = row % oh
        if not three:
            for ox in range(ow):
                _pixel_cl(x, w, b, y, n, oy, ox, sh, sw, pad_t, pad_l)
        elif oy < oy0 or oy >= oy1:
            for ox in range(ow):
                _edge_3x3(x, w, b, y, n, oy, ox, sh, sw, pad_t, pad_l)
        else:
            for ox in range(ox0):
                _edge_3x3(x, w, b, y, n, oy, ox, sh, sw, pad_t, pad_l)
            r = oy * sh - pad_t
            start = ox0
            if sw == 1:
                start = _quads_3x3(x, w, b, y, n, oy, r, ox0, ox1, pad_l)
                start = _pairs_3x3(x, w, b, y, n, oy, r, start, ox1, pad_l)
            for ox in range(start, ox1):
                q = ox * sw - pad_l
                for k in range(c):
                    y[n, oy, ox, k] = (
                        b[k]
                        + w[0, 0, k] * x[n, r, q, k]
                        + w[0, 1, k] * x[n, r, q + 1, k]
                        + w[0, 2, k] * x[n, r, q + 2, k]
                        + w[1, 0, k] * x[n, r + 1, q, k]
                        + w[1, 1, k] * x[n, r + 1, q + 1, k]
                        + w[1, 2, k] * x[n, r + 1, q + 2, k]
                        + w[2, 0, k] * x[n, r + 2, q, k]
                        + w[2, 1, k] * x[n, r + 2, q + 1, k]
                        + w[2, 2, k] * x[n, r + 2, q + 2, k]
                    )
            for ox in range(ox1, ow):
                _edge_3x3(x, w, b, y, n, oy, ox, sh, sw, pad_t, pad_l)
        if act != 0:
            _activate(y[n, oy].reshape(ow * c), act, lo, hi, zero)


#: epilogue_cl: elements per flat run (whole rows of channels)
_FLAT_EPILOGUE_RUN = 1024


@njit(cache=True, nogil=True, fastmath={"contract"})
def epilogue_crop_cl(src, y, bt, act, alpha, beta):  # pragma: no cover - compiled
    """A channels-last convolution output finished from its GEMM result in one pass: ``y[r] =
    act(src[r, :W * C] + bt)`` for ``y`` (R, W * C) and ``src`` (R, row * C), row >= W (rows computed
    on a phase plane's width: the extra positions dropped), ``bt`` the bias tiled W times (W * C,) or
    empty; ``act`` as in :func:`depthwise2d`. One flat loop per row (per-position loops over a few
    channels ran 3x slower)."""
    lo = y.dtype.type(alpha)
    hi = y.dtype.type(beta)
    zero = y.dtype.type(0)
    width = y.shape[1]
    has_b = bt.shape[0] > 0
    for r in range(y.shape[0]):
        d = y[r]
        s = src[r]
        if has_b:
            for k in range(width):
                d[k] = s[k] + bt[k]
        else:
            for k in range(width):
                d[k] = s[k]
        _activate(d, act, lo, hi, zero)


@njit(cache=True, nogil=True, fastmath={"contract"})
def epilogue_cl(y, b, z, act, alpha, beta):  # pragma: no cover - compiled
    """Channels-last rows finished in place: ``y[r, :] = act(y[r, :] + b + z[r, :])`` for ``y`` and
    ``z`` (rows, C) (``y`` C-contiguous), ``b`` (C,); ``z`` empty for none; ``act`` as in
    :func:`depthwise2d`. One loop per activation, each a single vectorised pass (a shared loop calling
    :func:`_act` ran 3x slower)."""
    lo = y.dtype.type(alpha)
    hi = y.dtype.type(beta)
    zero = y.dtype.type(0)
    has_z = z.shape[0] > 0
    rows, c = y.shape
    if not has_z and rows > 1:
        # blocks of rows as one flat run each, the bias tiled to match: a loop per row cost more than
        # its work with few channels (MobileNetV2's 12544 x 16: 198 -> 41 us; 12544 x 96: 305 -> 244)
        per = max(1, _FLAT_EPILOGUE_RUN // c)
        bt = np.empty(per * c, dtype=y.dtype)
        for i in range(per):
            bt[i * c : (i + 1) * c] = b
        flat = y.reshape(rows * c)
        for r0 in range(0, rows, per):
            run = min(per, rows - r0) * c
            d = flat[r0 * c : r0 * c + run]
            for k in range(run):
                d[k] += bt[k]
            _activate(d, act, lo, hi, zero)
        return
    for r in range(rows):
        d = y[r]
        if has_z:
            zr = z[r]
            for k in range(c):
                d[k] += zr[k]
        if act == 1:
            for k in range(c):
                v = d[k] + b[k]
                d[k] = zero if v < zero else v
        elif act == 2:
            for k in range(c):
                v = d[k] + b[k]
                v = lo if v < lo else v
                d[k] = hi if v > hi else v
        elif act == 3:
            for k in range(c):
                v = d[k] + b[k]
                d[k] = v * lo if v < zero else v
        else:
            for k in range(c):
                d[k] += b[k]


@njit(cache=True, nogil=True, inline="always")
def _nanmax(a, b):  # pragma: no cover - compiled
    """max(a, b) propagating NaN from either side, as np.maximum does."""
    return a if (a > b or a != a) else b


@njit(cache=True, nogil=True)
def max_pool2d(x, y, kh, kw, sh, sw, dh, dw, pad_t, pad_l):  # pragma: no cover - compiled
    """2-D max pooling of ``x`` (N, C, H, W) into ``y`` (N, C, OH, OW); window positions outside the
    input (padding, ceil mode) are ignored, NaNs propagate. Per output row: the valid kernel rows'
    elementwise max over whole input rows (contiguous), then the window max along the row from a
    -inf-bordered copy (no bounds checks in the inner loop)."""
    n_img, chans, h, wd = x.shape
    oh = y.shape[2]
    ow = y.shape[3]
    span = (ow - 1) * sw + (kw - 1) * dw + 1
    row = np.full(max(span, pad_l + wd), -np.inf, dtype=x.dtype)
    for n in range(n_img):
        for c in range(chans):
            plane = x[n, c]
            for i in range(oh):
                top = i * sh - pad_t
                first = True
                for k in range(kh):
                    r = top + k * dh
                    if r < 0 or r >= h:
                        continue
                    src = plane[r]
                    dst = row[pad_l : pad_l + wd]
                    if first:
                        for j in range(wd):
                            dst[j] = src[j]
                        first = False
                    else:
                        for j in range(wd):
                            dst[j] = _nanmax(dst[j], src[j])
                out = y[n, c, i]
                if first:  # no kernel row inside the input
                    for j in range(ow):
                        out[j] = -np.inf
                    continue
                _window_max_row(row, out, kw, sw, dw)


@njit(cache=True, nogil=True, inline="always")
def _window_max_row(row, out, kw, sw, dw):  # pragma: no cover - compiled
    """out[j] = max(row[j*sw + k*dw] for k < kw); the common 3/2-wide, stride-2 windows with literal
    strides, so that their strided loads vectorise."""
    if sw == 2 and dw == 1 and kw == 3:
        for j in range(out.shape[0]):
            out[j] = _nanmax(_nanmax(row[2 * j], row[2 * j + 1]), row[2 * j + 2])
    elif sw == 2 and dw == 1 and kw == 2:
        for j in range(out.shape[0]):
            out[j] = _nanmax(row[2 * j], row[2 * j + 1])
    else:
        for j in range(out.shape[0]):
            base = j * sw
            v = row[base]
            for k in range(1, kw):
                v = _nanmax(v, row[base + k * dw])
            out[j] = v


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _sum_and_squares(row, mean):  # pragma: no cover - compiled
    """(sum of row, sum of (row - mean)^2) in float64, in vectorised partial sums (reassociation is
    allowed here only: these two reductions)."""
    total = 0.0
    sq = 0.0
    for j in range(row.shape[0]):
        v = np.float64(row[j])
        total += v
        d = v - mean
        sq += d * d
    return total, sq


@njit(cache=True, nogil=True, fastmath={"contract"})
def norm_rows(x, skip, bias, gamma, beta, eps, simplified, y, s_out, mean_out, inv_out):  # pragma: no cover
    """Layer normalisation of the rows of ``x`` (R, N), in two passes over each row: s = x (+ ``skip``
    (R, N)) (+ ``bias`` (N)); mean and variance of s (sums in float64; mean 0 when ``simplified``, the
    RMS form); y = (s - mean) * inv * ``gamma`` (+ ``beta``), inv = 1 / sqrt(var + eps). ``s_out``
    (R, N) receives s; ``mean_out`` and ``inv_out`` (R) the statistics. Optional arrays are empty."""
    rows, n = x.shape
    has_skip = skip.shape[0] > 0
    has_bias = bias.shape[0] > 0
    has_beta = beta.shape[0] > 0
    keep_s = s_out.shape[0] > 0
    scratch = np.empty(n, dtype=x.dtype)
    for r in range(rows):
        xr = x[r]
        row = s_out[r] if keep_s else scratch  # s written where it is kept (a copy after ran 2x slower)
        for j in range(n):
            v = xr[j]
            if has_skip:
                v += skip[r, j]
            if has_bias:
                v += bias[j]
            row[j] = v
        mean = 0.0
        if not simplified:
            mean = _sum_and_squares(row, 0.0)[0] / n
        var = _sum_and_squares(row, mean)[1] / n
        inv = 1.0 / np.sqrt(var + eps)
        m = x.dtype.type(mean)
        k = x.dtype.type(inv)
        yr = y[r]
        if has_beta:
            for j in range(n):
                yr[j] = (row[j] - m) * k * gamma[j] + beta[j]
        else:
            for j in range(n):
                yr[j] = (row[j] - m) * k * gamma[j]
        mean_out[r] = mean
        inv_out[r] = inv


def _depthwise_cl_task(gtid, tid, p):  # pragma: no cover - compiled
    """depthwise_cl on float32 arrays as a team task, over output rows: parameters [threads, N, H, W,
    C, x, KH, KW, w, b, y, OH, OW, sh, sw, pad_t, pad_l, act, (alpha, beta) (address of two
    float64)]."""
    n_img, h, wd, c = p[1], p[2], p[3], p[4]
    oh, ow = p[11], p[12]
    r0, r1 = share(n_img * oh, tid[0], p[0])
    ab = f64_array(p[18], (2,))
    x = f32_array(p[5], (n_img, h, wd, c))
    w = f32_array(p[8], (p[6], p[7], c))
    y = f32_array(p[10], (n_img, oh, ow, c))
    depthwise_cl_rows(x, w, f32_array(p[9], (c,)), y, p[13], p[14], p[15], p[16], p[17], ab[0], ab[1], r0, r1)


def _epilogue_cl_task(gtid, tid, p):  # pragma: no cover - compiled
    """epilogue_cl on float32 rows without ``z`` as a team task: parameters [threads, rows, C, y, b,
    act, (alpha, beta) (address of two float64)]."""
    rows, c = p[1], p[2]
    r0, r1 = share(rows, tid[0], p[0])
    ab = f64_array(p[6], (2,))
    y = f32_array(p[3] + r0 * c * 4, (r1 - r0, c))
    epilogue_cl(y, f32_array(p[4], (c,)), f32_array(p[4], (0, c)), p[5], ab[0], ab[1])


def _epilogue_crop_cl_task(gtid, tid, p):  # pragma: no cover - compiled
    """epilogue_crop_cl on float32 rows as a team task: parameters [threads, rows, W * C, y, source
    row length, source, tiled bias, its length, act, (alpha, beta) (address of two float64)]."""
    rows, width, row = p[1], p[2], p[4]
    r0, r1 = share(rows, tid[0], p[0])
    ab = f64_array(p[9], (2,))
    y = f32_array(p[3] + r0 * width * 4, (r1 - r0, width))
    src = f32_array(p[5] + r0 * row * 4, (r1 - r0, row))
    epilogue_crop_cl(src, y, f32_array(p[6], (p[7],)), p[8], ab[0], ab[1])


def _norm_rows_task(gtid, tid, p):  # pragma: no cover - compiled
    """norm_rows on float32 rows as a team task: parameters [threads, rows, N, x, skip, bias, bias
    length, gamma, beta, beta length, epsilon (address of a float64), simplified, y, s_out, mean_out,
    inv_out]; skip and s_out are (rows, N) when their address is not 0, else empty."""
    rows, n = p[1], p[2]
    r0, r1 = share(rows, tid[0], p[0])
    k = r1 - r0
    at = r0 * n * 4
    skip = f32_array(p[4] + at, (k, n)) if p[4] != 0 else f32_array(p[3], (0, 0))
    s_out = f32_array(p[13] + at, (k, n)) if p[13] != 0 else f32_array(p[3], (0, 0))
    x = f32_array(p[3] + at, (k, n))
    y = f32_array(p[12] + at, (k, n))
    bias, gamma, beta = f32_array(p[5], (p[6],)), f32_array(p[7], (n,)), f32_array(p[8], (p[9],))
    eps = f64_array(p[10], (1,))[0]
    mean, inv = f32_array(p[14] + r0 * 4, (k,)), f32_array(p[15] + r0 * 4, (k,))
    norm_rows(x, skip, bias, gamma, beta, eps, p[11] != 0, y, s_out, mean, inv)


def _max_pool2d_task(gtid, tid, p):  # pragma: no cover - compiled
    """max_pool2d on float32 planes as a team task, over the N * C planes: parameters [threads,
    planes, H, W, x, OH, OW, y, KH, KW, sh, sw, dh, dw, pad_t, pad_l]."""
    planes, h, wd, oh, ow = p[1], p[2], p[3], p[5], p[6]
    i0, i1 = share(planes, tid[0], p[0])
    x = f32_array(p[4] + i0 * h * wd * 4, (1, i1 - i0, h, wd))
    y = f32_array(p[7] + i0 * oh * ow * 4, (1, i1 - i0, oh, ow))
    max_pool2d(x, y, p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15])


def _epilogue_task(gtid, tid, p):  # pragma: no cover - compiled
    """epilogue on float32 planes as a team task, over the planes: parameters [threads, planes, rows,
    W, y, y0, nrows, src (0: none), src rows, src row, s0, b, b length, z (0: none; y's shape), act,
    (alpha, beta) (address of two float64)]."""
    planes, rows, w = p[1], p[2], p[3]
    i0, i1 = share(planes, tid[0], p[0])
    y = f32_array(p[4], (planes, rows, w))
    src = f32_array(p[7], (planes, p[8], p[9])) if p[7] != 0 else f32_array(p[4], (0, 0, 0))
    z = f32_array(p[13], (planes, rows, w)) if p[13] != 0 else f32_array(p[4], (0, 0, 0))
    ab = f64_array(p[15], (2,))
    epilogue(src, p[10], y, p[5], p[6], f32_array(p[11], (p[12],)), z, p[14], ab[0], ab[1], i0, i1)
