/* Exact 8-bit integer GEMM: out (M, N) int32 = A (M, K) . B (K, N), one operand unsigned (uint8), the
 * other signed (int8), accumulated in int32 without any intermediate saturation.
 *
 * B is first packed into panels of 32 columns (pack: from a matrix; pack_rows: a convolution's column
 * matrix read in place from its padded input): for every group of 4 consecutive k, the 4 bytes of each
 * column side by side (the operand layout of AVX-512 VNNI's vpdpbusd, which multiplies 4 unsigned by 4
 * signed bytes and adds the sum of the products to an int32 lane, with no saturation). A's rows are
 * read 4 bytes at a time and broadcast. On a CPU without AVX-512 VNNI the same packed layout is run by a
 * plain C loop (compiled for AVX2/AVX-512 by gcc's function multi-versioning). The GEMM adds per-row
 * and per-column int32 offsets (zero points, bias) and can requantize as it stores its tiles.
 *
 * Also here: requantization (int32 -> 8 bits), DynamicQuantizeLinear's uint8 quantization, QLinearAdd.
 *
 * Why not MKL's cblas_gemm_s8u8s32: it is exact here but ran at 5-8 GOPS on this AMD EPYC (its integer
 * kernels are chosen by CPU vendor), 2-3x slower than cblas_sgemm on the same shapes. */
#define PY_SSIZE_T_CLEAN
#include "_common.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define ONYX_HAVE_VNNI_BUILD 1
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#else
#define ONYX_HAVE_VNNI_BUILD 0
#endif

enum { NR = 32, MR = 8 };

static int cpu_has_vnni(void) {
#if ONYX_HAVE_VNNI_BUILD
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

/* ---- packing ---- */

/* packed[p][q][j][r] = B[4q + r][32p + j] ^ flip (zero beyond K and N). Rows of contiguous columns
 * (sn == 1) are interleaved four at a time into 32-bit words, a loop gcc vectorizes. */
ONYX_VECTOR static void pack_panel(const uint8_t *b, Py_ssize_t sk, Py_ssize_t sn, Py_ssize_t k, Py_ssize_t n,
                                   Py_ssize_t p, uint8_t flip, uint8_t *dst) {
    const Py_ssize_t kq = (k + 3) / 4, j0 = p * NR;
    const Py_ssize_t nj = n - j0 < NR ? n - j0 : NR;
    if (sn == 1) {
        static const uint8_t zeros[NR] = {0};
        for (Py_ssize_t q = 0; q < kq; q++) {
            const uint8_t *r[4];
            uint32_t f[4];
            for (int i = 0; i < 4; i++) {
                const Py_ssize_t kk = 4 * q + i;
                r[i] = kk < k ? b + kk * sk + j0 : zeros;
                f[i] = kk < k ? flip : 0;
            }
            uint32_t *o = (uint32_t *)(dst + q * NR * 4);
            for (Py_ssize_t j = 0; j < nj; j++)
                o[j] = ((uint32_t)r[0][j] ^ f[0]) | (((uint32_t)r[1][j] ^ f[1]) << 8) |
                       (((uint32_t)r[2][j] ^ f[2]) << 16) | (((uint32_t)r[3][j] ^ f[3]) << 24);
            for (Py_ssize_t j = nj; j < NR; j++) o[j] = 0;
        }
        return;
    }
    memset(dst, 0, (size_t)kq * NR * 4);
    for (Py_ssize_t kk = 0; kk < k; kk++) {
        const uint8_t *row = b + kk * sk + j0 * sn;
        uint8_t *out = dst + (kk / 4) * NR * 4 + (kk % 4);
        for (Py_ssize_t j = 0; j < nj; j++) out[j * 4] = row[j * sn] ^ flip;
    }
}

static PyObject *py_pack(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *bo, *po;
    int flip, threads;
    if (!PyArg_ParseTuple(args, "OOii", &bo, &po, &flip, &threads)) return NULL;
    onyx_array b, pk;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {bo, &b, 'B', 2, 0, "pack: b (uint8 view)"},
                      {po, &pk, 'B', 4, ONYX_OUT | ONYX_DENSE, "pack: packed"}) < 0)
        goto done;
    const Py_ssize_t k = b.shape[0], n = b.shape[1];
    const Py_ssize_t np_ = (n + NR - 1) / NR, kq = (k + 3) / 4;
    if (ONYX_EXPECT_SHAPE(&pk, "pack: packed", np_, kq, NR, 4) < 0) goto done;
    {
        const uint8_t *src = (const uint8_t *)b.data;
        uint8_t *dst = (uint8_t *)pk.data;
        const Py_ssize_t sk = b.strides[0], sn = b.strides[1];
        const uint8_t fl = flip ? 0x80 : 0;
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nt)
        for (Py_ssize_t p = 0; p < np_; p++) pack_panel(src, sk, sn, k, n, p, fl, dst + p * kq * NR * 4);
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&b, &pk);
    return result;
}

/* Rows at arbitrary offsets of one byte buffer: a convolution's column matrix read in place from its
 * padded input. Row k starts at offs[k] (c*Hp*Wp + i*dh*Wp + j*dw for kernel row (c, i, j)); column
 * `col` is (col / width) * pitch + (col % width) * step bytes further (output row and column). A
 * stride-1 convolution computed on the padded width is one contiguous run (width >= n, step 1). */
typedef struct {
    const uint8_t *src;
    const int64_t *offs;
    Py_ssize_t k, n, width, pitch, step;
    uint8_t flip;
} rows_src;

ONYX_VECTOR static void pack_rows_panel(const rows_src *s, Py_ssize_t p, uint8_t *dst) {
    static const uint8_t zeros[NR] = {0};
    const Py_ssize_t k = s->k, kq = (k + 3) / 4, j0 = p * NR;
    const Py_ssize_t nj = s->n - j0 < NR ? s->n - j0 : NR;
    const int contiguous = s->step == 1 && s->width >= s->n;
    Py_ssize_t pos[NR];
    for (Py_ssize_t j = 0; j < nj; j++) pos[j] = ((j0 + j) / s->width) * s->pitch + ((j0 + j) % s->width) * s->step;
    for (Py_ssize_t q = 0; q < kq; q++) {
        uint32_t *o = (uint32_t *)(dst + q * NR * 4);
        if (contiguous) {
            const uint8_t *r[4];
            uint32_t f[4];
            for (int i = 0; i < 4; i++) {
                const Py_ssize_t kk = 4 * q + i;
                r[i] = kk < k ? s->src + s->offs[kk] + j0 : zeros;
                f[i] = kk < k ? s->flip : 0;
            }
            for (Py_ssize_t j = 0; j < nj; j++)
                o[j] = ((uint32_t)r[0][j] ^ f[0]) | (((uint32_t)r[1][j] ^ f[1]) << 8) |
                       (((uint32_t)r[2][j] ^ f[2]) << 16) | (((uint32_t)r[3][j] ^ f[3]) << 24);
        } else {
            /* rows past k read row 4q again, masked to 0 */
            const uint8_t *r[4];
            uint32_t f[4], keep[4];
            for (int i = 0; i < 4; i++) {
                const Py_ssize_t kk = 4 * q + i < k ? 4 * q + i : 4 * q;
                r[i] = s->src + s->offs[kk];
                f[i] = s->flip;
                keep[i] = 4 * q + i < k ? 0xFFu : 0u;
            }
            for (Py_ssize_t j = 0; j < nj; j++) {
                const Py_ssize_t at = pos[j];
                o[j] = (((uint32_t)r[0][at] ^ f[0]) & keep[0]) | ((((uint32_t)r[1][at] ^ f[1]) & keep[1]) << 8) |
                       ((((uint32_t)r[2][at] ^ f[2]) & keep[2]) << 16) |
                       ((((uint32_t)r[3][at] ^ f[3]) & keep[3]) << 24);
            }
        }
        for (Py_ssize_t j = nj; j < NR; j++) o[j] = 0;
    }
}

/* pack_rows_panel's contiguous case (step 1, one run) over panels [p0, p1), row group by row group:
 * each pass reads a run of (p1 - p0) * NR bytes of four rows (whole cache lines, in order: what the
 * prefetcher follows) instead of NR bytes of four rows spread over the input per panel. */
ONYX_VECTOR static void pack_rows_block(const rows_src *s, Py_ssize_t p0, Py_ssize_t p1, uint8_t *dst) {
    static const uint8_t zeros[NR] = {0};
    const Py_ssize_t k = s->k, kq = (k + 3) / 4;
    for (Py_ssize_t q = 0; q < kq; q++) {
        const uint8_t *base[4];
        uint32_t f[4];
        for (int i = 0; i < 4; i++) {
            const Py_ssize_t kk = 4 * q + i;
            base[i] = kk < k ? s->src + s->offs[kk] : NULL;
            f[i] = kk < k ? s->flip : 0;
        }
        for (Py_ssize_t p = p0; p < p1; p++) {
            const Py_ssize_t j0 = p * NR, nj = s->n - j0 < NR ? s->n - j0 : NR;
            uint32_t *o = (uint32_t *)(dst + (p * kq + q) * NR * 4);
            const uint8_t *r[4];
            for (int i = 0; i < 4; i++) r[i] = base[i] ? base[i] + j0 : zeros;
            for (Py_ssize_t j = 0; j < nj; j++)
                o[j] = ((uint32_t)r[0][j] ^ f[0]) | (((uint32_t)r[1][j] ^ f[1]) << 8) |
                       (((uint32_t)r[2][j] ^ f[2]) << 16) | (((uint32_t)r[3][j] ^ f[3]) << 24);
            for (Py_ssize_t j = nj; j < NR; j++) o[j] = 0;
        }
    }
}

static PyObject *py_pack_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *so, *oo, *po;
    Py_ssize_t n, width, pitch, step;
    int flip, threads;
    if (!PyArg_ParseTuple(args, "OOnnnnOii", &so, &oo, &n, &width, &pitch, &step, &po, &flip, &threads)) return NULL;
    onyx_array src, off, pk;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {so, &src, 'B', 1, ONYX_DENSE, "pack_rows: src (uint8 view)"},
                      {oo, &off, 'q', 1, ONYX_DENSE, "pack_rows: offsets"},
                      {po, &pk, 'B', 4, ONYX_OUT | ONYX_DENSE, "pack_rows: packed"}) < 0)
        goto done;
    {
        const Py_ssize_t k = off.shape[0], np_ = (n + NR - 1) / NR, kq = (k + 3) / 4;
        if (n < 0 || width < 1 || pitch < 0 || step < 1) {
            onyx_fail("pack_rows: n must not be negative, width and step must be positive");
            goto done;
        }
        if (ONYX_EXPECT_SHAPE(&pk, "pack_rows: packed", np_, kq, NR, 4) < 0) goto done;
        const int64_t *offs = (const int64_t *)off.data;
        const Py_ssize_t last = n > 0 ? ((n - 1) / width) * pitch + ((n - 1 < width ? n - 1 : width - 1)) * step : 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            if (n > 0 && (offs[i] < 0 || offs[i] + last >= src.shape[0])) {
                onyx_fail("pack_rows: a row runs outside the source buffer");
                goto done;
            }
        }
        rows_src s = {(const uint8_t *)src.data, offs, k, n, width, pitch, step, (uint8_t)(flip ? 0x80 : 0)};
        uint8_t *dst = (uint8_t *)pk.data;
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
        if (step == 1 && width >= n) {
            /* blocks of up to 8 panels (256 columns), at least one block per thread */
            Py_ssize_t blk = np_ / (nt > 0 ? nt : 1);
            blk = blk < 1 ? 1 : blk > 8 ? 8 : blk;
            const Py_ssize_t nb = (np_ + blk - 1) / blk;
            ONYX_PARALLEL_FOR(nt)
            for (Py_ssize_t b = 0; b < nb; b++)
                pack_rows_block(&s, b * blk, (b + 1) * blk < np_ ? (b + 1) * blk : np_, dst);
        } else {
            ONYX_PARALLEL_FOR(nt)
            for (Py_ssize_t p = 0; p < np_; p++) pack_rows_panel(&s, p, dst + p * kq * NR * 4);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&src, &off, &pk);
    return result;
}

/* Requantization fused into the GEMM's store (NULL: int32 out): byte = saturate(rint(acc * scale) + zp),
 * scale one value (mode 0), per row (1) or per column (2); the same arithmetic as requant_row. */
typedef struct {
    uint8_t *out;
    Py_ssize_t ldo;
    const float *scale;
    int mode, zp;
    float lo, hi; /* the output range less the zero point */
    /* wp > 0: the columns are a convolution's output computed on a padded width wp, of which the first ow
     * of every row are stored, packed (column c to (c / wp) * ow + c % wp): no copy out afterwards */
    Py_ssize_t wp, ow;
} requant_spec;

/* Stores row r of a requantized tile (nj bytes of columns col0...) with rq's padded-width remap. */
ONYX_INLINE void store_remapped(const requant_spec *rq, Py_ssize_t row, Py_ssize_t col0, const uint8_t *bytes,
                                Py_ssize_t nj) {
    uint8_t *dst = rq->out + row * rq->ldo;
    Py_ssize_t j = 0, y = col0 / rq->wp, x = col0 % rq->wp;
    while (j < nj) {
        const Py_ssize_t seg = rq->wp - x < nj - j ? rq->wp - x : nj - j;
        if (x < rq->ow) {
            const Py_ssize_t cnt = rq->ow - x < seg ? rq->ow - x : seg;
            memcpy(dst + y * rq->ow + x, bytes + j, (size_t)cnt);
        }
        j += seg;
        y++;
        x = 0;
    }
}

/* ---- the tile: mr rows of A times one panel ---- */

#if ONYX_HAVE_VNNI_BUILD
/* The k loop of an MR x 32 tile, in sixteen named accumulators x00 .. x71 (as an array, gcc copied them
 * between register sets and the stack on every k-quad: twice the instructions), then gathered into ACC.
 * Row R's 4 bytes at k-quad q are at QUAD(R), the quad's 128 panel bytes at PANEL (both read q); mr (the
 * rows, a constant in each instantiation) and a_unsigned (whether the row bytes are the unsigned operand)
 * are in scope. */
#define TILE_ROW(R, QUAD)                                                                                       \
    if (mr > R) {                                                                                               \
        int32_t quad;                                                                                           \
        memcpy(&quad, QUAD(R), 4);                                                                              \
        const __m512i s = _mm512_set1_epi32(quad);                                                              \
        x##R##0 = a_unsigned ? _mm512_dpbusd_epi32(x##R##0, s, v0) : _mm512_dpbusd_epi32(x##R##0, v0, s);      \
        x##R##1 = a_unsigned ? _mm512_dpbusd_epi32(x##R##1, s, v1) : _mm512_dpbusd_epi32(x##R##1, v1, s);      \
    }
#define TILE_LOOP(ACC, KQ, PANEL, QUAD)                                                                        \
    __m512i x00 = _mm512_setzero_si512(), x01 = x00, x10 = x00, x11 = x00, x20 = x00, x21 = x00, x30 = x00,     \
            x31 = x00, x40 = x00, x41 = x00, x50 = x00, x51 = x00, x60 = x00, x61 = x00, x70 = x00, x71 = x00;  \
    for (Py_ssize_t q = 0; q < (KQ); q++) {                                                                     \
        const uint8_t *vq = (PANEL);                                                                            \
        const __m512i v0 = _mm512_loadu_si512((const void *)vq);                                                \
        const __m512i v1 = _mm512_loadu_si512((const void *)(vq + 64));                                         \
        TILE_ROW(0, QUAD) TILE_ROW(1, QUAD) TILE_ROW(2, QUAD) TILE_ROW(3, QUAD)                                 \
        TILE_ROW(4, QUAD) TILE_ROW(5, QUAD) TILE_ROW(6, QUAD) TILE_ROW(7, QUAD)                                 \
    }                                                                                                           \
    __m512i ACC[MR][2] = {{x00, x01}, {x10, x11}, {x20, x21}, {x30, x31},                                       \
                          {x40, x41}, {x50, x51}, {x60, x61}, {x70, x71}};

/* store_remapped with masked stores of the row's 32 bytes (no call per segment) */
VNNI_TARGET ONYX_INLINE void store_remapped_vnni(const requant_spec *rq, Py_ssize_t row, Py_ssize_t col0,
                                                 const uint8_t *bytes, Py_ssize_t nj) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)bytes);
    uint8_t *dst = rq->out + row * rq->ldo;
    Py_ssize_t j = 0, y = col0 / rq->wp, x = col0 % rq->wp;
    while (j < nj) {
        const Py_ssize_t seg = rq->wp - x < nj - j ? rq->wp - x : nj - j;
        if (x < rq->ow) {
            const Py_ssize_t cnt = rq->ow - x < seg ? rq->ow - x : seg;
            /* lanes j .. j + cnt - 1 of v to dst + y ow + x: the store's base is j bytes before (masked
             * lanes are not written, and do not fault) */
            const __mmask32 mask = (__mmask32)((cnt >= 32 ? 0xFFFFFFFFu : ((1u << cnt) - 1u)) << j);
            _mm256_mask_storeu_epi8((void *)(dst + y * rq->ow + x - j), mask, v);
        }
        j += seg;
        y++;
        x = 0;
    }
}

/* a_unsigned: A is uint8 and the panel int8; else A int8 and the panel uint8. */
VNNI_TARGET ONYX_INLINE void tile_vnni(const int mr, const int a_unsigned, const uint8_t *a, Py_ssize_t lda,
                                       const uint8_t *panel, const int64_t *qoff, Py_ssize_t kq, int32_t *c,
                                       Py_ssize_t ldc,
                                       Py_ssize_t nj, const int32_t *roff, const int32_t *coff,
                                       const requant_spec *rq, Py_ssize_t row0, Py_ssize_t col0) {
#define QUAD_OF_A(R) (a + (R) * lda + 4 * q)
    TILE_LOOP(acc, kq, qoff != NULL ? panel + qoff[q] : panel + q * NR * 4, QUAD_OF_A)
#undef QUAD_OF_A
    const __mmask16 m0 = nj >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nj) - 1);
    const __mmask16 m1 = nj >= 32 ? (__mmask16)0xFFFF : nj > 16 ? (__mmask16)((1u << (nj - 16)) - 1) : 0;
    if (coff != NULL) {
        const __m512i c0 = _mm512_maskz_loadu_epi32(m0, coff), c1 = _mm512_maskz_loadu_epi32(m1, coff + 16);
        for (int r = 0; r < mr; r++) {
            acc[r][0] = _mm512_add_epi32(acc[r][0], c0);
            acc[r][1] = _mm512_add_epi32(acc[r][1], c1);
        }
    }
    if (roff != NULL) {
        for (int r = 0; r < mr; r++) {
            const __m512i o = _mm512_set1_epi32(roff[r]);
            acc[r][0] = _mm512_add_epi32(acc[r][0], o);
            acc[r][1] = _mm512_add_epi32(acc[r][1], o);
        }
    }
    if (rq != NULL) {
        const __m512 lo = _mm512_set1_ps(rq->lo), hi = _mm512_set1_ps(rq->hi);
        const __m512i zp = _mm512_set1_epi32(rq->zp);
        uint8_t row_bytes[NR];
        for (int r = 0; r < mr; r++) {
            for (int h = 0; h < 2; h++) {
                const __mmask16 mh = h ? m1 : m0;
                if (!mh) continue;
                __m512 sc;
                if (rq->mode == 2)
                    sc = _mm512_maskz_loadu_ps(mh, rq->scale + col0 + 16 * h);
                else
                    sc = _mm512_set1_ps(rq->mode == 1 ? rq->scale[row0 + r] : rq->scale[0]);
                __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][h]), sc);
                f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
                const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), zp); /* round half to even */
                uint8_t *to = rq->wp ? row_bytes + 16 * h : rq->out + (row0 + r) * rq->ldo + col0 + 16 * h;
                _mm_mask_storeu_epi8((void *)to, mh, _mm512_cvtepi32_epi8(q));
            }
            if (rq->wp) store_remapped_vnni(rq, row0 + r, col0, row_bytes, nj);
        }
        return;
    }
    for (int r = 0; r < mr; r++) {
        _mm512_mask_storeu_epi32((void *)(c + r * ldc), m0, acc[r][0]);
        if (m1) _mm512_mask_storeu_epi32((void *)(c + r * ldc + 16), m1, acc[r][1]);
    }
}

#define TILE_CASES(AU, QO)                                                                                  \
    switch (mr) {                                                                                         \
    case 8: tile_vnni(8, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    case 7: tile_vnni(7, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    case 6: tile_vnni(6, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    case 5: tile_vnni(5, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    case 4: tile_vnni(4, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    case 3: tile_vnni(3, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    case 2: tile_vnni(2, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                       \
    default: tile_vnni(1, AU, a, lda, panel, QO, kq, c, ldc, nj, ro, coff, rq, row0 + i, col0); break;                                      \
    }

VNNI_TARGET static void rows_vnni(int a_unsigned, const uint8_t *a0, Py_ssize_t lda, Py_ssize_t rows,
                                  const uint8_t *panel, const int64_t *qoff, Py_ssize_t kq, int32_t *c0, Py_ssize_t ldc, Py_ssize_t nj,
                                  const int32_t *roff, const int32_t *coff, const requant_spec *rq, Py_ssize_t row0,
                                  Py_ssize_t col0) {
    for (Py_ssize_t i = 0; i < rows; i += MR) {
        const int mr = rows - i < MR ? (int)(rows - i) : MR;
        const uint8_t *a = a0 + i * lda;
        int32_t *c = c0 == NULL ? NULL : c0 + i * ldc;
        const int32_t *ro = roff == NULL ? NULL : roff + i;
        if (qoff != NULL) {
            if (a_unsigned) {
                TILE_CASES(1, qoff)
            } else {
                TILE_CASES(0, qoff)
            }
        } else if (a_unsigned) {
            TILE_CASES(1, NULL)
        } else {
            TILE_CASES(0, NULL)
        }
    }
}
#endif

/* The same product without VNNI: exact int32 sums of the packed layout. */
ONYX_VECTOR static void rows_plain(int a_unsigned, const uint8_t *a0, Py_ssize_t lda, Py_ssize_t rows,
                                   const uint8_t *panel, const int64_t *qoff, Py_ssize_t kq, int32_t *c0, Py_ssize_t ldc, Py_ssize_t nj,
                                   const int32_t *roff, const int32_t *coff, const requant_spec *rq, Py_ssize_t row0,
                                   Py_ssize_t col0) {
    for (Py_ssize_t i = 0; i < rows; i++) {
        int32_t acc[NR] = {0};
        const uint8_t *a = a0 + i * lda;
        for (Py_ssize_t q = 0; q < kq; q++) {
            const uint8_t *v = qoff != NULL ? panel + qoff[q] : panel + q * NR * 4;
            int32_t s[4];
            for (int r = 0; r < 4; r++) s[r] = a_unsigned ? (int32_t)a[4 * q + r] : (int32_t)(int8_t)a[4 * q + r];
            if (a_unsigned) {
                for (int j = 0; j < NR; j++)
                    acc[j] += s[0] * (int8_t)v[4 * j] + s[1] * (int8_t)v[4 * j + 1] + s[2] * (int8_t)v[4 * j + 2] +
                              s[3] * (int8_t)v[4 * j + 3];
            } else {
                for (int j = 0; j < NR; j++)
                    acc[j] += s[0] * v[4 * j] + s[1] * v[4 * j + 1] + s[2] * v[4 * j + 2] + s[3] * v[4 * j + 3];
            }
        }
        const int32_t ro = roff == NULL ? 0 : roff[i];
        for (Py_ssize_t j = 0; j < nj; j++) acc[j] += ro + (coff == NULL ? 0 : coff[j]);
        if (rq != NULL) {
            uint8_t row_bytes[NR];
            uint8_t *o = rq->wp ? row_bytes : rq->out + (row0 + i) * rq->ldo + col0;
            for (Py_ssize_t j = 0; j < nj; j++) {
                const float sc = rq->mode == 2 ? rq->scale[col0 + j] : rq->mode == 1 ? rq->scale[row0 + i] : rq->scale[0];
                float v = (float)acc[j] * sc;
                v = v < rq->lo ? rq->lo : v > rq->hi ? rq->hi : v;
                o[j] = (uint8_t)((int)nearbyintf(v) + rq->zp);
            }
            if (rq->wp) store_remapped(rq, row0 + i, col0, row_bytes, nj);
            continue;
        }
        for (Py_ssize_t j = 0; j < nj; j++) c0[i * ldc + j] = acc[j];
    }
}

/* The B operand of a product: packed panels (pack, pack_rows), or "shifted" bytes read in place: k-quad
 * q of columns [j, j + 32) is the 128 bytes at src + qoff[q] + 4 j (a convolution's input with four
 * channels interleaved, every kernel tap a shift of it: no column matrix at all). */
typedef struct {
    const uint8_t *data;
    const int64_t *qoff; /* NULL: packed panels */
    Py_ssize_t np_, kq;
} b_operand;

/* Requantization arguments (scale None: int32 out) checked and turned into a requant_spec. */
static int requant_setup(const onyx_array *sa, int fused, int qmode, int qzp, int qsigned, const onyx_array *c,
                         Py_ssize_t m, Py_ssize_t n, requant_spec *spec) {
    memset(spec, 0, sizeof *spec);
    if (!fused) return 0;
    const Py_ssize_t want = qmode == 1 ? m : qmode == 2 ? n : 1;
    if (qmode < 0 || qmode > 2 || sa->shape[0] != want) {
        onyx_fail("gemm: scale must hold one value (mode 0), one per row (1) or one per column (2)");
        return -1;
    }
    spec->out = (uint8_t *)c->data;
    spec->ldo = c->strides[0];
    spec->scale = (const float *)sa->data;
    spec->mode = qmode;
    spec->zp = qzp;
    spec->lo = (float)((qsigned ? -128 : 0) - qzp);
    spec->hi = (float)((qsigned ? 127 : 255) - qzp);
    return 0;
}

/* out (M, N) = a (M, 4 kq) . b (+ offsets), checked shapes; runs without the GIL. */
static int gemm_run(const onyx_array *a, const b_operand *b, const onyx_array *c, Py_ssize_t n, const onyx_array *rof,
                    const onyx_array *cof, const requant_spec *rq, int a_unsigned, int threads, int allow_vnni) {
    const Py_ssize_t m = a->shape[0], kp = a->shape[1], np_ = b->np_, kq = b->kq;
    if (kp != 4 * kq) {
        onyx_fail("gemm: a's row length must be 4 x the packed operand's k-quads");
        return -1;
    }
    if (ONYX_EXPECT_SHAPE(c, "gemm: out", m, -1) < 0) return -1;
    if (rq != NULL && rq->wp) {
        /* n columns on the padded width: (n + wp - ow) / wp output rows of ow */
        if (rq->ow < 1 || rq->ow > rq->wp || (n + rq->wp - rq->ow) % rq->wp != 0 ||
            c->shape[1] != (n + rq->wp - rq->ow) / rq->wp * rq->ow) {
            onyx_fail("gemm: out must hold the ow first of every wp columns");
            return -1;
        }
    } else if (c->shape[1] != n) {
        onyx_fail("gemm: out must have n columns");
        return -1;
    }
    if (n > np_ * NR || n <= (np_ - 1) * NR || (c->shape[1] > 1 && c->strides[1] != 1)) {
        onyx_fail("gemm: out's columns do not match the packed operand, or are not contiguous");
        return -1;
    }
    if ((rof->held && rof->shape[0] != m) || (cof->held && cof->shape[0] != n)) {
        onyx_fail("gemm: row offsets must have one value per row of out, column offsets one per column");
        return -1;
    }
    if (m == 0 || n == 0) return 0;
    const int32_t *roff = rof->held ? (const int32_t *)rof->data : NULL;
    const int32_t *coff_all = cof->held ? (const int32_t *)cof->data : NULL;
    const uint8_t *ad = (const uint8_t *)a->data, *pd = b->data;
    const int64_t *qoff = b->qoff;
    int32_t *cd = rq != NULL ? NULL : (int32_t *)c->data;
    /* rows of a per task: as many as stay in L2 (~512 KB) beside a panel, so that each panel (the
     * larger operand, streamed) is read once per group */
    Py_ssize_t rg = (Py_ssize_t)(512 * 1024) / (kp > 0 ? kp : 1);
    rg = rg < MR ? MR : rg - rg % MR;
    if (rg > m) rg = m;
    if (rg < 1) rg = 1;
    const Py_ssize_t ldc = c->strides[0], groups = (m + rg - 1) / rg, tasks = groups * np_;
    const int vnni = allow_vnni && cpu_has_vnni();
    const int nt = onyx_threads(threads);
    Py_BEGIN_ALLOW_THREADS
    /* tasks taken one at a time: a thread that loses its core (a busy machine) holds up one task, not
     * a static share of them */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (Py_ssize_t t = 0; t < tasks; t++) {
        const Py_ssize_t p = t % np_, g = t / np_;
        const Py_ssize_t i0 = g * rg, rows = m - i0 < rg ? m - i0 : rg;
        const Py_ssize_t nj = n - p * NR < NR ? n - p * NR : NR;
        const uint8_t *panel = qoff != NULL ? pd + p * NR * 4 : pd + p * kq * NR * 4;
        int32_t *cc = rq != NULL ? NULL : cd + i0 * ldc + p * NR;
        const int32_t *ro = roff == NULL ? NULL : roff + i0;
        const int32_t *cf = coff_all == NULL ? NULL : coff_all + p * NR;
#if ONYX_HAVE_VNNI_BUILD
        if (vnni) {
            rows_vnni(a_unsigned, ad + i0 * kp, kp, rows, panel, qoff, kq, cc, ldc, nj, ro, cf, rq, i0, p * NR);
            continue;
        }
#endif
        rows_plain(a_unsigned, ad + i0 * kp, kp, rows, panel, qoff, kq, cc, ldc, nj, ro, cf, rq, i0, p * NR);
    }
    Py_END_ALLOW_THREADS
    (void)vnni;
    return 0;
}

static PyObject *py_gemm(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ao, *po, *co, *roo, *coo, *so = Py_None;
    int a_unsigned, threads, allow_vnni, qmode = -1, qzp = 0, qsigned = 0;
    if (!PyArg_ParseTuple(args, "OOOiiiOO|Oiii", &ao, &po, &co, &a_unsigned, &threads, &allow_vnni, &roo, &coo, &so,
                          &qmode, &qzp, &qsigned))
        return NULL;
    onyx_array a, pk, c, rof, cof, sa;
    PyObject *result = NULL;
    const int fused = so != Py_None;
    if (ONYX_GET_ARGS(NULL, {ao, &a, 'B', 2, ONYX_DENSE, "gemm: a (uint8 view)"},
                      {po, &pk, 'B', 4, ONYX_DENSE, "gemm: packed"},
                      {co, &c, fused ? 'B' : 'i', 2, ONYX_OUT, fused ? "gemm: out (uint8 view)" : "gemm: out"},
                      {roo, &rof, 'i', 1, ONYX_DENSE | ONYX_OPTIONAL, "gemm: row_offsets"},
                      {coo, &cof, 'i', 1, ONYX_DENSE | ONYX_OPTIONAL, "gemm: col_offsets"},
                      {so, &sa, 'f', 1, ONYX_DENSE | ONYX_OPTIONAL, "gemm: scale"}) < 0)
        goto done;
    requant_spec spec;
    if (requant_setup(&sa, fused, qmode, qzp, qsigned, &c, a.shape[0], c.shape[1], &spec) < 0) goto done;
    if (ONYX_EXPECT_SHAPE(&pk, "gemm: packed", -1, -1, NR, 4) < 0) goto done;
    {
        const b_operand b = {(const uint8_t *)pk.data, NULL, pk.shape[0], pk.shape[1]};
        if (gemm_run(&a, &b, &c, c.shape[1], &rof, &cof, fused ? &spec : NULL, a_unsigned, threads, allow_vnni) < 0)
            goto done;
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&a, &pk, &c, &rof, &cof, &sa);
    return result;
}

static PyObject *py_gemm_shifted(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ao, *bo, *qo, *co, *roo, *coo, *so = Py_None;
    Py_ssize_t n, wp = 0, ow = 0;
    int a_unsigned, threads, allow_vnni, qmode = -1, qzp = 0, qsigned = 0;
    if (!PyArg_ParseTuple(args, "OOOOniiiOO|Oiiinn", &ao, &bo, &qo, &co, &n, &a_unsigned, &threads, &allow_vnni, &roo,
                          &coo, &so, &qmode, &qzp, &qsigned, &wp, &ow))
        return NULL;
    onyx_array a, src, qf, c, rof, cof, sa;
    PyObject *result = NULL;
    const int fused = so != Py_None;
    if (ONYX_GET_ARGS(NULL, {ao, &a, 'B', 2, ONYX_DENSE, "gemm_shifted: a (uint8 view)"},
                      {bo, &src, 'B', 1, ONYX_DENSE, "gemm_shifted: src (uint8 view)"},
                      {qo, &qf, 'q', 1, ONYX_DENSE, "gemm_shifted: quad offsets"},
                      {co, &c, fused ? 'B' : 'i', 2, ONYX_OUT, fused ? "gemm_shifted: out (uint8 view)" : "gemm_shifted: out"},
                      {roo, &rof, 'i', 1, ONYX_DENSE | ONYX_OPTIONAL, "gemm_shifted: row_offsets"},
                      {coo, &cof, 'i', 1, ONYX_DENSE | ONYX_OPTIONAL, "gemm_shifted: col_offsets"},
                      {so, &sa, 'f', 1, ONYX_DENSE | ONYX_OPTIONAL, "gemm_shifted: scale"}) < 0)
        goto done;
    if (n < 0 || wp < 0 || (wp > 0 && !fused)) {
        onyx_fail("gemm_shifted: n must not be negative; a padded width (wp) needs a requantized (scaled) out");
        goto done;
    }
    requant_spec spec;
    if (requant_setup(&sa, fused, qmode, qzp, qsigned, &c, a.shape[0], n, &spec) < 0) goto done;
    spec.wp = wp;
    spec.ow = ow;
    {
        const Py_ssize_t np_ = (n + NR - 1) / NR, kq = qf.shape[0];
        const int64_t *qoff = (const int64_t *)qf.data;
        /* every quad reads 4 * NR * np_ bytes from its offset: all inside src */
        for (Py_ssize_t q = 0; q < kq; q++) {
            if (qoff[q] < 0 || qoff[q] + 4 * NR * np_ > src.shape[0]) {
                onyx_fail("gemm_shifted: a quad's columns run outside the source buffer");
                goto done;
            }
        }
        const b_operand b = {(const uint8_t *)src.data, qoff, np_, kq};
        if (gemm_run(&a, &b, &c, n, &rof, &cof, fused ? &spec : NULL, a_unsigned, threads, allow_vnni) < 0) goto done;
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&a, &src, &qf, &c, &rof, &cof, &sa);
    return result;
}

/* ---- a convolution with output positions as the GEMM's rows (small images) ----
 *
 * gemm_shifted puts output positions on the 32-column panels: an image of 7 x 7 positions (61 columns on
 * the padded width) fills two panels, 64 columns, for 49 outputs. Here the rows are the positions, read
 * in place from interleave_conv's bytes (row p, k-quad q: the 4 bytes at qoff[q] + 4 pp(p), pp(p) the
 * position on the padded width), the panels hold the weights (packed once, per output channel), and the
 * tile's bytes are stored transposed into the (channels, positions) output. Activations are the unsigned
 * operand, weights the signed one. */
typedef struct {
    const uint8_t *src;
    const int64_t *qoff;
    Py_ssize_t kq, positions, wph, ow;
    const uint8_t *panels; /* (np, kq, 32, 4) */
    Py_ssize_t channels;
    const int32_t *coff; /* per channel */
    const float *scale;  /* per channel, or one */
    int per_channel, zp;
    float lo, hi;
    uint8_t *out; /* (channels, positions) */
} rows_conv;

/* The requantized bytes of one tile (mr positions x nj channels), stored transposed. */
static inline void store_transposed(const rows_conv *g, Py_ssize_t row0, int mr, Py_ssize_t col0, Py_ssize_t nj,
                                    uint8_t bytes[MR][NR]) {
    for (Py_ssize_t j = 0; j < nj; j++) {
        uint8_t *o = g->out + (col0 + j) * g->positions + row0;
        for (int r = 0; r < mr; r++) o[r] = bytes[r][j];
    }
}

static inline Py_ssize_t padded_position(const rows_conv *g, Py_ssize_t p) {
    return (p / g->ow) * g->wph + p % g->ow;
}

#if ONYX_HAVE_VNNI_BUILD
VNNI_TARGET ONYX_INLINE void tile_rows_vnni(const int mr, const rows_conv *g, Py_ssize_t row0, Py_ssize_t p) {
    const uint8_t *r0 = g->src + 4 * padded_position(g, row0);
    const uint8_t *rp[MR];
    for (int r = 0; r < MR; r++) rp[r] = r < mr ? g->src + 4 * padded_position(g, row0 + r) : r0;
    const uint8_t *panel = g->panels + p * g->kq * NR * 4;
    const int a_unsigned = 1; /* the activations */
#define QUAD_OF_POSITION(R) (rp[R] + g->qoff[q])
    TILE_LOOP(acc, g->kq, panel + q * NR * 4, QUAD_OF_POSITION)
#undef QUAD_OF_POSITION
    const Py_ssize_t col0 = p * NR, nj = g->channels - col0 < NR ? g->channels - col0 : NR;
    const __mmask16 m0 = nj >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nj) - 1);
    const __mmask16 m1 = nj >= 32 ? (__mmask16)0xFFFF : nj > 16 ? (__mmask16)((1u << (nj - 16)) - 1) : 0;
    const __m512i c0 = _mm512_maskz_loadu_epi32(m0, g->coff + col0);
    const __m512i c1 = _mm512_maskz_loadu_epi32(m1, g->coff + col0 + 16);
    const __m512 s0 = g->per_channel ? _mm512_maskz_loadu_ps(m0, g->scale + col0) : _mm512_set1_ps(g->scale[0]);
    const __m512 s1 = g->per_channel ? _mm512_maskz_loadu_ps(m1, g->scale + col0 + 16) : _mm512_set1_ps(g->scale[0]);
    const __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);
    const __m512i zp = _mm512_set1_epi32(g->zp);
    uint8_t bytes[MR][NR];
    for (int r = 0; r < mr; r++) {
        for (int h = 0; h < 2; h++) {
            const __m512i a = _mm512_add_epi32(acc[r][h], h ? c1 : c0);
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(a), h ? s1 : s0);
            f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
            const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), zp); /* round half to even */
            _mm_storeu_si128((__m128i *)(bytes[r] + 16 * h), _mm512_cvtepi32_epi8(q));
        }
    }
    store_transposed(g, row0, mr, col0, nj, bytes);
}

VNNI_TARGET static void conv_rows_vnni(const rows_conv *g, int mr, Py_ssize_t row0, Py_ssize_t p) {
    switch (mr) {
    case 8: tile_rows_vnni(8, g, row0, p); break;
    case 7: tile_rows_vnni(7, g, row0, p); break;
    case 6: tile_rows_vnni(6, g, row0, p); break;
    case 5: tile_rows_vnni(5, g, row0, p); break;
    case 4: tile_rows_vnni(4, g, row0, p); break;
    case 3: tile_rows_vnni(3, g, row0, p); break;
    case 2: tile_rows_vnni(2, g, row0, p); break;
    default: tile_rows_vnni(1, g, row0, p); break;
    }
}
#endif

/* The same tile without VNNI. */
ONYX_VECTOR static void tile_rows_plain(const int mr, const rows_conv *g, Py_ssize_t row0, Py_ssize_t p) {
    const uint8_t *panel = g->panels + p * g->kq * NR * 4;
    const Py_ssize_t col0 = p * NR, nj = g->channels - col0 < NR ? g->channels - col0 : NR;
    uint8_t bytes[MR][NR];
    for (int r = 0; r < mr; r++) {
        const uint8_t *a = g->src + 4 * padded_position(g, row0 + r);
        int32_t acc[NR] = {0};
        for (Py_ssize_t q = 0; q < g->kq; q++) {
            const uint8_t *v = panel + q * NR * 4, *s = a + g->qoff[q];
            for (int j = 0; j < NR; j++)
                acc[j] += s[0] * (int8_t)v[4 * j] + s[1] * (int8_t)v[4 * j + 1] + s[2] * (int8_t)v[4 * j + 2] +
                          s[3] * (int8_t)v[4 * j + 3];
        }
        for (Py_ssize_t j = 0; j < nj; j++) {
            const float sc = g->per_channel ? g->scale[col0 + j] : g->scale[0];
            float v = (float)(acc[j] + g->coff[col0 + j]) * sc;
            v = v < g->lo ? g->lo : v > g->hi ? g->hi : v;
            bytes[r][j] = (uint8_t)((int)nearbyintf(v) + g->zp);
        }
    }
    store_transposed(g, row0, mr, col0, nj, bytes);
}

static PyObject *py_conv_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *so, *qo, *po, *co, *sco, *oo;
    Py_ssize_t wph, ow;
    int zp, is_signed, threads, allow_vnni;
    if (!PyArg_ParseTuple(args, "OOnnOOOiOiii", &so, &qo, &wph, &ow, &po, &co, &sco, &zp, &oo, &is_signed, &threads,
                          &allow_vnni))
        return NULL;
    onyx_array src, qf, pk, cof, sc, out;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {so, &src, 'B', 1, ONYX_DENSE, "conv_rows: src (uint8 view)"},
                      {qo, &qf, 'q', 1, ONYX_DENSE, "conv_rows: quad offsets"},
                      {po, &pk, 'B', 4, ONYX_DENSE, "conv_rows: packed weights"},
                      {co, &cof, 'i', 1, ONYX_DENSE, "conv_rows: channel offsets"},
                      {sco, &sc, 'f', 1, ONYX_DENSE, "conv_rows: scale"},
                      {oo, &out, 'B', 2, ONYX_OUT | ONYX_DENSE, "conv_rows: out (uint8 view)"}) < 0)
        goto done;
    {
        rows_conv g;
        g.src = (const uint8_t *)src.data;
        g.qoff = (const int64_t *)qf.data;
        g.kq = qf.shape[0];
        g.channels = out.shape[0];
        g.positions = out.shape[1];
        g.wph = wph;
        g.ow = ow;
        g.panels = (const uint8_t *)pk.data;
        g.coff = (const int32_t *)cof.data;
        g.scale = (const float *)sc.data;
        g.per_channel = sc.shape[0] != 1;
        g.zp = zp;
        g.lo = (float)((is_signed ? -128 : 0) - zp);
        g.hi = (float)((is_signed ? 127 : 255) - zp);
        g.out = (uint8_t *)out.data;
        const Py_ssize_t np_ = (g.channels + NR - 1) / NR;
        if (ONYX_EXPECT_SHAPE(&pk, "conv_rows: packed weights", np_, g.kq, NR, 4) < 0) goto done;
        if (cof.shape[0] != g.channels || (g.per_channel && sc.shape[0] != g.channels)) {
            onyx_fail("conv_rows: one offset per channel, and one scale or one per channel");
            goto done;
        }
        if (ow < 1 || wph < ow || (g.positions > 0 && g.positions % ow != 0)) {
            onyx_fail("conv_rows: out's positions must be whole rows of ow, wph >= ow >= 1");
            goto done;
        }
        /* the last position's quads stay inside src */
        const Py_ssize_t last = g.positions > 0 ? 4 * padded_position(&g, g.positions - 1) + 4 : 0;
        for (Py_ssize_t q = 0; q < g.kq; q++) {
            if (g.positions > 0 && (g.qoff[q] < 0 || g.qoff[q] + last > src.shape[0])) {
                onyx_fail("conv_rows: a quad's positions run outside the source buffer");
                goto done;
            }
        }
        const Py_ssize_t groups = (g.positions + MR - 1) / MR, tasks = groups * np_;
        const int vnni = allow_vnni && cpu_has_vnni();
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
        for (Py_ssize_t t = 0; t < tasks; t++) {
            /* panel-major: the tasks of one thread share a panel of weights while it stays in cache */
            const Py_ssize_t p = t / groups, i = t % groups, row0 = i * MR;
            const int mr = g.positions - row0 < MR ? (int)(g.positions - row0) : MR;
#if ONYX_HAVE_VNNI_BUILD
            if (vnni) {
                conv_rows_vnni(&g, mr, row0, p);
                continue;
            }
#endif
            tile_rows_plain(mr, &g, row0, p);
        }
        Py_END_ALLOW_THREADS
        (void)vnni;
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&src, &qf, &pk, &cof, &sc, &out);
    return result;
}

/* A convolution's input for gemm_shifted in one pass: four channels of x (C, H, W) interleaved, padded
 * with `value` (pt rows above, pl columns left; beyond the input on the other sides) and split into the
 * stride phases (a, b) its kernel reads: dst[g][p][r][c] = padded x[4 g + i][r sh + a][c sw + b]. */
typedef struct {
    const uint8_t *x;
    Py_ssize_t channels, h, w, sh, sw, pt, pl, hph, wph, len_out;
    const int64_t *phases; /* (a, b) pairs */
    Py_ssize_t n_phases;
    uint8_t value, flip;
} conv_input;

ONYX_VECTOR static void interleave_conv_group(const conv_input *s, Py_ssize_t g, uint8_t *dst) {
    static const uint8_t zeros[1] = {0};
    const uint8_t *plane[4];
    uint32_t f[4], pad = 0;
    int valid[4];
    for (int i = 0; i < 4; i++) {
        const Py_ssize_t c = 4 * g + i;
        valid[i] = c < s->channels;
        plane[i] = valid[i] ? s->x + c * s->h * s->w : zeros;
        f[i] = valid[i] ? s->flip : 0;
        pad |= valid[i] ? (uint32_t)(uint8_t)(s->value ^ s->flip) << (8 * i) : 0u;
    }
    uint32_t *o = (uint32_t *)dst;
    for (Py_ssize_t p = 0; p < s->n_phases; p++) {
        const Py_ssize_t a = s->phases[2 * p], b = s->phases[2 * p + 1];
        /* phase columns c whose input column c sw + b - pl lies in [0, w) */
        Py_ssize_t c0 = s->pl - b > 0 ? (s->pl - b + s->sw - 1) / s->sw : 0;
        Py_ssize_t c1 = s->w + s->pl - b > 0 ? (s->w + s->pl - b + s->sw - 1) / s->sw : 0;
        c1 = c1 < s->wph ? c1 : s->wph;
        c0 = c0 < c1 ? c0 : c1;
        for (Py_ssize_t r = 0; r < s->hph; r++) {
            uint32_t *row = o + (p * s->hph + r) * s->wph;
            const Py_ssize_t y = r * s->sh + a - s->pt;
            if (y < 0 || y >= s->h) {
                for (Py_ssize_t c = 0; c < s->wph; c++) row[c] = pad;
                continue;
            }
            for (Py_ssize_t c = 0; c < c0; c++) row[c] = pad;
            for (Py_ssize_t c = c1; c < s->wph; c++) row[c] = pad;
            const Py_ssize_t x0 = c0 * s->sw + b - s->pl;
            const uint8_t *r0 = plane[0] + (valid[0] ? y * s->w + x0 : 0);
            const uint8_t *r1 = plane[1] + (valid[1] ? y * s->w + x0 : 0);
            const uint8_t *r2 = plane[2] + (valid[2] ? y * s->w + x0 : 0);
            const uint8_t *r3 = plane[3] + (valid[3] ? y * s->w + x0 : 0);
            uint32_t *out = row + c0;
            const Py_ssize_t cnt = c1 - c0;
            if (valid[3] && s->sw == 1) {
                for (Py_ssize_t c = 0; c < cnt; c++)
                    out[c] = ((uint32_t)r0[c] ^ f[0]) | (((uint32_t)r1[c] ^ f[1]) << 8) |
                             (((uint32_t)r2[c] ^ f[2]) << 16) | (((uint32_t)r3[c] ^ f[3]) << 24);
            } else if (valid[3]) {
                const Py_ssize_t sw = s->sw;
                for (Py_ssize_t c = 0; c < cnt; c++)
                    out[c] = ((uint32_t)r0[c * sw] ^ f[0]) | (((uint32_t)r1[c * sw] ^ f[1]) << 8) |
                             (((uint32_t)r2[c * sw] ^ f[2]) << 16) | (((uint32_t)r3[c * sw] ^ f[3]) << 24);
            } else {
                const Py_ssize_t sw = s->sw;
                for (Py_ssize_t c = 0; c < cnt; c++) {
                    uint32_t v = 0;
                    v |= valid[0] ? ((uint32_t)r0[c * sw] ^ f[0]) : 0u;
                    v |= valid[1] ? ((uint32_t)r1[c * sw] ^ f[1]) << 8 : 0u;
                    v |= valid[2] ? ((uint32_t)r2[c * sw] ^ f[2]) << 16 : 0u;
                    out[c] = v;
                }
            }
        }
    }
    for (Py_ssize_t l = s->n_phases * s->hph * s->wph; l < s->len_out; l++) o[l] = 0;
}

static PyObject *py_interleave_conv(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *xo, *po, *doo;
    conv_input s;
    int value, flip, threads;
    if (!PyArg_ParseTuple(args, "OOOnnnnnniii", &xo, &po, &doo, &s.sh, &s.sw, &s.pt, &s.pl, &s.hph, &s.wph, &value,
                          &flip, &threads))
        return NULL;
    onyx_array x, ph, dst;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {xo, &x, 'B', 3, ONYX_DENSE, "interleave_conv: x (uint8 view)"},
                      {po, &ph, 'q', 2, ONYX_DENSE, "interleave_conv: phases"},
                      {doo, &dst, 'B', 3, ONYX_OUT | ONYX_DENSE, "interleave_conv: dst"}) < 0)
        goto done;
    {
        s.x = (const uint8_t *)x.data;
        s.channels = x.shape[0];
        s.h = x.shape[1];
        s.w = x.shape[2];
        s.phases = (const int64_t *)ph.data;
        s.n_phases = ph.shape[0];
        s.value = (uint8_t)value;
        s.flip = flip ? 0x80 : 0;
        const Py_ssize_t groups = (s.channels + 3) / 4;
        if (ONYX_EXPECT_SHAPE(&ph, "interleave_conv: phases", -1, 2) < 0 ||
            ONYX_EXPECT_SHAPE(&dst, "interleave_conv: dst", groups, -1, 4) < 0)
            goto done;
        s.len_out = dst.shape[1];
        if (s.sh < 1 || s.sw < 1 || s.pt < 0 || s.pl < 0 || s.hph < 0 || s.wph < 0 ||
            s.n_phases * s.hph * s.wph > s.len_out) {
            onyx_fail("interleave_conv: strides must be positive, pads not negative, dst long enough for the phases");
            goto done;
        }
        for (Py_ssize_t p = 0; p < s.n_phases; p++) {
            if (s.phases[2 * p] < 0 || s.phases[2 * p] >= s.sh || s.phases[2 * p + 1] < 0 ||
                s.phases[2 * p + 1] >= s.sw) {
                onyx_fail("interleave_conv: a phase (a, b) must satisfy 0 <= a < sh, 0 <= b < sw");
                goto done;
            }
        }
        uint8_t *dd = (uint8_t *)dst.data;
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nt)
        for (Py_ssize_t g = 0; g < groups; g++) interleave_conv_group(&s, g, dd + g * s.len_out * 4);
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&x, &ph, &dst);
    return result;
}

/* ---- requantization: y = saturate(round_half_even(acc * scale[col or row]) + zero_point) ---- */

ONYX_VECTOR static void requant_row(const int32_t *acc, const float *scale, Py_ssize_t scale_step, float s0,
                                    int zp, int lo, int hi, uint8_t *out, Py_ssize_t n) {
    for (Py_ssize_t j = 0; j < n; j++) {
        const float s = scale_step ? scale[j] : s0;
        float v = nearbyintf((float)acc[j] * s) + (float)zp;
        v = v < (float)lo ? (float)lo : v > (float)hi ? (float)hi : v;
        out[j] = (uint8_t)(int)v;
    }
}

static PyObject *py_requantize(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ao, *so, *oo;
    int mode, zp, is_signed, threads;
    if (!PyArg_ParseTuple(args, "OOiiOii", &ao, &so, &mode, &zp, &oo, &is_signed, &threads)) return NULL;
    onyx_array a, s, o;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {ao, &a, 'i', 3, 0, "requantize: acc"}, {so, &s, 'f', 1, ONYX_DENSE, "requantize: scale"},
                      {oo, &o, 'B', 3, ONYX_OUT | ONYX_DENSE, "requantize: out (uint8 view)"}) < 0)
        goto done;
    const Py_ssize_t d0 = a.shape[0], d1 = a.shape[1], d2 = a.shape[2];
    if (ONYX_EXPECT_SHAPE(&o, "requantize: out", d0, d1, d2) < 0) goto done;
    if (d2 > 1 && a.strides[2] != 1) {
        onyx_fail("requantize: acc's last axis must be contiguous");
        goto done;
    }
    if (s.shape[0] != 1 && s.shape[0] != (mode == 2 ? d2 : d0)) {
        onyx_fail("requantize: scale has neither one value nor one per index of its axis");
        goto done;
    }
    {
        const int32_t *ad = (const int32_t *)a.data;
        const float *sd = (const float *)s.data;
        uint8_t *od = (uint8_t *)o.data;
        const int lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
        const Py_ssize_t ns = s.shape[0], s0 = a.strides[0], s1 = a.strides[1], rows = d0 * d1;
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nt)
        for (Py_ssize_t r = 0; r < rows; r++) {
            const Py_ssize_t i = r / d1, j = r % d1;
            const int col = mode == 2 && ns > 1;
            const float sc = ns == 1 ? sd[0] : mode == 2 ? 0.0f : sd[i];
            requant_row(ad + i * s0 + j * s1, sd, col, sc, zp, lo, hi, od + r * d2, d2);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&a, &s, &o);
    return result;
}

/* ---- dynamic quantization to uint8 (DynamicQuantizeLinear's arithmetic, float32 throughout) ---- */

ONYX_VECTOR static void min_max(const float *x, Py_ssize_t n, float *lo, float *hi) {
    float a = 0.0f, b = 0.0f; /* the range always holds 0 */
    for (Py_ssize_t i = 0; i < n; i++) {
        a = x[i] < a ? x[i] : a;
        b = x[i] > b ? x[i] : b;
    }
    *lo = a;
    *hi = b;
}

ONYX_VECTOR static void quantize_u8(const float *x, Py_ssize_t n, float scale, float zp, uint8_t *q) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float v = nearbyintf(x[i] / scale) + zp;
        v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
        q[i] = (uint8_t)(int)v;
    }
}

static PyObject *py_dynamic_quantize(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *xo, *qo;
    if (!PyArg_ParseTuple(args, "OO", &xo, &qo)) return NULL;
    onyx_array x, q;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {xo, &x, 'f', 1, ONYX_DENSE, "dynamic_quantize: x"},
                      {qo, &q, 'B', 1, ONYX_OUT | ONYX_DENSE, "dynamic_quantize: q"}) < 0)
        goto done;
    if (q.shape[0] != x.shape[0]) {
        onyx_fail("dynamic_quantize: q must have x's size");
        goto done;
    }
    {
        const float *xd = (const float *)x.data;
        uint8_t *qd = (uint8_t *)q.data;
        const Py_ssize_t n = x.shape[0];
        float lo, hi, scale, zp = 0.0f;
        Py_BEGIN_ALLOW_THREADS
        min_max(xd, n, &lo, &hi);
        scale = (hi - lo) / 255.0f;
        if (scale == 0.0f) {
            memset(qd, 0, (size_t)n);
        } else {
            zp = nearbyintf(0.0f - lo / scale);
            zp = zp < 0.0f ? 0.0f : zp > 255.0f ? 255.0f : zp;
            quantize_u8(xd, n, scale, zp, qd);
        }
        Py_END_ALLOW_THREADS
        result = Py_BuildValue("(fi)", scale == 0.0f ? 1.0f : scale, (int)zp);
    }
done:
    ONYX_RELEASE(&x, &q);
    return result;
}

/* ---- QuantizeLinear with one scale and zero point: q = saturate(rint(x / scale) + zp), NaN to 0 ---- */

ONYX_VECTOR static void quantize_run(const float *x, Py_ssize_t n, float scale, float zp, float lo, float hi,
                                     uint8_t *q) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float v = nearbyintf(x[i] / scale) + zp; /* a true division, as numpy's (not a reciprocal) */
        v = v == v ? v : 0.0f;
        v = v > lo ? v : lo; /* vmaxps / vminps */
        v = v < hi ? v : hi;
        q[i] = (uint8_t)(int)v; /* in the output's range: its bytes, signed or not */
    }
}

static PyObject *py_quantize(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *xo, *qo;
    float scale;
    int zp, is_signed, threads;
    if (!PyArg_ParseTuple(args, "OOfiii", &xo, &qo, &scale, &zp, &is_signed, &threads)) return NULL;
    onyx_array x, q;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {xo, &x, 'f', 1, ONYX_DENSE, "quantize: x"},
                      {qo, &q, 'B', 1, ONYX_OUT | ONYX_DENSE, "quantize: q (uint8 view)"}) < 0)
        goto done;
    if (q.shape[0] != x.shape[0]) {
        onyx_fail("quantize: q must have x's size");
        goto done;
    }
    {
        const float *xd = (const float *)x.data;
        uint8_t *qd = (uint8_t *)q.data;
        const Py_ssize_t n = x.shape[0], chunk = 16384, chunks = (n + chunk - 1) / chunk;
        const float lo = is_signed ? -128.0f : 0.0f, hi = is_signed ? 127.0f : 255.0f;
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nt)
        for (Py_ssize_t c = 0; c < chunks; c++) {
            const Py_ssize_t i0 = c * chunk, len = n - i0 < chunk ? n - i0 : chunk;
            quantize_run(xd + i0, len, scale, (float)zp, lo, hi, qd + i0);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&x, &q);
    return result;
}

/* ---- QLinearAdd of two 8-bit tensors of one shape: c = saturate(rint(ra (a - za) + rb (b - zb)) + zc) ---- */

/* one loop per operand type: a loop with the type chosen inside does not vectorize */
#define QADD_LOOP(TYPE)                                                                                       \
    for (Py_ssize_t i = 0; i < n; i++) {                                                                      \
        float v = ra * ((float)(TYPE)a[i] - za) + rb * ((float)(TYPE)b[i] - zb);                             \
        v = v > lo ? v : lo; /* written as x86's max / min read: vmaxps / vminps, no masks */                \
        v = v < hi ? v : hi;                                                                                  \
        v = (v + magic) - magic;                                                                              \
        c[i] = (uint8_t)((int)v + zc); /* in the output's range: its bytes, signed or not */                  \
    }

ONYX_VECTOR static void qadd_run(const uint8_t *restrict a, const uint8_t *restrict b, uint8_t *restrict c,
                                 Py_ssize_t n, int is_signed, float ra, float rb, float za, float zb, float lo,
                                 float hi, int zc) {
    const float magic = 12582912.0f; /* 1.5 * 2^23: (v + magic) - magic rounds half to even for |v| < 2^22 */
    if (is_signed) {
        QADD_LOOP(int8_t)
    } else {
        QADD_LOOP(uint8_t)
    }
}
#undef QADD_LOOP

static PyObject *py_qlinear_add(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ao, *bo, *co;
    float ra, rb;
    int za, zb, zc, is_signed;
    if (!PyArg_ParseTuple(args, "OOOffiiii", &ao, &bo, &co, &ra, &rb, &za, &zb, &zc, &is_signed)) return NULL;
    onyx_array a, b, c;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {ao, &a, 'B', 1, ONYX_DENSE, "qlinear_add: a (uint8 view)"},
                      {bo, &b, 'B', 1, ONYX_DENSE, "qlinear_add: b (uint8 view)"},
                      {co, &c, 'B', 1, ONYX_OUT | ONYX_DENSE, "qlinear_add: c (uint8 view)"}) < 0)
        goto done;
    if (b.shape[0] != a.shape[0] || c.shape[0] != a.shape[0]) {
        onyx_fail("qlinear_add: a, b and c must have one size");
        goto done;
    }
    {
        /* clamped before rounding to the output range less its zero point (integers: same result) */
        const float lo = (float)((is_signed ? -128 : 0) - zc), hi = (float)((is_signed ? 127 : 255) - zc);
        const Py_ssize_t n = a.shape[0];
        uint8_t *cd = (uint8_t *)c.data;
        Py_BEGIN_ALLOW_THREADS
        qadd_run((const uint8_t *)a.data, (const uint8_t *)b.data, cd, n, is_signed, ra, rb, (float)za, (float)zb, lo, hi,
                 zc);
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&a, &b, &c);
    return result;
}

static PyObject *py_has_vnni(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyBool_FromLong(cpu_has_vnni());
}

static PyMethodDef methods[] = {
    ONYX_METHOD(pack, "pack(b, packed, flip, threads): b (K, N) bytes (any strides) into packed "
                      "(ceil(N/32), ceil(K/4), 32, 4), each byte xor 0x80 when flip."),
    ONYX_METHOD(gemm, "gemm(a, packed, out, a_unsigned, threads, allow_vnni, row_offsets, col_offsets[, scale, mode, "
                      "zero_point, is_signed]): out (M, N) int32 = a (M, 4*kq) times the packed operand (+ "
                      "row_offsets[m] + col_offsets[n], each int32 or None); a uint8 and packed int8 when a_unsigned, "
                      "else the reverse. With a scale (float32: one value, per row (mode 1) or per column (2)), out "
                      "is (M, N) bytes: the sums requantized as they are stored."),
    ONYX_METHOD(gemm_shifted, "gemm_shifted(a, src, quad_offsets, out, n, a_unsigned, threads, allow_vnni, row_offsets, "
                              "col_offsets[, scale, mode, zero_point, is_signed, wp, ow]): gemm with the B operand read in "
                              "place: k-quad q of column j is the 4 bytes at src[quad_offsets[q] + 4 j] (interleave_conv's "
                              "layout, every quad one shift of it). out (M, n); or, with a padded width wp > 0 "
                              "(requantized only), (M, rows * ow): of every wp columns the first ow."),
    ONYX_METHOD(conv_rows, "conv_rows(src, quad_offsets, wph, ow, packed_weights, channel_offsets, scale, zero_point, "
                           "out, is_signed, threads, allow_vnni): a requantized convolution with the output "
                           "positions as the GEMM's rows: out (channels, positions) bytes; position p, quad q "
                           "reads the 4 unsigned bytes at src[quad_offsets[q] + 4 ((p / ow) wph + p % ow)], the "
                           "weights packed as by pack (signed)."),
    ONYX_METHOD(interleave_conv, "interleave_conv(x, phases, dst, sh, sw, pt, pl, hph, wph, value, flip, threads): "
                                 "x (C, H, W) bytes padded with value (pt rows above, pl columns left), split into "
                                 "the stride phases (a, b) of phases (P, 2) int64, four channels interleaved: dst "
                                 "(ceil(C/4), L >= P hph wph, 4), zeros after the phases."),
    ONYX_METHOD(requantize, "requantize(acc, scale, mode, zero_point, out, is_signed, threads): out (A, B, C) = "
                            "saturate(rint(acc * scale) + zero_point), acc (A, B, C) int32 (last axis contiguous), "
                            "scale float32: one value (mode 0), one per index of axis 0 (1) or of axis 2 (2)."),
    ONYX_METHOD(pack_rows, "pack_rows(src, offsets, n, width, pitch, step, packed, flip, threads): row k, "
                           "column c: src[offsets[k] + (c / width) * pitch + (c % width) * step] (int64 offsets "
                           "into the 1-D bytes src), n columns, packed as by pack."),
    ONYX_METHOD(dynamic_quantize, "dynamic_quantize(x, q) -> (scale, zero_point): x (float32, 1-D) into q (uint8) as "
                                  "DynamicQuantizeLinear does (range holding 0, round half to even, saturate)."),
    ONYX_METHOD(quantize, "quantize(x, q, scale, zero_point, is_signed, threads): q = saturate(rint(x / scale) + "
                          "zero_point) for float32 x (1-D) into 8-bit q (a uint8 view), NaN to 0."),
    ONYX_METHOD(qlinear_add, "qlinear_add(a, b, c, ra, rb, za, zb, zc, is_signed): c = saturate(rint(ra (a - za) + "
                             "rb (b - zb)) + zc), 1-D 8-bit arrays of one size (uint8 views)."),
    {"has_vnni", py_has_vnni, METH_NOARGS, "has_vnni(): whether the CPU has AVX-512 VNNI."},
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_int8, "Exact 8-bit integer GEMM (AVX-512 VNNI where present) and requantization.", methods)
