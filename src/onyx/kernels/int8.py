"""Exact 8-bit integer matrix products and requantization, for the quantized operators.

``matmul_s32(a, b, a_zero_point, b_zero_point)`` is sum_k (a[m, k] - za) * (b[k, n] - zb) in int32, exactly,
for a and b each uint8 or int8. The compiled path (``_int8.c``) multiplies one uint8 by one int8 operand
with AVX-512 VNNI (a plain C loop elsewhere); an operand of the wrong signedness is shifted by 128 while
it is packed (x ^ 0x80), and the zero points are applied afterwards through row and column sums:

    sum (a - za)(b - zb) = sum a*b' - zb' * rowsum(a) - za * colsum(b') + K * za * zb'

where b' = b shifted and zb' = zb shifted alike. The numpy twin runs float64 BLAS on the centred values
(exact: |sum| < 2**53) and is what runs where the module is not built.

Why not MKL's ``cblas_gemm_s8u8s32``: exact, but it ran at 5-8 GOPS on the AMD EPYC these benchmarks run
on, 2-3x slower than its own float32 GEMM on the same shapes (MKL picks its integer kernels by CPU
vendor); the VNNI loop here runs several times faster than float32 GEMM there.

Requantization (``requantize``) is onnxruntime's: the int32 accumulator times a float32 scale (per
tensor, per row or per column), rounded half to even, plus the zero point, saturated.
"""

from __future__ import annotations

import numpy as np

from onyx.kernels import _loader, _threads, mkl

__all__ = [
    "NR",
    "gemm_packed",
    "gemm_shifted",
    "conv_rows",
    "interleave_conv",
    "dynamic_quantize",
    "dynamic_quantize_numpy",
    "available",
    "matmul_s32",
    "matmul_s32_numpy",
    "pack",
    "pack_rows",
    "qlinear_add",
    "quantize",
    "qlinear_add_numpy",
    "pad_k",
    "requantize",
    "requantize_numpy",
]

#: columns per packed panel (the C kernel's)
NR = 32
#: products from which the compiled loops use more than one thread
PARALLEL_MACS = 1 << 24

_U8 = np.dtype(np.uint8)
_S8 = np.dtype(np.int8)


def _module():
    return _loader.compiled("_int8")


def available() -> bool:
    """Whether the compiled integer GEMM is built (and not switched off by ONYX_NO_PERF)."""
    return _module() is not None


def vnni() -> bool:
    """Whether the compiled GEMM runs on AVX-512 VNNI on this CPU."""
    mod = _module()
    return bool(mod is not None and mod.has_vnni())


def _resolve(threads: int) -> int:
    """Threads for a compiled loop: onyx's rule (onyx.kernels._threads), with MKL loaded first where it is
    onyx's BLAS, so that a quantized model with no float product still runs on its OpenMP threads."""
    if mkl.expected():
        mkl.library()
    return _threads.resolve(threads)


def _check8(x: np.ndarray, what: str) -> None:
    if x.dtype not in (_U8, _S8):
        raise TypeError(f"{what}: expected uint8 or int8, got {x.dtype}")


def pack(b: np.ndarray, flip: bool, threads: int = 0) -> np.ndarray:
    """``b`` (K, N) of 8-bit integers in the compiled GEMM's panel layout (each byte ^ 0x80 when
    ``flip``): uint8 (ceil(N/32), ceil(K/4), 32, 4)."""
    mod = _module()
    if mod is None or b.ndim != 2:
        raise ValueError("int8.pack needs the compiled module and a 2-D operand")
    _check8(b, "pack")
    k, n = b.shape
    out = np.empty((-(-n // NR), -(-k // 4), NR, 4), np.uint8)
    threads = _resolve(threads) if k * n >= PARALLEL_MACS // 4 else 1
    mod.pack(b.view(np.uint8), out, int(flip), threads)
    return out


def pack_rows(
    src: np.ndarray,
    offsets: np.ndarray,
    n: int,
    flip: bool,
    *,
    width: int = 0,
    pitch: int = 0,
    step: int = 1,
    threads: int = 0,
) -> np.ndarray:
    """A matrix read in place from the 1-D bytes ``src`` (8-bit integers), in :func:`pack`'s layout: row k,
    column c is ``src[offsets[k] + (c // width) * pitch + (c % width) * step]`` (``width`` 0: one run of
    n). A convolution's column matrix over its padded input: row (channel, kernel offset), columns the
    output positions."""
    mod = _module()
    if mod is None or src.ndim != 1:
        raise ValueError("int8.pack_rows needs the compiled module and a 1-D source")
    _check8(src, "pack_rows")
    k = offsets.shape[0]
    out = np.empty((-(-n // NR), -(-k // 4), NR, 4), np.uint8)
    nt = _resolve(threads) if k * n >= PARALLEL_MACS // 4 else 1
    offs = np.ascontiguousarray(offsets, np.int64)
    mod.pack_rows(
        src.view(np.uint8), offs, int(n), int(width or max(n, 1)), int(pitch), int(step), out, int(flip), nt
    )
    return out


def interleave_conv(
    x: np.ndarray,
    phases: np.ndarray,
    strides: tuple[int, int],
    pads_begin: tuple[int, int],
    phase_shape: tuple[int, int],
    length: int,
    value: int,
    flip: bool,
    threads: int = 0,
) -> np.ndarray:
    """A convolution's input ``x`` (C, H, W) of 8-bit integers as :func:`gemm_shifted` reads it, in one
    pass: padded with ``value`` (``pads_begin`` rows above and columns left, beyond the input below and
    right), split into the stride ``phases`` (P, 2) its kernel reads (phase (a, b): padded rows a, a + sh,
    ... and columns b, b + sw, ..., ``phase_shape`` (hph, wph) of them), four channels interleaved: uint8
    (ceil(C/4), ``length``, 4) (each byte ^ 0x80 when ``flip``; zeros past the phases)."""
    mod = _module()
    if mod is None or x.ndim != 3:
        raise ValueError("int8.interleave_conv needs the compiled module and a (C, H, W) input")
    _check8(x, "interleave_conv")
    c = x.shape[0]
    out = np.empty((-(-c // 4), int(length), 4), np.uint8)
    nt = _resolve(threads) if x.size >= PARALLEL_MACS // 4 else 1
    xv, ph = np.ascontiguousarray(x).view(np.uint8), np.ascontiguousarray(phases, np.int64)
    mod.interleave_conv(xv, ph, out, *strides, *pads_begin, *phase_shape, int(value) & 0xFF, int(flip), nt)
    return out


def gemm_shifted(
    a_padded: np.ndarray,
    a_unsigned: bool,
    src: np.ndarray,
    quad_offsets: np.ndarray,
    out: np.ndarray,
    n: int,
    row_add: np.ndarray | None = None,
    threads: int = 0,
    *,
    scale: np.ndarray | None = None,
    axis: int | None = None,
    zero_point: int = 0,
    padded_width: tuple[int, int] | None = None,
    vnni: bool = True,
) -> np.ndarray:
    """:func:`gemm_packed` with the B operand read in place from :func:`interleave_conv`'s bytes ``src``:
    k-quad q of column j is the 4 bytes at ``quad_offsets[q] + 4 j`` of ``src`` (int64 byte offsets). A
    convolution over its padded input, quad (channel group, kernel tap) one shift of it: no column
    matrix is built. ``out`` (M, ``n``); with ``scale`` and ``padded_width`` (wp, ow): the ``n`` columns are
    rows of wp of which the first ow are stored, ``out`` (M, rows * ow) (no copy out of a padded result)."""
    m = a_padded.shape[0]
    if not (m and n):
        return out
    nt = _resolve(threads) if m * n * a_padded.shape[1] >= PARALLEL_MACS else 1
    mod = _module()
    flat = src.reshape(-1).view(np.uint8)
    if scale is None:
        mod.gemm_shifted(a_padded, flat, quad_offsets, out, int(n), int(a_unsigned), nt, int(vnni), row_add,
                         None)  # fmt: skip
        return out
    sc = np.ascontiguousarray(scale, np.float32).reshape(-1)
    mode = 0 if sc.size == 1 else (1 if axis == 0 else 2)
    signed = int(out.dtype == _S8)
    wp, ow = padded_width or (0, 0)
    mod.gemm_shifted(a_padded, flat, quad_offsets, out.view(np.uint8), int(n), int(a_unsigned), nt, int(vnni),
                     row_add, None, sc, mode, int(zero_point), signed, int(wp), int(ow))  # fmt: skip
    return out


def conv_rows(
    src: np.ndarray,
    quad_offsets: np.ndarray,
    padded_width: tuple[int, int],
    packed_weights: np.ndarray,
    channel_add: np.ndarray,
    scale: np.ndarray,
    zero_point: int,
    out: np.ndarray,
    threads: int = 0,
    *,
    vnni: bool = True,
) -> np.ndarray:
    """A requantized convolution with the output positions as the GEMM's rows (what small images need: no
    32-column panel half empty): ``out`` (channels, positions) uint8 / int8 = saturate(rint((sum over
    quads of the unsigned activation bytes at ``quad_offsets[q] + 4 pp(p)`` of ``src`` times the signed
    weights of :func:`pack` ed ``packed_weights`` + ``channel_add``) * ``scale``) + ``zero_point``), pp(p)
    the position on the padded width (``padded_width`` = (wph, ow)). ``scale``: one value or one per
    channel. Needs the compiled module."""
    channels, positions = out.shape
    if not (channels and positions):
        return out
    mod = _module()
    kp = quad_offsets.shape[0] * 4
    nt = _resolve(threads) if channels * positions * kp >= PARALLEL_MACS else 1
    sc = np.ascontiguousarray(scale, np.float32).reshape(-1)
    wph, ow = padded_width
    flat = src.reshape(-1).view(np.uint8)
    mod.conv_rows(flat, quad_offsets, int(wph), int(ow), packed_weights, channel_add, sc, int(zero_point),
                  out.view(np.uint8), int(out.dtype == _S8), nt, int(vnni))  # fmt: skip
    return out


def pad_k(a: np.ndarray) -> np.ndarray:
    """``a`` (M, K) as C-contiguous bytes (uint8 view) of a row length rounded up to 4 (zeros after)."""
    m, k = a.shape
    k4 = -(-k // 4) * 4
    if k4 == k and a.flags.c_contiguous:
        return a.view(np.uint8)
    out = np.zeros((m, k4), np.uint8)
    out[:, :k] = a.view(np.uint8)
    return out


def b_shift(a_dtype: np.dtype, b_dtype: np.dtype) -> int:
    """What packing adds to b's values so that one operand is uint8 and the other int8: 0, +128 (int8
    to uint8) or -128 (uint8 to int8)."""
    if a_dtype != b_dtype:
        return 0
    return 128 if b_dtype == _S8 else -128


def _zp(z, size: int, what: str) -> np.ndarray | int:
    """A zero point as an int (one value) or an int32 vector of ``size``."""
    if z is None:
        return 0
    z = np.asarray(z)
    if z.size == 1:
        return int(z.reshape(-1)[0])
    if z.ndim != 1 or z.shape[0] != size:
        raise ValueError(f"{what}: zero point of shape {z.shape} where one value or {size} were expected")
    if size and (z == z.reshape(-1)[0]).all():
        return int(z.reshape(-1)[0])
    return z.astype(np.int32)


def gemm_packed(
    a_padded: np.ndarray,
    a_unsigned: bool,
    packed: np.ndarray,
    out: np.ndarray,
    row_add: np.ndarray | None = None,
    col_add: np.ndarray | None = None,
    threads: int = 0,
    *,
    scale: np.ndarray | None = None,
    axis: int | None = None,
    zero_point: int = 0,
    vnni: bool = True,
) -> np.ndarray:
    """``out`` (M, N) = ``a_padded`` (:func:`pad_k`) times a :func:`pack` ed operand (+ int32 ``row_add`` /
    ``col_add``): the bare compiled product, for callers that prepared every operand (the zero points
    folded into the offsets). ``out`` int32; or, with ``scale`` (float32: one value, one per row (``axis``
    0) or per column (``axis`` 1)), uint8 / int8 (last axis contiguous): the sums requantized as
    :func:`requantize` does, as the GEMM stores them (no int32 pass). ``vnni`` False: the plain C loop
    even on a VNNI CPU (what CPUs without it run; for tests). Needs the compiled module."""
    m, kp = a_padded.shape
    n = out.shape[1]
    if not (m and n):
        return out
    nt = _resolve(threads) if m * n * kp >= PARALLEL_MACS else 1
    mod = _module()
    if scale is None:
        mod.gemm(a_padded, packed, out, int(a_unsigned), nt, int(vnni), row_add, col_add)
        return out
    sc = np.ascontiguousarray(scale, np.float32).reshape(-1)
    mode = 0 if sc.size == 1 else (1 if axis == 0 else 2)
    signed = int(out.dtype == _S8)
    mod.gemm(a_padded, packed, out.view(np.uint8), int(a_unsigned), nt, int(vnni), row_add, col_add, sc, mode,
             int(zero_point), signed)  # fmt: skip
    return out


def matmul_s32(
    a: np.ndarray,
    b: np.ndarray | None,
    a_zero_point=None,
    b_zero_point=None,
    *,
    packed: np.ndarray | None = None,
    b_colsum: np.ndarray | None = None,
    a_padded: np.ndarray | None = None,
    a_rowsum: np.ndarray | None = None,
    row_add: np.ndarray | None = None,
    col_add: np.ndarray | None = None,
    n: int | None = None,
    b_dtype: np.dtype | None = None,
    threads: int = 0,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """(M, N) int32: sum_k (a[m, k] - za[m]) * (b[k, n] - zb[n]) (+ ``row_add[m]`` + ``col_add[n]``),
    into ``out`` when given (int32 (M, N), last axis contiguous), exact (int32 wraparound only where the
    true sum leaves int32). ``a`` (M, K) and ``b`` (K, N) uint8 or int8; zero points one value or one per
    row of a / column of b.

    Constant operands can come prepared: ``packed`` (:func:`pack` of b with flip =
    ``b_shift(a.dtype, b.dtype) != 0``, then ``b`` may be None and ``n``/``b_dtype`` say its columns and
    type), ``b_colsum`` (b's column sums, int32, of the values before the shift), ``a_padded``
    (:func:`pad_k` of a), ``a_rowsum`` (a's row sums, int32). The zero points' terms that are one value
    per row or per column are added by the GEMM as it stores its tiles; only per-row times per-column
    terms (both zero points vectors) take a pass of their own."""
    mod = _module()
    if b is not None:
        _check8(b, "matmul_s32: b")
        b_dtype = b.dtype
        n = b.shape[1]
    _check8(a, "matmul_s32: a")
    m, k = a.shape
    if mod is None:
        if b is None:
            raise ValueError("matmul_s32: b is needed where the compiled module is not built")
        y = matmul_s32_numpy(a, b, a_zero_point, b_zero_point)
        if row_add is not None:
            y += np.asarray(row_add, np.int32)[:, None]
        if col_add is not None:
            y += np.asarray(col_add, np.int32)[None, :]
        if out is not None:
            out[...] = y
            return out
        return y
    za = _zp(a_zero_point, m, "matmul_s32: a")
    zb = _zp(b_zero_point, n, "matmul_s32: b")
    shift = b_shift(a.dtype, np.dtype(b_dtype))
    zb_s = zb + shift if isinstance(zb, int) else zb.astype(np.int64) + shift
    rows64 = None if row_add is None else np.asarray(row_add).astype(np.int64)
    cols64 = None if col_add is None else np.asarray(col_add).astype(np.int64)
    outer = []  # (per-row, per-column) products to subtract after the GEMM

    def add_rows(v):
        nonlocal rows64
        rows64 = v if rows64 is None else rows64 + v

    def add_cols(v):
        nonlocal cols64
        cols64 = v if cols64 is None else cols64 + v

    if not (isinstance(zb_s, int) and zb_s == 0):
        rowsum = (a.sum(axis=1, dtype=np.int64) if a_rowsum is None else a_rowsum).astype(np.int64)
        if isinstance(zb_s, int):
            add_rows(-zb_s * rowsum)
        else:
            outer.append((rowsum, zb_s))
    if not (isinstance(za, int) and za == 0):
        colsum = (b.sum(axis=0, dtype=np.int64) if b_colsum is None else b_colsum).astype(
            np.int64
        ) + k * shift
        if isinstance(za, int):
            add_cols(-za * colsum)
        else:
            outer.append((za.astype(np.int64), colsum))
        kzz = (za if isinstance(za, int) else za.astype(np.int64)) * k
        if isinstance(za, int) and isinstance(zb_s, int):
            add_rows(np.full(m, kzz * zb_s, np.int64))
        elif isinstance(za, int):
            add_cols(kzz * zb_s)
        elif isinstance(zb_s, int):
            add_rows(kzz * zb_s)
        else:
            outer.append((-kzz, zb_s))
    if packed is None:
        packed = pack(b, shift != 0, threads)
    ap = pad_k(a) if a_padded is None else a_padded
    ro = None if rows64 is None else np.ascontiguousarray(np.broadcast_to(rows64, (m,)).astype(np.int32))
    co = None if cols64 is None else np.ascontiguousarray(np.broadcast_to(cols64, (n,)).astype(np.int32))
    if out is None:
        out = np.empty((m, n), np.int32)
    elif out.shape != (m, n) or out.dtype != np.int32 or (n > 1 and out.strides[1] != 4):
        raise ValueError(f"matmul_s32: out must be int32 {(m, n)} with contiguous rows")
    if m and n:
        if k:
            nt = _resolve(threads) if m * n * k >= PARALLEL_MACS else 1
            mod.gemm(ap, packed, out, int(a.dtype == _U8), nt, 1, ro, co)
        else:
            out[...] = 0
            if ro is not None:
                out += ro[:, None]
            if co is not None:
                out += co[None, :]
    for r, c in outer:
        out -= np.multiply.outer(r, c).astype(np.int32)
    return out


def matmul_s32_numpy(a: np.ndarray, b: np.ndarray, a_zero_point=None, b_zero_point=None) -> np.ndarray:
    """:func:`matmul_s32` by numpy: float64 BLAS on the centred values (exact), then int32."""
    m, k = a.shape
    n = b.shape[1]
    za = _zp(a_zero_point, m, "matmul_s32: a")
    zb = _zp(b_zero_point, n, "matmul_s32: b")
    af = a.astype(np.float64)
    af -= za if isinstance(za, int) else za[:, None].astype(np.float64)
    bf = b.astype(np.float64)
    bf -= zb if isinstance(zb, int) else zb[None, :].astype(np.float64)
    y = af @ bf
    return y.astype(np.int64).astype(np.int32)


def dynamic_quantize(x: np.ndarray) -> tuple[np.ndarray, np.float32, int]:
    """``x`` (float32) as uint8 with a scale and zero point from its range (holding 0), as
    DynamicQuantizeLinear computes them: (q, scale, zero point); an all-zero x gives scale 1, zero
    point 0. Returns the numpy twin's result where the module is not built or x is not float32."""
    mod = _module()
    if mod is None or x.dtype != np.float32:
        return dynamic_quantize_numpy(x)
    flat = np.ascontiguousarray(x).reshape(-1)
    q = np.empty(flat.shape, np.uint8)
    scale, zp = mod.dynamic_quantize(flat, q)
    return q.reshape(x.shape), np.float32(scale), int(zp)


def dynamic_quantize_numpy(x: np.ndarray) -> tuple[np.ndarray, np.float32, int]:
    """:func:`dynamic_quantize` by numpy (float32 arithmetic)."""
    x = np.asarray(x, dtype=np.float32)
    hi = np.float32(max(0.0, float(x.max()))) if x.size else np.float32(0)
    lo = np.float32(min(0.0, float(x.min()))) if x.size else np.float32(0)
    scale = np.float32((hi - lo) / np.float32(255.0))
    if scale == 0:
        return np.zeros(x.shape, np.uint8), np.float32(1.0), 0
    zp = np.clip(np.rint(np.float32(0.0) - lo / scale), 0, 255)
    q = np.rint(x / scale)
    q += np.float32(zp)
    np.clip(q, 0, 255, out=q)
    return q.astype(np.uint8), scale, int(zp)


def quantize(x: np.ndarray, scale: float, zero_point: int, dtype, threads: int = 0) -> np.ndarray | None:
    """QuantizeLinear with one scale and zero point: ``saturate(rint(x / scale) + zero_point)`` of float32
    ``x`` as uint8 / int8 (NaN to 0), the division in float32 as numpy's; None where the module is not
    built or x is not float32 (the caller's numpy path then runs)."""
    mod = _module()
    dtype = np.dtype(dtype)
    if mod is None or x.dtype != np.float32 or dtype not in (_U8, _S8):
        return None
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, dtype)
    nt = _resolve(threads) if flat.size >= PARALLEL_MACS // 4 else 1
    mod.quantize(flat, out.view(np.uint8), float(scale), int(zero_point), int(dtype == _S8), nt)
    return out.reshape(x.shape)


def qlinear_add(a: np.ndarray, b: np.ndarray, ra: float, rb: float, za: int, zb: int, zc: int) -> np.ndarray:
    """``saturate(rint(ra * (a - za) + rb * (b - zb)) + zc)`` for 8-bit ``a`` and ``b`` of one shape and
    type, in float32 (the numpy twin: :func:`qlinear_add_numpy`; the compiled loop may fuse the multiply
    and add, so the two may differ by one step where the sum falls within an ulp of a half)."""
    mod = _module()
    if mod is None or a.shape != b.shape or a.dtype != b.dtype or a.dtype not in (_U8, _S8):
        return qlinear_add_numpy(a, b, ra, rb, za, zb, zc)
    out = np.empty(a.shape, a.dtype)

    def flat(x):
        return np.ascontiguousarray(x).view(np.uint8).reshape(-1)

    signed = int(a.dtype == _S8)
    mod.qlinear_add(flat(a), flat(b), flat(out), float(ra), float(rb), int(za), int(zb), int(zc), signed)
    return out


def qlinear_add_numpy(a, b, ra: float, rb: float, za: int, zb: int, zc: int, dtype=None) -> np.ndarray:
    """:func:`qlinear_add` by numpy (broadcasting ``a`` and ``b``; result of ``dtype``, a's by default)."""
    dtype = np.dtype(a.dtype if dtype is None else dtype)
    av = a.astype(np.float32) - np.float32(za)
    bv = b.astype(np.float32) - np.float32(zb)
    av *= np.float32(ra)
    bv *= np.float32(rb)
    y = av + bv
    np.rint(y, out=y)
    y += np.float32(zc)
    info = np.iinfo(dtype)
    np.clip(y, info.min, info.max, out=y)
    return y.astype(dtype)


def requantize(
    acc: np.ndarray, scale: np.ndarray, axis: int | None, zero_point: int, dtype: np.dtype, threads: int = 0
) -> np.ndarray:
    """``saturate(rint(acc * scale) + zero_point)`` as ``dtype`` (uint8 or int8): ``acc`` (M, N) or (M, R, C)
    int32 (any strides, the last axis contiguous), ``scale`` float32 with one value, or one per index of
    axis 0 (``axis`` 0) or of the last axis (``axis`` -1 or 1 for 2-D). Returns a C-contiguous array."""
    mod = _module()
    dtype = np.dtype(dtype)
    scale = np.ascontiguousarray(scale, dtype=np.float32).reshape(-1)
    ok = acc.ndim in (2, 3) and acc.dtype == np.int32 and (acc.shape[-1] <= 1 or acc.strides[-1] == 4)
    if mod is None or not ok or dtype not in (_U8, _S8):
        return requantize_numpy(acc, scale, axis, zero_point, dtype)
    last = axis is not None and axis % acc.ndim == acc.ndim - 1
    a3 = acc[:, None, :] if acc.ndim == 2 else acc
    mode = 0 if scale.size == 1 else (2 if last else 1)
    out = np.empty(acc.shape, dtype)
    nt = _resolve(threads) if acc.size >= PARALLEL_MACS // 4 else 1
    mod.requantize(
        a3, scale, mode, int(zero_point), out.view(np.uint8).reshape(a3.shape), int(dtype == _S8), nt
    )
    return out


def requantize_numpy(
    acc: np.ndarray, scale: np.ndarray, axis: int | None, zero_point: int, dtype
) -> np.ndarray:
    """:func:`requantize` by numpy (float32 products, as onnxruntime computes them)."""
    dtype = np.dtype(dtype)
    s = np.asarray(scale, np.float32).reshape(-1)
    if s.size != 1:
        s = s.reshape((-1,) + (1,) * (acc.ndim - 1)) if axis == 0 else s
    else:
        s = s.reshape(())
    y = np.rint(acc.astype(np.float32) * s)
    y += np.float32(zero_point)
    info = np.iinfo(dtype)
    np.clip(y, info.min, info.max, out=y)
    return y.astype(dtype)
