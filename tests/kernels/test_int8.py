"""The compiled 8-bit GEMM and requantization (onyx.kernels.int8) against their numpy twins: edge shapes,
every signedness pair, zero points at the extremes, prepared operands, saturation."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.kernels import int8

pytestmark = pytest.mark.skipif(not int8.available(), reason="compiled _int8 not built")

U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)
rng = np.random.default_rng(19)


def rand(shape, dt) -> np.ndarray:
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def extreme(dt, high: bool):
    info = np.iinfo(dt)
    return np.array(info.max if high else info.min, dt)


SHAPES = [(0, 3, 4), (3, 0, 4), (3, 4, 0), (1, 1, 1), (5, 7, 33), (9, 13, 65), (17, 64, 32), (64, 257, 100)]
PAIRS = [(U8, S8), (U8, U8), (S8, S8), (S8, U8)]


@pytest.mark.parametrize("adt,bdt", PAIRS)
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_matmul_matches_twin(adt, bdt, m, k, n):
    a, b = rand((m, k), adt), rand((k, n), bdt)
    cases = [
        (None, None),
        (extreme(adt, True), extreme(bdt, False)),
        (extreme(adt, False), extreme(bdt, True)),
        (rand((m,), adt), rand((n,), bdt)),
        (rand((), adt), rand((n,), bdt)),
        (rand((m,), adt), rand((), bdt)),
    ]
    for za, zb in cases:
        want = int8.matmul_s32_numpy(a, b, za, zb)
        got = int8.matmul_s32(a, b, za, zb)
        assert got.dtype == np.int32 and got.shape == (m, n)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("adt,bdt", PAIRS)
def test_extreme_values_do_not_saturate(adt, bdt):
    """All products at the largest magnitude (255 * -128 and the like): the sums are exact, no int16
    saturation of pairs as in vpmaddubsw-based kernels."""
    for av in (np.iinfo(adt).min, np.iinfo(adt).max):
        for bv in (np.iinfo(bdt).min, np.iinfo(bdt).max):
            a = np.full((9, 300), av, adt)
            b = np.full((300, 40), bv, bdt)
            got = int8.matmul_s32(a, b)
            assert (got == av * bv * 300).all()


def test_prepared_operands_and_offsets():
    a, b = rand((20, 70), U8), rand((70, 45), S8)
    za, zb = np.uint8(3), np.int8(-5)
    packed = int8.pack(b, int8.b_shift(a.dtype, b.dtype) != 0)
    row_add = rand((20,), np.int16).astype(np.int32)
    col_add = rand((45,), np.int16).astype(np.int32)
    got = int8.matmul_s32(
        a, None, za, zb, packed=packed, b_colsum=b.sum(axis=0, dtype=np.int32), a_padded=int8.pad_k(a),
        a_rowsum=a.sum(axis=1, dtype=np.int32), row_add=row_add, col_add=col_add, n=45, b_dtype=b.dtype,
    )  # fmt: skip
    want = int8.matmul_s32_numpy(a, b, za, zb) + row_add[:, None] + col_add[None, :]
    np.testing.assert_array_equal(got, want)


def test_strided_b_is_packed():
    b = rand((40, 90), S8)[:, ::3]  # non-contiguous columns
    a = rand((6, 40), U8)
    np.testing.assert_array_equal(int8.matmul_s32(a, b), int8.matmul_s32_numpy(a, b))


@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize("k,n,threads", [(7, 1, 1), (9, 31, 1), (30, 333, 1), (64, 2000, 1), (27, 1000, 2)])
def test_pack_rows_equals_pack_of_the_rows(flip, k, n, threads):
    """Rows read in place at scattered offsets (one run each: a stride-1 convolution's column matrix),
    packed in blocks of panels: the same bytes as :func:`int8.pack` of the explicit matrix."""
    src = rand(k * 50 + 2 * n, U8)
    offsets = rng.permutation(k * 50)[:k].astype(np.int64)
    rows = np.stack([src[o : o + n] for o in offsets])
    got = int8.pack_rows(src, offsets, n, flip, threads=threads)
    np.testing.assert_array_equal(got, int8.pack(rows, flip))
    # the strided form (runs of ``width``, ``pitch`` apart): the panel by panel gather
    got = int8.pack_rows(src, offsets, n, flip, width=5, pitch=7, step=1, threads=threads)
    cols = (np.arange(n) // 5) * 7 + np.arange(n) % 5
    np.testing.assert_array_equal(got, int8.pack(src[offsets[:, None] + cols[None, :]], flip))


@pytest.mark.parametrize("dt", [U8, S8])
@pytest.mark.parametrize("axis,shape", [(None, (1,)), (0, (7,)), (1, (11,))])
def test_requantize_matches_twin(dt, axis, shape):
    acc = rng.integers(-(2**20), 2**20, (7, 11)).astype(np.int32)
    acc[0, :4] = [2**31 - 1, -(2**31), 0, 5]
    scale = (rng.random(shape) * 1e-3).astype(np.float32)
    for zp in (int(np.iinfo(dt).min), int(np.iinfo(dt).max), 0):
        got = int8.requantize(acc, scale, axis, zp, dt)
        np.testing.assert_array_equal(got, int8.requantize_numpy(acc, scale, axis, zp, dt))
        assert got.dtype == dt


def test_requantize_rounds_half_to_even_and_saturates():
    acc = np.array([[1, 3, 5, -1, -3, 1000, -1000]], np.int32)
    got = int8.requantize(acc, np.array([0.5], np.float32), None, 0, S8)
    np.testing.assert_array_equal(got, [[0, 2, 2, 0, -2, 127, -128]])


def test_bad_operands():
    with pytest.raises(TypeError):
        int8.matmul_s32(np.zeros((2, 2), np.int16), np.zeros((2, 2), np.int8))
    with pytest.raises(ValueError):
        int8.matmul_s32(np.zeros((2, 3), np.uint8), np.zeros((3, 4), np.int8), None, np.zeros(3, np.int8))


@pytest.mark.parametrize(
    "x",
    [
        rng.standard_normal(10007).astype(np.float32) * 3,
        rng.random(300).astype(np.float32),  # all positive: zero point 0
        -rng.random(301).astype(np.float32),  # all negative: zero point 255
        np.zeros(9, np.float32),  # scale 1, zero point 0
        np.array([0.5, -0.5, 1.5, 2.5, -1.0], np.float32),
    ],
)
def test_dynamic_quantize_matches_the_operator(x):
    from onyx.ops.quant.dynamic_quantize_linear import dynamic_quantize_linear_11

    q, scale, zp = int8.dynamic_quantize(x)
    want_q, want_scale, want_zp = dynamic_quantize_linear_11(x)
    np.testing.assert_array_equal(q, want_q)
    assert scale == want_scale and zp == int(want_zp)
    q2, scale2, zp2 = int8.dynamic_quantize_numpy(x)
    np.testing.assert_array_equal(q2, want_q)
    assert scale2 == want_scale and zp2 == int(want_zp)


@pytest.mark.parametrize("dt", [U8, S8])
def test_qlinear_add_matches_twin_within_a_step(dt):
    a, b = rand((4, 1000), dt), rand((4, 1000), dt)
    for zc in (int(np.iinfo(dt).min), 0, int(np.iinfo(dt).max)):
        got = int8.qlinear_add(a, b, 0.37, 1.9, 3, -2, zc)
        want = int8.qlinear_add_numpy(a, b, 0.37, 1.9, 3, -2, zc)
        assert got.dtype == dt
        diff = np.abs(got.astype(np.int32) - want)
        assert diff.max() <= 1 and np.mean(diff > 0) < 0.01
    # saturation at both ends
    lo = np.full(5, np.iinfo(dt).min, dt)
    hi = np.full(5, np.iinfo(dt).max, dt)
    assert (int8.qlinear_add(hi, hi, 4.0, 4.0, 0, 0, 0) == np.iinfo(dt).max).all()
    assert (int8.qlinear_add(lo, lo, 4.0, 4.0, 100, 100, 0) == np.iinfo(dt).min).all()


@pytest.mark.parametrize("vnni", [True, False])
@pytest.mark.parametrize("dt", [U8, S8])
@pytest.mark.parametrize("axis,size", [(None, 1), (0, 21), (1, 45)])
def test_gemm_requantizes_as_it_stores(dt, axis, size, vnni):
    """The GEMM's fused requantization equals requantize() of its int32 result (rows past a tile, columns
    past a panel, offsets included)."""
    a, b = rand((21, 70), S8), rand((70, 45), U8)
    packed = int8.pack(b, False)
    row_add = rand((21,), np.int16).astype(np.int32)
    acc = int8.gemm_packed(int8.pad_k(a), False, packed, np.empty((21, 45), np.int32), row_add, vnni=vnni)
    np.testing.assert_array_equal(acc, int8.matmul_s32_numpy(a, b) + row_add[:, None])
    scale = (rng.random(size) * 2e-3).astype(np.float32)
    for zp in (int(np.iinfo(dt).min), 3, int(np.iinfo(dt).max)):
        got = int8.gemm_packed(
            int8.pad_k(a),
            False,
            packed,
            np.empty((21, 45), dt),
            row_add,
            scale=scale,
            axis=axis,
            zero_point=zp,
            vnni=vnni,
        )
        np.testing.assert_array_equal(got, int8.requantize_numpy(acc, scale, axis, zp, dt))


@pytest.mark.parametrize("a_unsigned", [True, False])
def test_plain_loop_equals_vnni(a_unsigned):
    """The loop CPUs without AVX-512 VNNI run: the same sums, both signedness orders, offsets included."""
    a = rand((19, 130), U8 if a_unsigned else S8)
    b = rand((130, 70), S8 if a_unsigned else U8)
    packed = int8.pack(b, False)
    col_add = rand((70,), np.int16).astype(np.int32)
    outs = [
        int8.gemm_packed(
            int8.pad_k(a), a_unsigned, packed, np.empty((19, 70), np.int32), None, col_add, vnni=v
        )
        for v in (True, False)
    ]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1], int8.matmul_s32_numpy(a, b) + col_add[None, :])


def _conv_input(x, pads_begin, pads_end, strides, phases, value):
    """interleave_conv's layout by numpy: x padded, split into stride phases, four channels interleaved."""
    c, h, w = x.shape
    (pt, pl), (pb, pr), (sh, sw) = pads_begin, pads_end, strides
    xp = np.full((c, h + pt + pb, w + pl + pr), value, x.dtype)
    xp[:, pt : pt + h, pl : pl + w] = x
    hph, wph = -(-xp.shape[1] // sh), -(-xp.shape[2] // sw)
    planes = np.full((c, len(phases), hph, wph), value, x.dtype)
    for k, (a, b) in enumerate(phases):
        part = xp[:, a::sh, b::sw]
        planes[:, k, : part.shape[1], : part.shape[2]] = part
    groups = -(-c // 4)
    out = np.zeros((groups * 4, len(phases) * hph * wph), np.uint8)
    out[:c] = planes.reshape(c, -1).view(np.uint8)
    return out.reshape(groups, 4, -1).transpose(0, 2, 1), (hph, wph)


@pytest.mark.parametrize("dt", [U8, S8])
@pytest.mark.parametrize(
    "shape,pads,strides,phases",
    [
        ((8, 5, 7), ((1, 1), (1, 1)), (1, 1), [(0, 0)]),
        ((6, 9, 10), ((1, 2), (0, 1)), (2, 2), [(0, 0), (0, 1), (1, 0), (1, 1)]),  # 6 channels: a half group
        ((4, 11, 8), ((2, 0), (1, 3)), (3, 2), [(0, 1), (2, 0)]),  # only the phases a kernel reads
        ((3, 1, 1), ((0, 0), (0, 0)), (1, 1), [(0, 0)]),
    ],
)
def test_interleave_conv_equals_padding_and_phases(dt, shape, pads, strides, phases):
    x = rand(shape, dt)
    value = int(np.iinfo(dt).max) - 3
    want, phase_shape = _conv_input(x, pads[0], pads[1], strides, phases, value)
    length = want.shape[1] + 5
    got = int8.interleave_conv(x, np.array(phases), strides, pads[0], phase_shape, length, value, False)
    np.testing.assert_array_equal(got[:, : want.shape[1]], want)
    assert not got[:, want.shape[1] :].any()  # zeros after the phases
    flipped = int8.interleave_conv(x, np.array(phases), strides, pads[0], phase_shape, length, value, True)
    c = shape[0]
    live = (np.arange(got.shape[0] * 4).reshape(-1, 4) < c)[:, None, :]  # channels past C stay 0
    body = want.shape[1]
    np.testing.assert_array_equal(flipped[:, :body], np.where(live, got[:, :body] ^ 0x80, 0))
    assert not flipped[:, body:].any()


@pytest.mark.parametrize("vnni", [True, False])
@pytest.mark.parametrize("out_dt", [None, U8, S8])
@pytest.mark.parametrize(
    "c,m,h,w,kernel,pads,strides",
    [
        (8, 21, 9, 11, (3, 3), (1, 1, 1, 1), (1, 1)),
        (4, 9, 13, 12, (5, 5), (2, 2, 2, 2), (2, 2)),
        (12, 40, 7, 37, (3, 3), (1, 0, 1, 2), (1, 1)),  # rows of 39 cross the 32-column panels
        (4, 3, 1, 1, (3, 3), (1, 1, 1, 1), (1, 1)),
    ],
)
def test_gemm_shifted_is_the_convolution(c, m, h, w, kernel, pads, strides, out_dt, vnni):
    """A convolution read in place (every tap a shift of the interleaved input) equals the product with
    its explicit column matrix, as int32 and requantized straight into the unpadded output."""
    x, wt = rand((c, h, w), U8), rand((m, c) + kernel, S8)
    (kh, kw), (sh, sw) = kernel, strides
    pt, pl, pb, pr = pads
    hp, wp_full = h + pt + pb, w + pl + pr
    oh, ow = (hp - kh) // sh + 1, (wp_full - kw) // sw + 1
    phases = sorted({(i % sh, j % sw) for i in range(kh) for j in range(kw)})
    src, (hph, wph) = _conv_input(x, (pt, pl), (pb, pr), strides, phases, 7)
    length = src.shape[1] + int8.NR
    src = np.concatenate([src, np.zeros((src.shape[0], int8.NR, 4), np.uint8)], axis=1)
    plane = hph * wph
    grid = [(i, j) for i in range(kh) for j in range(kw)]
    taps = [phases.index((i % sh, j % sw)) * plane + (i // sh) * wph + j // sw for i, j in grid]
    quads = (np.arange(c // 4)[:, None] * length + np.array(taps)[None, :]).reshape(-1).astype(np.int64) * 4
    a = np.ascontiguousarray(wt.reshape(m, c // 4, 4, kh * kw).transpose(0, 1, 3, 2).reshape(m, -1)).view(U8)
    n_cols = (oh - 1) * wph + ow
    # the reference: explicit column matrix of the padded input
    xp = np.full((c, hp, wp_full), 7, U8)
    xp[:, pt : pt + h, pl : pl + w] = x
    cols = np.stack(
        [xp[:, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw] for i, j in grid],
        axis=1,
    ).reshape(c * kh * kw, oh * ow)
    row_add = rand((m,), np.int16).astype(np.int32)
    want = int8.matmul_s32_numpy(wt.reshape(m, -1), cols) + row_add[:, None]
    if out_dt is None:
        acc = np.empty((m, n_cols), np.int32)
        got = int8.gemm_shifted(a, False, src, quads, acc, n_cols, row_add, vnni=vnni)
        got = np.pad(got, ((0, 0), (0, oh * wph - n_cols))).reshape(m, oh, wph)[:, :, :ow]
        np.testing.assert_array_equal(got.reshape(m, -1), want)
        return
    scale = (rng.random(m) * 2e-3).astype(np.float32)
    zp = 5 if out_dt == U8 else -3
    out = np.full((m, oh * ow), 99, out_dt)
    got = int8.gemm_shifted(
        a, False, src, quads, out, n_cols, row_add, scale=scale, axis=0, zero_point=zp,
        padded_width=(wph, ow), vnni=vnni,
    )  # fmt: skip
    np.testing.assert_array_equal(got, int8.requantize_numpy(want, scale, 0, zp, out_dt))


def test_gemm_shifted_and_interleave_conv_refuse_bad_operands():
    mod = int8._module()
    a = np.zeros((2, 8), np.uint8)
    src = np.zeros((1, 40, 4), np.uint8).reshape(-1)
    out = np.zeros((2, 10), np.uint8)
    quads = np.array([0, 4], np.int64)
    sc = np.ones(1, np.float32)
    with pytest.raises(ValueError, match="outside the source"):  # 32 columns of 4 bytes from offset 64
        mod.gemm_shifted(a, src, np.array([0, 64], np.int64), out, 10, 0, 1, 1, None, None, sc, 0, 0, 0)
    with pytest.raises(ValueError, match="outside the source"):
        mod.gemm_shifted(a, src, np.array([-4, 0], np.int64), out, 10, 0, 1, 1, None, None, sc, 0, 0, 0)
    with pytest.raises(ValueError, match="k-quads"):
        mod.gemm_shifted(a, src, quads[:1], out, 10, 0, 1, 1, None, None, sc, 0, 0, 0)
    with pytest.raises(ValueError, match="ow first"):  # 10 columns on width 4 are 3 rows: 3 * 3 = 9 outputs
        mod.gemm_shifted(a, src, quads, out, 10, 0, 1, 1, None, None, sc, 0, 0, 0, 4, 3)
    with pytest.raises(ValueError, match="padded width"):  # the remap needs a requantized out
        acc = np.zeros((2, 10), np.int32)
        mod.gemm_shifted(a, src, quads, acc, 10, 0, 1, 1, None, None, None, -1, 0, 0, 4, 3)
    x = np.zeros((4, 3, 3), np.uint8)
    dst = np.zeros((1, 9, 4), np.uint8)
    with pytest.raises(ValueError, match="phase"):
        mod.interleave_conv(x, np.array([[1, 0]], np.int64), dst, 1, 1, 0, 0, 3, 3, 0, 0, 1)
    with pytest.raises(ValueError, match="long enough"):
        mod.interleave_conv(x, np.array([[0, 0]], np.int64), dst, 1, 1, 0, 0, 4, 3, 0, 0, 1)
    with pytest.raises(ValueError):
        two_groups = np.zeros((2, 9, 4), np.uint8)  # 4 channels are one group
        mod.interleave_conv(x, np.array([[0, 0]], np.int64), two_groups, 1, 1, 0, 0, 3, 3, 0, 0, 1)


@pytest.mark.parametrize("dt", [U8, S8])
def test_quantize_equals_numpy(dt):
    """QuantizeLinear's compiled loop: a true float32 division, half to even, saturation, NaN to 0."""
    x = (rng.standard_normal(50001) * 300).astype(np.float32)
    scale = np.float32(0.37)
    x[:8] = [0.5 * scale, 1.5 * scale, -0.5 * scale, 2.5 * scale, np.inf, -np.inf, 3e38, -3e38]
    x[8] = np.nan
    for zp in (int(np.iinfo(dt).min), 0, 7, int(np.iinfo(dt).max)):
        got = int8.quantize(x, scale, zp, dt)
        info = np.iinfo(dt)
        with np.errstate(invalid="ignore", over="ignore"):
            want = np.clip(np.rint(x / scale) + np.float32(zp), info.min, info.max)
        want[8] = 0
        assert got.dtype == dt
        np.testing.assert_array_equal(got, want.astype(dt))
    assert int8.quantize(x.astype(np.float64), scale, 0, dt) is None  # the caller's numpy path


@pytest.mark.parametrize("vnni", [True, False])
@pytest.mark.parametrize("out_dt", [U8, S8])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("c,m,h,w", [(8, 40, 5, 7), (4, 32, 3, 3), (12, 7, 9, 2)])
def test_conv_rows_is_the_convolution(c, m, h, w, per_channel, out_dt, vnni):
    """Positions as the GEMM's rows (tiles of 8 past the last position, channels past a panel) equal the
    requantized product with the explicit column matrix, stored as (channels, positions)."""
    x, wt = rand((c, h, w), U8), rand((m, c, 3, 3), S8)
    src, (hph, wph) = _conv_input(x, (1, 1), (1, 1), (1, 1), [(0, 0)], 9)
    length = src.shape[1] + int8.NR
    src = np.concatenate([src, np.zeros((src.shape[0], int8.NR, 4), np.uint8)], axis=1)
    taps = [i * wph + j for i in range(3) for j in range(3)]
    quads = (np.arange(c // 4)[:, None] * length + np.array(taps)[None, :]).reshape(-1).astype(np.int64) * 4
    a = np.ascontiguousarray(wt.reshape(m, c // 4, 4, 9).transpose(0, 1, 3, 2).reshape(m, -1))
    panels = int8.pack(np.ascontiguousarray(a.T), False)
    xp = np.full((c, h + 2, w + 2), 9, U8)
    xp[:, 1:-1, 1:-1] = x
    cols = np.stack([xp[:, i : i + h, j : j + w] for i in range(3) for j in range(3)], axis=1).reshape(
        -1, h * w
    )
    add = rand((m,), np.int16).astype(np.int32)
    want = int8.matmul_s32_numpy(wt.reshape(m, -1), cols) + add[:, None]
    scale = (rng.random(m if per_channel else 1) * 2e-3).astype(np.float32)
    zp = 4 if out_dt == U8 else -6
    got = int8.conv_rows(
        src, quads, (wph, w), panels, add, scale, zp, np.empty((m, h * w), out_dt), vnni=vnni
    )
    np.testing.assert_array_equal(
        got, int8.requantize_numpy(want, scale, 0 if per_channel else None, zp, out_dt)
    )


def test_conv_rows_refuses_bad_operands():
    mod = int8._module()
    src = np.zeros(4 * 40, np.uint8)
    quads = np.array([0, 16], np.int64)
    panels = np.zeros((1, 2, 32, 4), np.uint8)
    add, sc = np.zeros(5, np.int32), np.ones(1, np.float32)
    out = np.zeros((5, 6), np.uint8)
    mod.conv_rows(src, quads, 4, 3, panels, add, sc, 0, out, 0, 1, 1)  # 2 rows of 3 on a width of 4: fits
    with pytest.raises(ValueError, match="outside the source"):
        mod.conv_rows(src, np.array([0, 4 * 36], np.int64), 4, 3, panels, add, sc, 0, out, 0, 1, 1)
    with pytest.raises(ValueError, match="whole rows"):
        mod.conv_rows(src, quads, 4, 4, panels, add, sc, 0, out, 0, 1, 1)
    with pytest.raises(ValueError, match="one offset per channel"):
        mod.conv_rows(src, quads, 4, 3, panels, add[:4], sc, 0, out, 0, 1, 1)
    with pytest.raises(ValueError):  # weights packed for another k
        mod.conv_rows(src, quads, 4, 3, np.zeros((1, 3, 32, 4), np.uint8), add, sc, 0, out, 0, 1, 1)


@pytest.mark.parametrize(
    "c,m,hw,k,stride",
    # positions on panels, positions as rows, stride phases, a packed 1x1
    # (each past the size int8.PARALLEL_MACS where the loops go parallel)
    [(32, 64, 40, 3, 1), (128, 128, 12, 3, 1), (64, 64, 41, 3, 2), (128, 128, 40, 1, 1)],
)
def test_frozen_conv_threads_give_one_result(c, m, hw, k, stride):
    """Every path of the integer convolution (positions on panels or as rows, packed 1x1) gives the same
    bytes on two threads as on one (each output is one task's: no order of sums depends on threads)."""
    from onyx.ops.quant._integer import FrozenConv

    x, w = rand((2, c, hw, hw), U8), rand((m, c, k, k), S8)
    attrs = dict(group=1, kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride] * 2, dilations=[1, 1])
    attrs["auto_pad"] = "NOTSET"
    bias = rand((m,), np.int16).astype(np.int32)
    rq = ((rng.random(m) * 1e-3).astype(np.float32), 7, U8)
    one, two = (FrozenConv.make(w, 100, 0, bias, attrs, U8, t) for t in (1, 2))
    np.testing.assert_array_equal(one(x, rq), two(x, rq))
    np.testing.assert_array_equal(one(x), two(x))
