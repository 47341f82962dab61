/* The convolution loops of _conv.c for one element type: included once per type with T (the C
 * type) and S(name) (the name with its type suffix) defined. Shapes and bounds were checked by the
 * entry points in _conv.c before these run; nothing here allocates or raises. */

/* ---------------------------------------------------------------------------------------------------
 * Depthwise NCHW on phase planes.
 *
 * One (image, channel) plane at a time: the padded channel is split into its sh*sw stride phases,
 * each a flat plane of rows of qw; every kernel tap is then one contiguous shifted run of its phase
 * plane, multiplied and added over the whole plane into an accumulator that stays in L1/L2. Output
 * columns past OW (the plane's extra columns) are dropped when the accumulator is written out. */

/* acc = the taps of one output channel over `n` plane positions. */
ONYX_VECTOR static void S(dw_taps)(const T *restrict planes, const dw_geometry *g, const T *restrict wc,
                                    T *restrict acc) {
    const Py_ssize_t n = g->length, width = g->width;
    const int64_t *ph = g->tap_phase, *off = g->tap_off;
    if (g->taps == 9) { /* 3x3: the nine taps in one pass, acc written once */
        const T *restrict s0 = planes + ph[0] * width + off[0], *restrict s1 = planes + ph[1] * width + off[1];
        const T *restrict s2 = planes + ph[2] * width + off[2], *restrict s3 = planes + ph[3] * width + off[3];
        const T *restrict s4 = planes + ph[4] * width + off[4], *restrict s5 = planes + ph[5] * width + off[5];
        const T *restrict s6 = planes + ph[6] * width + off[6], *restrict s7 = planes + ph[7] * width + off[7];
        const T *restrict s8 = planes + ph[8] * width + off[8];
        const T w0 = wc[0], w1 = wc[1], w2 = wc[2], w3 = wc[3], w4 = wc[4], w5 = wc[5], w6 = wc[6],
                w7 = wc[7], w8 = wc[8];
        for (Py_ssize_t t = 0; t < n; t++)
            acc[t] = w0 * s0[t] + w1 * s1[t] + w2 * s2[t] + w3 * s3[t] + w4 * s4[t] + w5 * s5[t] + w6 * s6[t] +
                     w7 * s7[t] + w8 * s8[t];
        return;
    }
    for (Py_ssize_t k = 0; k < g->taps; k++) {
        const T wv = wc[k];
        const T *restrict src = planes + ph[k] * width + off[k];
        if (k == 0)
            for (Py_ssize_t t = 0; t < n; t++) acc[t] = wv * src[t];
        else
            for (Py_ssize_t t = 0; t < n; t++) acc[t] += wv * src[t];
    }
}

/* The input plane `src` (H, W) copied into its phase planes (positions outside stay zero). */
static void S(dw_fill)(const T *restrict src, T *restrict planes, const dw_geometry *g) {
    const Py_ssize_t sw = g->sw;
    for (Py_ssize_t i = 0; i < g->h; i++) {
        const T *row = src + i * g->w;
        for (Py_ssize_t rw = 0; rw < sw; rw++) {
            T *restrict dst = planes + (g->row_plane[i] + rw) * g->width + g->row_base[i] + g->col_start[rw];
            const T *restrict s = row + g->col_first[rw];
            const Py_ssize_t cnt = g->col_count[rw];
            if (sw == 1)
                memcpy(dst, s, (size_t)cnt * sizeof(T));
            else
                for (Py_ssize_t t = 0; t < cnt; t++) dst[t] = s[t * sw];
        }
    }
}

/* Output rows of one channel from the accumulator: d = act(acc + bias), the extra columns dropped. */
ONYX_VECTOR static void S(dw_finish)(const T *restrict acc, T *restrict d, const dw_geometry *g, T bias,
                                      int kind, T lo, T hi) {
    for (Py_ssize_t i = 0; i < g->oh; i++) {
        const T *restrict s = acc + i * g->qw;
        T *restrict o = d + i * g->ow;
        ONYX_ACT_LOOP(T, g->ow, s[k] + bias, o[k]);
    }
}

static void S(depthwise_nchw)(const T *x, const T *w, const T *b, Py_ssize_t nb, T *y, Py_ssize_t planes_in,
                              Py_ssize_t mult, const dw_geometry *g, T *scratch, Py_ssize_t per_thread,
                              int kind, T lo, T hi, int threads) {
    const Py_ssize_t chans = g->chans, plane_in = g->h * g->w, plane_out = g->oh * g->ow;
    const Py_ssize_t planes_size = g->sh * g->sw * g->width;
    ONYX_PARALLEL(threads) {
        T *planes = scratch + (Py_ssize_t)onyx_thread_index() * per_thread;
        T *acc = planes + planes_size;
        memset(planes, 0, (size_t)planes_size * sizeof(T));
        ONYX_FOR_STATIC
        for (Py_ssize_t p = 0; p < planes_in; p++) { /* p = image * C + channel */
            const Py_ssize_t c = p % chans, img = p / chans;
            S(dw_fill)(x + p * plane_in, planes, g);
            for (Py_ssize_t m = 0; m < mult; m++) {
                const Py_ssize_t co = c * mult + m;
                S(dw_taps)(planes, g, w + co * g->taps, acc);
                const T bias = nb > 0 ? b[co] : (T)0;
                S(dw_finish)(acc, y + (img * chans * mult + co) * plane_out, g, bias, kind, lo, hi);
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Depthwise channels-last: x (N, H, W, C), w (KH, KW, C), b (C,), y (N, OH, OW, C). Every
 * multiply-add runs over the channels of one position, contiguous in memory, so small maps and
 * strides cost no plane copies; 3x3 windows inside x take all nine taps in one pass. */

/* One output position, any kernel, with bounds checks (kernels other than 3x3). */
static inline __attribute__((always_inline)) void S(dwcl_pixel)(const dwcl_args *a, const T *x, const T *w, const T *b, T *d, Py_ssize_t oy,
                                 Py_ssize_t ox) {
    const Py_ssize_t c = a->c;
    _Pragma("omp simd")
    for (Py_ssize_t k = 0; k < c; k++) d[k] = b[k];
    for (Py_ssize_t ky = 0; ky < a->kh; ky++) {
        const Py_ssize_t iy = oy * a->sh - a->pt + ky;
        if (iy < 0 || iy >= a->h) continue;
        for (Py_ssize_t kx = 0; kx < a->kw; kx++) {
            const Py_ssize_t ix = ox * a->sw - a->pl + kx;
            if (ix < 0 || ix >= a->w) continue;
            const T *restrict s = x + (iy * a->w + ix) * c;
            const T *restrict wv = w + (ky * a->kw + kx) * c;
            _Pragma("omp simd")
            for (Py_ssize_t k = 0; k < c; k++) d[k] += wv[k] * s[k];
        }
    }
}

/* One 3x3 window crossing the edge of x: the nine taps in one pass over the channels, a tap outside x
 * reading a row of zeros (no bounds check in the loop), in the order of terms of the interior. */
static inline __attribute__((always_inline)) void S(dwcl_edge3)(const dwcl_args *a, const T *x, const T *w, const T *b, const T *zeros,
                                 T *restrict d, Py_ssize_t oy, Py_ssize_t ox) {
    const Py_ssize_t c = a->c, iy = oy * a->sh - a->pt, ix = ox * a->sw - a->pl;
    const T *p[9];
    for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) {
            const Py_ssize_t r = iy + ky, q = ix + kx;
            p[ky * 3 + kx] = (r >= 0 && r < a->h && q >= 0 && q < a->w) ? x + (r * a->w + q) * c : zeros;
        }
    const T *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2], *restrict p3 = p[3];
    const T *restrict p4 = p[4], *restrict p5 = p[5], *restrict p6 = p[6], *restrict p7 = p[7];
    const T *restrict p8 = p[8];
    const T *restrict w0 = w, *restrict w1 = w + c, *restrict w2 = w + 2 * c, *restrict w3 = w + 3 * c;
    const T *restrict w4 = w + 4 * c, *restrict w5 = w + 5 * c, *restrict w6 = w + 6 * c;
    const T *restrict w7 = w + 7 * c, *restrict w8 = w + 8 * c;
    _Pragma("omp simd")
    for (Py_ssize_t k = 0; k < c; k++)
        d[k] = b[k] + w0[k] * p0[k] + w1[k] * p1[k] + w2[k] * p2[k] + w3[k] * p3[k] + w4[k] * p4[k] +
               w5[k] * p5[k] + w6[k] * p6[k] + w7[k] * p7[k] + w8[k] * p8[k];
}

/* Interior positions ox0 .. ox1 of a stride-1 3x3 row, four at a time: 18 input vectors for four
 * windows instead of 36, each window's sum in three partial sums, one per kernel row (independent
 * FMA chains), then two at a time (12 vectors instead of 18). Returns the first position left. */
static inline __attribute__((always_inline)) Py_ssize_t S(dwcl_groups3)(const dwcl_args *a, const T *x0, const T *w, const T *b, T *yrow,
                                         Py_ssize_t ox0, Py_ssize_t ox1) {
    const Py_ssize_t c = a->c, rs = a->w * c;
    const T *restrict w0 = w, *restrict w1 = w + c, *restrict w2 = w + 2 * c, *restrict w3 = w + 3 * c;
    const T *restrict w4 = w + 4 * c, *restrict w5 = w + 5 * c, *restrict w6 = w + 6 * c;
    const T *restrict w7 = w + 7 * c, *restrict w8 = w + 8 * c;
    Py_ssize_t ox = ox0;
    for (; ox + 3 < ox1; ox += 4) {
        const T *restrict r0 = x0 + (ox - a->pl) * c, *restrict r1 = r0 + rs, *restrict r2 = r1 + rs;
        T *restrict d = yrow + ox * c;
        _Pragma("omp simd")
        for (Py_ssize_t k = 0; k < c; k++) {
            const T a0 = r0[k], a1 = r0[c + k], a2 = r0[2 * c + k], a3 = r0[3 * c + k], a4 = r0[4 * c + k],
                    a5 = r0[5 * c + k];
            const T b0 = r1[k], b1 = r1[c + k], b2 = r1[2 * c + k], b3 = r1[3 * c + k], b4 = r1[4 * c + k],
                    b5 = r1[5 * c + k];
            const T c0 = r2[k], c1 = r2[c + k], c2 = r2[2 * c + k], c3 = r2[3 * c + k], c4 = r2[4 * c + k],
                    c5 = r2[5 * c + k];
            const T v0 = w0[k], v1 = w1[k], v2 = w2[k], v3 = w3[k], v4 = w4[k], v5 = w5[k], v6 = w6[k],
                    v7 = w7[k], v8 = w8[k], bias = b[k];
            d[k] = bias + (v0 * a0 + v1 * a1 + v2 * a2) + (v3 * b0 + v4 * b1 + v5 * b2) +
                   (v6 * c0 + v7 * c1 + v8 * c2);
            d[c + k] = bias + (v0 * a1 + v1 * a2 + v2 * a3) + (v3 * b1 + v4 * b2 + v5 * b3) +
                       (v6 * c1 + v7 * c2 + v8 * c3);
            d[2 * c + k] = bias + (v0 * a2 + v1 * a3 + v2 * a4) + (v3 * b2 + v4 * b3 + v5 * b4) +
                           (v6 * c2 + v7 * c3 + v8 * c4);
            d[3 * c + k] = bias + (v0 * a3 + v1 * a4 + v2 * a5) + (v3 * b3 + v4 * b4 + v5 * b5) +
                           (v6 * c3 + v7 * c4 + v8 * c5);
        }
    }
    for (; ox + 1 < ox1; ox += 2) {
        const T *restrict r0 = x0 + (ox - a->pl) * c, *restrict r1 = r0 + rs, *restrict r2 = r1 + rs;
        T *restrict d = yrow + ox * c;
        _Pragma("omp simd")
        for (Py_ssize_t k = 0; k < c; k++) {
            const T a0 = r0[k], a1 = r0[c + k], a2 = r0[2 * c + k], a3 = r0[3 * c + k];
            const T b0 = r1[k], b1 = r1[c + k], b2 = r1[2 * c + k], b3 = r1[3 * c + k];
            const T c0 = r2[k], c1 = r2[c + k], c2 = r2[2 * c + k], c3 = r2[3 * c + k];
            const T bias = b[k];
            d[k] = bias + w0[k] * a0 + w1[k] * a1 + w2[k] * a2 + w3[k] * b0 + w4[k] * b1 + w5[k] * b2 +
                   w6[k] * c0 + w7[k] * c1 + w8[k] * c2;
            d[c + k] = bias + w0[k] * a1 + w1[k] * a2 + w2[k] * a3 + w3[k] * b1 + w4[k] * b2 + w5[k] * b3 +
                       w6[k] * c1 + w7[k] * c2 + w8[k] * c3;
        }
    }
    return ox;
}

/* One output row (image n, row oy) of the channels-last depthwise convolution, activation included. */
ONYX_VECTOR static void S(dwcl_row)(const dwcl_args *a, const T *x, const T *w, const T *b, T *y,
                                     const T *zeros, Py_ssize_t n, Py_ssize_t oy, int kind, T lo, T hi) {
    const Py_ssize_t c = a->c, ow = a->ow;
    const T *xn = x + n * a->h * a->w * c;
    T *yrow = y + (n * a->oh + oy) * ow * c;
    if (!a->three) {
        for (Py_ssize_t ox = 0; ox < ow; ox++) S(dwcl_pixel)(a, xn, w, b, yrow + ox * c, oy, ox);
    } else if (oy < a->oy0 || oy >= a->oy1) {
        for (Py_ssize_t ox = 0; ox < ow; ox++) S(dwcl_edge3)(a, xn, w, b, zeros, yrow + ox * c, oy, ox);
    } else {
        for (Py_ssize_t ox = 0; ox < a->ox0; ox++) S(dwcl_edge3)(a, xn, w, b, zeros, yrow + ox * c, oy, ox);
        const Py_ssize_t r = oy * a->sh - a->pt;
        const T *x0 = xn + r * a->w * c; /* kernel row 0 of this output row */
        Py_ssize_t start = a->ox0;
        if (a->sw == 1) start = S(dwcl_groups3)(a, x0, w, b, yrow, a->ox0, a->ox1);
        const Py_ssize_t rs = a->w * c;
        for (Py_ssize_t ox = start; ox < a->ox1; ox++) {
            const T *restrict r0 = x0 + (ox * a->sw - a->pl) * c, *restrict r1 = r0 + rs, *restrict r2 = r1 + rs;
            T *restrict d = yrow + ox * c;
            _Pragma("omp simd")
            for (Py_ssize_t k = 0; k < c; k++)
                d[k] = b[k] + w[k] * r0[k] + w[c + k] * r0[c + k] + w[2 * c + k] * r0[2 * c + k] +
                       w[3 * c + k] * r1[k] + w[4 * c + k] * r1[c + k] + w[5 * c + k] * r1[2 * c + k] +
                       w[6 * c + k] * r2[k] + w[7 * c + k] * r2[c + k] + w[8 * c + k] * r2[2 * c + k];
        }
        for (Py_ssize_t ox = a->ox1; ox < ow; ox++) S(dwcl_edge3)(a, xn, w, b, zeros, yrow + ox * c, oy, ox);
    }
    if (kind != ONYX_ACT_NONE) ONYX_ACT_LOOP(T, ow * c, yrow[k], yrow[k]);
}

static void S(depthwise_nhwc)(const dwcl_args *a, const T *x, const T *w, const T *b, T *y, const T *zeros,
                              int kind, T lo, T hi, int threads) {
    const Py_ssize_t rows = a->n * a->oh;
    ONYX_PARALLEL_FOR(threads)
    for (Py_ssize_t row = 0; row < rows; row++) S(dwcl_row)(a, x, w, b, y, zeros, row / a->oh, row % a->oh, kind, lo, hi);
}

/* ---------------------------------------------------------------------------------------------------
 * Convolution epilogues: bias, residual and activation in one pass over the GEMM's output. */

/* Planes i0 .. i1 of epilogue_nchw (one call per thread: the loops stay inside one compiled clone). */
ONYX_VECTOR static void S(epilogue_planes)(T *y, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t row0,
                                            Py_ssize_t nrows, const T *src, Py_ssize_t srow, const T *b,
                                            Py_ssize_t nb, const T *z, int kind, T lo, T hi, Py_ssize_t i0,
                                            Py_ssize_t i1) {
    for (Py_ssize_t i = i0; i < i1; i++) {
        const T bias = nb > 0 ? b[i % nb] : (T)0;
        for (Py_ssize_t r = 0; r < nrows; r++) {
            const Py_ssize_t at = (i * rows + row0 + r) * width;
            T *restrict d = y + at;
            const T *restrict zr = z != NULL ? z + at : NULL;
            if (src == NULL) {
                if (zr != NULL)
                    ONYX_ACT_LOOP(T, width, d[k] + bias + zr[k], d[k]);
                else
                    ONYX_ACT_LOOP(T, width, d[k] + bias, d[k]);
            } else {
                const T *restrict s = src + (i * nrows + r) * srow;
                if (zr != NULL)
                    ONYX_ACT_LOOP(T, width, s[k] + bias + zr[k], d[k]);
                else
                    ONYX_ACT_LOOP(T, width, s[k] + bias, d[k]);
            }
        }
    }
}

/* y (P, R, W): rows row0 .. row0+nrows of every plane i finished: y = act(src + b[i % nb] + z), src
 * (P, nrows, S) with S >= W (its extra columns dropped) or NULL (y itself). */
static void S(epilogue_nchw)(T *y, Py_ssize_t planes, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t row0,
                             Py_ssize_t nrows, const T *src, Py_ssize_t srow, const T *b, Py_ssize_t nb,
                             const T *z, int kind, T lo, T hi, int threads) {
    ONYX_PARALLEL_FOR(threads)
    for (int t = 0; t < threads; t++) {
        const Py_ssize_t i0 = planes * t / threads, i1 = planes * (t + 1) / threads;
        S(epilogue_planes)(y, rows, width, row0, nrows, src, srow, b, nb, z, kind, lo, hi, i0, i1);
    }
}

/* d = act(d + bt) over a flat run (bt: the bias tiled to the run). */
ONYX_VECTOR static void S(fin_tiled)(T *restrict d, const T *restrict bt, Py_ssize_t n, int kind, T lo, T hi) {
    ONYX_ACT_LOOP(T, n, d[k] + bt[k], d[k]);
}

/* d = act(d + z + b) over one row of channels. */
ONYX_VECTOR static void S(fin_row_z)(T *restrict d, const T *restrict z, const T *restrict b, Py_ssize_t n,
                                      int kind, T lo, T hi) {
    ONYX_ACT_LOOP(T, n, d[k] + z[k] + b[k], d[k]);
}

/* y (rows, C) finished in place: y = act(y + b (+ z)). Without z, blocks of `per` rows as one flat run
 * each with the bias tiled to match (bt: `per` copies of b): a loop per row cost more than its work
 * with few channels. */
static void S(epilogue_nhwc)(T *y, Py_ssize_t rows, Py_ssize_t c, const T *bt, Py_ssize_t per, const T *z,
                             int kind, T lo, T hi, int threads) {
    if (z == NULL) {
        const Py_ssize_t blocks = (rows + per - 1) / per;
        ONYX_PARALLEL_FOR(threads)
        for (Py_ssize_t i = 0; i < blocks; i++) {
            const Py_ssize_t r0 = i * per, r1 = r0 + per < rows ? r0 + per : rows;
            S(fin_tiled)(y + r0 * c, bt, (r1 - r0) * c, kind, lo, hi);
        }
        return;
    }
    ONYX_PARALLEL_FOR(threads)
    for (Py_ssize_t r = 0; r < rows; r++) S(fin_row_z)(y + r * c, z + r * c, bt, c, kind, lo, hi);
}

/* d = act(s + bt) or act(s). */
ONYX_VECTOR static void S(fin_crop)(const T *restrict s, T *restrict d, const T *restrict bt, Py_ssize_t n,
                                     int kind, T lo, T hi) {
    if (bt != NULL)
        ONYX_ACT_LOOP(T, n, s[k] + bt[k], d[k]);
    else
        ONYX_ACT_LOOP(T, n, s[k], d[k]);
}

/* y (R, W*C) = act(src[:, :W*C] + bt) for src (R, S), S >= W*C: a channels-last output finished from its
 * GEMM result computed on wider rows (a phase plane's), the extra positions dropped. */
static void S(epilogue_crop_nhwc)(const T *src, Py_ssize_t srow, T *y, Py_ssize_t rows, Py_ssize_t width,
                                  const T *bt, int kind, T lo, T hi, int threads) {
    ONYX_PARALLEL_FOR(threads)
    for (Py_ssize_t r = 0; r < rows; r++) S(fin_crop)(src + r * srow, y + r * width, bt, width, kind, lo, hi);
}
