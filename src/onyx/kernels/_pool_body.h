/* The max pooling loop of _pool.c for one element type: included once per type with T (the C type),
 * S(name) (the name with its type suffix) and NEG_INF (T's -inf) defined. */

#ifdef POOL_INTEGER
static inline T S(nanmax)(T a, T b) { return a > b ? a : b; }
#else
/* max(a, b), NaN from either side winning, as np.maximum. */
static inline T S(nanmax)(T a, T b) { return ((a > b) | (a != a)) ? a : b; }
#endif

/* out[j] = max(row[j*sw + k*dw] for k < kw); the common 3- and 2-wide stride-2 windows with literal
 * strides, so that their strided loads vectorise. */
static inline __attribute__((always_inline)) void S(window_max_row)(const T *restrict row, T *restrict out, Py_ssize_t ow, Py_ssize_t kw,
                                     Py_ssize_t sw, Py_ssize_t dw) {
    if (sw == 2 && dw == 1 && kw == 3) {
        /* two passes of two stride-2 streams each (in L1): gcc vectorises those, not the three-way max */
        const T *restrict r0 = row, *restrict r1 = row + 1, *restrict r2 = row + 2;
        for (Py_ssize_t j = 0; j < ow; j++) out[j] = S(nanmax)(r0[2 * j], r1[2 * j]);
        for (Py_ssize_t j = 0; j < ow; j++) out[j] = S(nanmax)(out[j], r2[2 * j]);
    } else if (sw == 2 && dw == 1 && kw == 2) {
        const T *restrict r0 = row, *restrict r1 = row + 1;
        for (Py_ssize_t j = 0; j < ow; j++) out[j] = S(nanmax)(r0[2 * j], r1[2 * j]);
    } else {
        for (Py_ssize_t j = 0; j < ow; j++) {
            const T *r = row + j * sw;
            T v = r[0];
            for (Py_ssize_t k = 1; k < kw; k++) v = S(nanmax)(v, r[k * dw]);
            out[j] = v;
        }
    }
}

/* One (image, channel) plane: per output row, the valid kernel rows' elementwise max over whole input
 * rows (contiguous) into `row` (at offset pl, its borders -inf), then the window max along the row
 * (no bounds checks in the inner loop). */
ONYX_VECTOR static void S(max_pool_plane)(const T *restrict x, T *restrict y, T *restrict row, const pool_geometry *g) {
    const Py_ssize_t wd = g->w;
    T *restrict dst = row + g->pl;
    for (Py_ssize_t i = 0; i < g->oh; i++) {
        const Py_ssize_t top = i * g->sh - g->pt;
        int first = 1;
        for (Py_ssize_t k = 0; k < g->kh; k++) {
            const Py_ssize_t r = top + k * g->dh;
            if (r < 0 || r >= g->h) continue;
            const T *restrict src = x + r * wd;
            if (first) {
                memcpy(dst, src, (size_t)wd * sizeof(T));
                first = 0;
            } else {
                for (Py_ssize_t j = 0; j < wd; j++) dst[j] = S(nanmax)(dst[j], src[j]);
            }
        }
        T *restrict out = y + i * g->ow;
        if (first) { /* no kernel row inside the input */
            for (Py_ssize_t j = 0; j < g->ow; j++) out[j] = NEG_INF;
            continue;
        }
        S(window_max_row)(row, out, g->ow, g->kw, g->sw, g->dw);
    }
}

static void S(max_pool2d)(const T *x, T *y, Py_ssize_t planes, const pool_geometry *g, T *scratch, int threads) {
    ONYX_PARALLEL(threads) {
        T *row = scratch + (Py_ssize_t)onyx_thread_index() * g->row_len;
        for (Py_ssize_t j = 0; j < g->row_len; j++) row[j] = NEG_INF;
        ONYX_FOR_STATIC
        for (Py_ssize_t p = 0; p < planes; p++) S(max_pool_plane)(x + p * g->h * g->w, y + p * g->oh * g->ow, row, g);
    }
}
