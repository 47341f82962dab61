"""Integer matmul and convolution shared by the quantized operators (MatMulInteger, ConvInteger,
QLinearMatMul, QLinearConv and the com.microsoft quantized ops): argument checks, batch broadcasting,
im2col, and the weights' packed forms derived once per session (onyx.ops._derived).

Every product is exact (onyx.kernels.int8); the operators then requantize or rescale the int32 sums.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import int8 as k8
from onyx.ops._derived import derived
from onyx.ops.nn._common import im2col, pad_spatial
from onyx.ops.nn.conv._geometry import geometry, key

EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))


def check_eight_bit(x: np.ndarray, what: str, op: str) -> None:
    if x.dtype not in EIGHT_BIT:
        raise InvalidArgument(f"{op}: {what} must be uint8 or int8, got {x.dtype}")


def zero_point(z, x: np.ndarray, what: str, op: str, size: int | None = None):
    """A zero point checked against its tensor ``x``: same element type, one value (or ``size`` values
    when per row / column / channel is allowed). Returns None (absent), an int, or an int32 vector."""
    if z is None:
        return None
    z = np.asarray(z)
    if z.dtype != x.dtype:
        raise InvalidArgument(f"{op}: {what} is {z.dtype} but its input is {x.dtype}")
    if z.size == 1:
        return int(z.reshape(-1)[0])
    if size is None or z.ndim != 1 or z.shape[0] != size:
        allowed = "one value" if size is None else f"one value or {size} values"
        raise InvalidArgument(f"{op}: {what} of shape {z.shape}, expected {allowed}")
    if (z == z[0]).all():  # per channel, all equal (symmetric weights: all 0): one value
        return int(z[0])
    return z.astype(np.int32)


def scale_of(s, what: str, op: str, size: int | None = None) -> np.ndarray:
    """A float scale (one value, or ``size`` when per channel is allowed) as float32 (-1,)."""
    s = np.asarray(s)
    if s.dtype.kind != "f":
        raise InvalidArgument(f"{op}: {what} must be a float tensor, got {s.dtype}")
    if s.size != 1 and (size is None or s.ndim != 1 or s.shape[0] != size):
        allowed = "one value" if size is None else f"one value or {size} values"
        raise InvalidArgument(f"{op}: {what} of shape {s.shape}, expected {allowed}")
    return s.astype(np.float32).reshape(-1)


def _packed_b(b: np.ndarray, a_dtype: np.dtype, threads: int):
    """(packed, column sums) of a constant or per-call B operand."""
    shift = k8.b_shift(a_dtype, b.dtype)
    packed = derived(b, ("int8_pack", shift), lambda: k8.pack(b, shift != 0, threads))
    colsum = derived(b, "int8_colsum", lambda: b.sum(axis=0, dtype=np.int32))
    return packed, colsum


def matmul_2d(a, b, za, zb, threads: int = 0) -> np.ndarray:
    """(M, N) int32 of a (M, K) and b (K, N) with zero points (int, None or per row / column)."""
    if not k8.available():
        return k8.matmul_s32_numpy(a, b, za, zb)
    if b.flags.writeable or b.size < 4096:
        return k8.matmul_s32(a, b, za, zb, threads=threads)
    packed, colsum = _packed_b(b, a.dtype, threads)
    return k8.matmul_s32(a, None, za, zb, packed=packed, b_colsum=colsum, n=b.shape[1], b_dtype=b.dtype,
                         threads=threads)  # fmt: skip


def matmul(a: np.ndarray, b: np.ndarray, za, zb, op: str, threads: int = 0) -> np.ndarray:
    """numpy.matmul's broadcasting over integer operands: int32 result. ``za``: None, int or one per
    row of a (M,); ``zb``: None, int or one per column of b (N,)."""
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"{op}: inputs must have rank >= 1, got {a.shape} and {b.shape}")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise InvalidArgument(f"{op}: shapes {a.shape} and {b.shape} cannot be multiplied")
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise InvalidArgument(f"{op}: batch dims of {a.shape} and {b.shape} do not broadcast") from None
    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    if b2.ndim == 2 and (za is None or isinstance(za, int)):
        # one weight matrix: all rows of a in one product
        y = matmul_2d(np.ascontiguousarray(a2).reshape(-1, k), b2, za, zb, threads)
        y = y.reshape(a2.shape[:-1] + (n,))
    else:
        ab = np.broadcast_to(a2, batch + (m, k)).reshape(-1, m, k)
        bb = np.broadcast_to(b2, batch + (k, n)).reshape(-1, k, n)
        y = np.empty((ab.shape[0], m, n), np.int32)
        for i in range(ab.shape[0]):
            y[i] = matmul_2d(np.ascontiguousarray(ab[i]), bb[i], za, zb, threads)
        y = y.reshape(batch + (m, n))
    if a.ndim == 1:
        y = y[..., 0, :]
    if b.ndim == 1:
        y = y[..., 0]
    return y


def conv(x, w, xzp, wzp, conv_attrs: dict, op: str, threads: int = 0, bias=None) -> np.ndarray:
    """Integer convolution (N, M, *out) int32 of x (N, C, *spatial) and w (M, C/group, *kernel), with
    x's zero point (int or None; padding takes its value) and w's (int, None, or one per output
    channel); ``bias`` int32 (M,) added. The result may be a strided view (last axis contiguous).

    2-D kernels with w's zero point 0 (symmetric weights: what quantizers write) run as
    :class:`FrozenConv` (column matrix packed straight from the padded input); the rest (per-channel
    zero points, other ranks, no compiled module) through numpy's im2col and :func:`matmul_2d`'s GEMM."""
    if x.ndim < 3 or w.ndim != x.ndim:
        raise InvalidArgument(f"{op}: X {x.shape} and W {w.shape} must have the same rank >= 3")
    frozen = FrozenConv.make(w, xzp, wzp, bias, conv_attrs, x.dtype, threads)
    if frozen is not None:
        return frozen(x)
    group = int(conv_attrs["group"])
    geo = geometry(
        x.shape, w.shape, group, key(conv_attrs["kernel_shape"]), key(conv_attrs["pads"]),
        key(conv_attrs["strides"]), key(conv_attrs["dilations"]), conv_attrs["auto_pad"],
    )  # fmt: skip
    n = x.shape[0]
    m, cg = w.shape[:2]
    mg = m // group
    kernel = tuple(w.shape[2:])
    p = geo.positions
    kk = cg * geo.kernel_positions
    xz = 0 if xzp is None else xzp
    simple = geo.kernel_positions == 1 and not any(geo.pb + geo.pe) and all(s == 1 for s in geo.strides)
    y = np.empty((n, m, p), np.int32)
    if not simple:
        xp = pad_spatial(x, geo.pb, geo.pe, value=xz)
        cols_all = im2col(xp, kernel, geo.strides, geo.dilations, geo.out)  # (N, C, *kernel, *out)
    for g in range(group):
        wg = np.ascontiguousarray(w[g * mg : (g + 1) * mg].reshape(mg, kk))
        wzg = wzp[g * mg : (g + 1) * mg] if isinstance(wzp, np.ndarray) else wzp
        bg = None if bias is None else bias[g * mg : (g + 1) * mg]
        for i in range(n):
            if simple:
                cols = x[i, g * cg : (g + 1) * cg].reshape(cg, p)
            else:
                cols = np.ascontiguousarray(cols_all[i, g * cg : (g + 1) * cg]).reshape(kk, p)
            k8.matmul_s32(wg, cols, wzg, xzp, row_add=bg, threads=threads, out=y[i, g * mg : (g + 1) * mg])
    return y.reshape((n, m) + tuple(geo.out))


@lru_cache(maxsize=256)
def _row_offsets_cached(cg, kernel, dilations, hp, wp) -> np.ndarray:
    kh, kw = kernel
    dh, dw = dilations
    plane = np.arange(cg, dtype=np.int64) * (hp * wp)
    taps = np.add.outer(np.arange(kh, dtype=np.int64) * (dh * wp), np.arange(kw, dtype=np.int64) * dw)
    out = np.add.outer(plane, taps.reshape(-1)).reshape(-1)
    out.flags.writeable = False
    return out


def _row_offsets(cg, kernel, dilations, hp, wp) -> np.ndarray:
    """Where row (c, i, j) of a stride-1 column matrix starts in the flattened padded input."""
    return _row_offsets_cached(int(cg), tuple(kernel), tuple(dilations), int(hp), int(wp))


class _Phases(NamedTuple):
    """A strided convolution's input as the stride phases its kernel reads (space to depth): phase
    (a, b) holds padded rows a, a + sh, ... and columns b, b + sw, ..., so that every kernel tap reads a
    contiguous run of a phase, as in a stride-1 convolution. ``offsets``: where row (c, i, j) of the
    column matrix starts in the flattened (C, phases, hph, wph) buffer."""

    used: tuple  # (a, b) of each phase the kernel reads
    hph: int
    wph: int
    offsets: np.ndarray


@lru_cache(maxsize=256)
def _phases(cg, kernel, dilations, strides, hp, wp) -> _Phases:
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilations, strides
    hph, wph = -(-hp // sh), -(-wp // sw)
    ti, tj = np.arange(kh, dtype=np.int64) * dh, np.arange(kw, dtype=np.int64) * dw
    used = tuple(sorted({(int(i % sh), int(j % sw)) for i in ti for j in tj}))
    index = {ab: n for n, ab in enumerate(used)}
    plane = hph * wph
    tap = np.array(
        [[index[(int(i % sh), int(j % sw))] * plane + (i // sh) * wph + j // sw for j in tj] for i in ti]
    )
    chan = np.arange(cg, dtype=np.int64) * (len(used) * plane)
    offsets = np.add.outer(chan, tap.reshape(-1)).reshape(-1)
    offsets.flags.writeable = False
    return _Phases(used, hph, wph, offsets)


def _split_phases(x: np.ndarray, ph: _Phases, pb, strides, value: int) -> np.ndarray:
    """``x`` (N, C, H, W) padded (``pb`` before; ``value``) and split into ``ph``'s phases: contiguous
    (N, C, len(used), hph, wph)."""
    n, c, h, w = x.shape
    (sh, sw), (ph0, pw0) = strides, pb
    out = np.empty((n, c, len(ph.used), ph.hph, ph.wph), x.dtype)
    for k, (a, b) in enumerate(ph.used):
        # phase rows r hold padded row r * sh + a, i.e. input row r * sh + a - ph0
        r0, c0 = max(0, -(-(ph0 - a) // sh)), max(0, -(-(pw0 - b) // sw))
        r1, c1 = min(ph.hph, -(-(h + ph0 - a) // sh)), min(ph.wph, -(-(w + pw0 - b) // sw))
        dst = out[:, :, k]
        if r0 >= r1 or c0 >= c1:
            dst.fill(value)
            continue
        if r0 or c0 or r1 < ph.hph or c1 < ph.wph:
            dst.fill(value)  # the padding (cheap next to the copy; only the border needs it)
        dst[:, :, r0:r1, c0:c1] = x[:, :, r0 * sh + a - ph0 :: sh, c0 * sw + b - pw0 :: sw][
            :, :, : r1 - r0, : c1 - c0
        ]
    return out


def threads_of(ctx) -> int:
    """The thread count a session asks its kernels for (0: the default)."""
    return int(getattr(ctx, "intra_op_num_threads", 0) or 0) if ctx is not None else 0


def out_zero_point(y_zero_point, default: np.dtype, op: str) -> tuple[np.dtype, int]:
    """The output's element type (y_zero_point's, else ``default``) and zero point (one value)."""
    if y_zero_point is None:
        return np.dtype(default), 0
    z = np.asarray(y_zero_point)
    if z.dtype not in EIGHT_BIT:
        raise InvalidArgument(f"{op}: y_zero_point must be uint8 or int8, got {z.dtype}")
    if z.size != 1:
        raise InvalidArgument(f"{op}: y_zero_point must hold one value, got shape {z.shape}")
    return z.dtype, int(z.reshape(-1)[0])


def requantize_last(acc: np.ndarray, mult: np.ndarray, zp: int, dtype, threads: int = 0) -> np.ndarray:
    """An int32 product (..., N) requantized with a multiplier of one value or one per column."""
    n = acc.shape[-1] if acc.ndim else 1
    flat = np.ascontiguousarray(acc).reshape(-1, n)
    return k8.requantize(flat, mult, 1, zp, dtype, threads).reshape(acc.shape)


def _rows_pay(positions: int, n_cols: int, channels: int) -> bool:
    """Whether positions as the GEMM's rows (8 a tile, channels on 32-column panels) waste clearly less of
    the tiles than positions on the panels (n_cols columns on the padded width, 32 a panel)."""
    on_panels = positions / (-(-n_cols // 32) * 32)
    on_rows = positions / (-(-positions // 8) * 8) * channels / (-(-channels // 32) * 32)
    return on_rows > on_panels + 0.05


class FrozenConv:
    """A 2-D integer convolution whose weights (zero point 0), x zero point and bias are constants:
    the weights in each layout a path needs and the per-channel int32 offsets (bias - x_zero_point' * row
    sums of W) worked out once, the geometry and the path once per input shape. Channels in fours and a
    kernel past 1x1: the input interleaved once per call and read in place (:func:`k8.gemm_shifted`, or
    :func:`k8.conv_rows` with the positions as rows on small images); otherwise (1x1, other channel
    counts) a column matrix packed from the padded input or its stride phases. Returns None from
    :meth:`make` where the general path is needed."""

    def __init__(self, w, xz: int, bias, conv_attrs: dict, x_dtype, threads: int):
        self.w, self.attrs, self.threads = w, conv_attrs, threads
        self.xz = xz
        self.x_dtype = np.dtype(x_dtype)
        m, cg = w.shape[:2]
        self.group = int(conv_attrs["group"])
        mg = m // self.group
        shift = k8.b_shift(w.dtype, self.x_dtype)  # x (the packed operand) shifted to W's other sign
        self.flip = shift != 0
        self.parts = []
        for g in range(self.group):
            wg = np.ascontiguousarray(w[g * mg : (g + 1) * mg].reshape(mg, -1))
            off = -(xz + shift) * wg.sum(axis=1, dtype=np.int64)  # sum (w)(x' - zx') = w.x' - zx' rowsum(w)
            if bias is not None:
                off = off + bias[g * mg : (g + 1) * mg]
            self.parts.append((k8.pad_k(wg), np.ascontiguousarray(off.astype(np.int32)), g * mg, mg))
        self.a_unsigned = w.dtype == np.uint8
        # channels in groups of four: the input interleaved once and read in place, one shift per kernel tap
        # (gemm_shifted), instead of a column matrix kernel-size times the input
        # (a 1x1 kernel reads its input once: packed panels, read in order, run faster)
        taps = int(np.prod(w.shape[2:]))
        self.shifted = cg % 4 == 0 and taps > 1
        if self.shifted:
            self.parts_shifted = [
                # (M, C/4, 4, taps) -> (M, C/4, taps, 4): k-quad (channel group, tap), four channels each
                np.ascontiguousarray(
                    w[m0 : m0 + n_].reshape(n_, cg // 4, 4, taps).transpose(0, 1, 3, 2).reshape(n_, -1)
                ).view(np.uint8)
                for _, _, m0, n_ in self.parts
            ]
        # small images: output positions as the GEMM's rows, the weights packed as its panels (conv_rows);
        # activations must be the unsigned operand there (int8 ones are flipped), weights the signed one.
        # (1x1 kernels stay on packed panels: faster than either at every size measured, bench/README.md)
        self.rows_panels = None
        if self.shifted and w.dtype == np.int8:
            self.rows_panels = [
                k8.pack(np.ascontiguousarray(ws.view(np.int8).T), False) for ws in self.parts_shifted
            ]
        self._plans: dict = {}

    @classmethod
    def make(cls, w, xz, wz, bias, conv_attrs, x_dtype, threads):
        if (
            w.ndim != 4
            or not k8.available()
            or isinstance(wz, np.ndarray)
            or wz
            or isinstance(xz, np.ndarray)
        ):
            return None
        return cls(w, int(xz or 0), bias, conv_attrs, x_dtype, threads)

    def _plan(self, shape):
        plan = self._plans.get(shape)
        if plan is None:
            a = self.attrs
            geo = geometry(
                shape, self.w.shape, self.group, key(a["kernel_shape"]), key(a["pads"]), key(a["strides"]),
                key(a["dilations"]), a["auto_pad"],
            )  # fmt: skip
            hp = shape[2] + geo.pb[0] + geo.pe[0]
            wp = shape[3] + geo.pb[1] + geo.pe[1]
            oh, ow = geo.out
            cg = self.w.shape[1]
            sh, sw = geo.strides
            if sh == sw == 1:
                offsets = _row_offsets(cg, self.w.shape[2:], geo.dilations, hp, wp)
                phases = None
            else:
                # strided: packed from the input's stride phases (contiguous runs, the fast packing)
                phases = _phases(int(cg), tuple(self.w.shape[2:]), tuple(geo.dilations), (sh, sw), hp, wp)
                offsets, wp = phases.offsets, phases.wph
            n_cols = (oh - 1) * wp + ow  # columns: output rows wp apart
            shifted = None
            if self.shifted:
                rows = self.rows_panels is not None and _rows_pay(oh * ow, n_cols, self.parts[0][3])
                taps = int(np.prod(self.w.shape[2:]))
                used, hph = ((0, 0),), hp
                if phases is not None:
                    used, hph = phases.used, phases.hph
                length = len(used) * hph * wp + k8.NR  # the last panel reads up to NR - 1 columns further
                groups = np.arange(cg // 4, dtype=np.int64)[:, None] * length
                quads = (np.asarray(offsets[:taps], np.int64)[None, :] + groups).reshape(-1) * 4
                shifted = (quads, np.array(used, np.int64).reshape(-1, 2), (hph, wp), length, rows)
            plan = (geo, wp, offsets, n_cols, phases, shifted)
            if len(self._plans) > 16:
                self._plans.clear()
            self._plans[shape] = plan
        return plan

    def __call__(self, x: np.ndarray, requant: tuple | None = None) -> np.ndarray:
        """int32 (N, M, oh, ow), possibly a strided view (last axis contiguous); with ``requant``
        ((multiplier per output channel or one, zero point, 8-bit type)), the requantized output, the
        sums requantized as the GEMM stores them."""
        geo, wp, offsets, n_cols, phases, shifted = self._plan(x.shape)
        oh, ow = geo.out
        n, cg = x.shape[0], self.w.shape[1]
        m = self.w.shape[0]
        if shifted is not None:
            return self._run_shifted(x, geo, wp, n_cols, shifted, requant)
        if phases is None:
            xp = np.ascontiguousarray(pad_spatial(x, geo.pb, geo.pe, value=self.xz))
        else:
            xp = _split_phases(x, phases, geo.pb, geo.strides, self.xz)
        y = np.empty((n, m, oh * wp), np.int32 if requant is None else requant[2])
        for i in range(n):
            for g, (ap, off, m0, mg) in enumerate(self.parts):
                src = xp[i, g * cg : (g + 1) * cg].reshape(-1)
                packed = k8.pack_rows(src, offsets, n_cols, self.flip, threads=self.threads)
                dst = y[i, m0 : m0 + mg, :n_cols]
                if requant is None:
                    k8.gemm_packed(ap, self.a_unsigned, packed, dst, off, None, self.threads)
                    continue
                mult, yz, _ = requant
                sc = mult if mult.size == 1 else mult[m0 : m0 + mg]
                k8.gemm_packed(
                    ap, self.a_unsigned, packed, dst, off, None, self.threads, scale=sc, axis=0, zero_point=yz
                )
        out = y.reshape(n, m, oh, wp)[:, :, :, :ow]
        return out if requant is None else np.ascontiguousarray(out)

    def _run_shifted(self, x, geo, wp, n_cols, shifted, requant):
        """The convolution on :func:`k8.gemm_shifted`: per image and group, the input interleaved (padded,
        split into its stride phases) in one pass and read in place; a requantized result is stored
        straight into the (oh, ow) output, an int32 one computed on the padded width and sliced."""
        quads, used, phase_shape, length, rows = shifted
        (oh, ow), n, cg, m = geo.out, x.shape[0], self.w.shape[1], self.w.shape[0]
        if requant is None:
            y = np.empty((n, m, oh * wp), np.int32)
        else:
            mult, yz, dtype = requant
            y = np.empty((n, m, oh * ow), dtype)
        for i in range(n):
            for g, (_, off, m0, mg) in enumerate(self.parts):
                xg = x[i, g * cg : (g + 1) * cg]
                src = k8.interleave_conv(
                    xg, used, geo.strides, geo.pb, phase_shape, length, self.xz, self.flip, self.threads
                )
                ws = self.parts_shifted[g]
                if rows and requant is not None:
                    sc = mult if mult.size == 1 else mult[m0 : m0 + mg]
                    k8.conv_rows(
                        src,
                        quads,
                        (wp, ow),
                        self.rows_panels[g],
                        off,
                        sc,
                        yz,
                        y[i, m0 : m0 + mg],
                        self.threads,
                    )
                    continue
                if requant is None:
                    dst = y[i, m0 : m0 + mg, :n_cols]
                    k8.gemm_shifted(ws, self.a_unsigned, src, quads, dst, n_cols, off, self.threads)
                    continue
                sc = mult if mult.size == 1 else mult[m0 : m0 + mg]
                k8.gemm_shifted(
                    ws, self.a_unsigned, src, quads, y[i, m0 : m0 + mg], n_cols, off, self.threads, scale=sc,
                    axis=0, zero_point=yz, padded_width=(wp, ow) if wp != ow else None,
                )  # fmt: skip
        if requant is None:
            return y.reshape(n, m, oh, wp)[:, :, :, :ow]
        return y.reshape(n, m, oh, ow)
