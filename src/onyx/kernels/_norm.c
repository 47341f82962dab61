/* Layer normalisation of rows (LayerNormalization, SkipLayerNormalization and their simplified, RMS
 * forms), float32 and float64, two passes over each row:
 *
 *   s = x (+ skip) (+ bias), written where it is kept (s_out) or into y, with its sum (or, simplified,
 *   its sum of squares) on the way; then the sum of squared deviations; then
 *   y = (s - mean) * inv * gamma (+ beta), inv = 1 / sqrt(var + eps), mean 0 when simplified.
 *
 * Sums are in float64 whatever the row's type, in vectorised partial sums (the only reassociation). */
#define PY_SSIZE_T_CLEAN
#include "_common.h"

#include <math.h>

typedef struct {
    Py_ssize_t n;
    double eps;
    int simplified;
} norm_args;

#define DEFINE_ROW(name, T)                                                                          \
    ONYX_VECTOR static void name(const T *x, const T *skip, const T *bias, const T *gamma,           \
                                 const T *beta, T *row, T *y, T *mean_out, T *inv_out, norm_args a) { \
        const Py_ssize_t n = a.n;                                                                    \
        double total = 0.0, squares = 0.0; /* both summed: no branch in the vectorised loops */      \
        if (skip != NULL && bias != NULL) {                                                          \
            _Pragma("omp simd reduction(+ : total, squares)")                                        \
            for (Py_ssize_t j = 0; j < n; j++) {                                                     \
                const T v = x[j] + skip[j] + bias[j];                                                \
                row[j] = v;                                                                          \
                total += (double)v;                                                                  \
                squares += (double)v * v;                                                            \
            }                                                                                        \
        } else if (skip != NULL || bias != NULL) {                                                   \
            const T *add = skip != NULL ? skip : bias;                                               \
            _Pragma("omp simd reduction(+ : total, squares)")                                        \
            for (Py_ssize_t j = 0; j < n; j++) {                                                     \
                const T v = x[j] + add[j];                                                           \
                row[j] = v;                                                                          \
                total += (double)v;                                                                  \
                squares += (double)v * v;                                                            \
            }                                                                                        \
        } else {                                                                                     \
            if (row != y) memcpy(row, x, (size_t)n * sizeof(T)); /* s is x, and is kept */           \
            row = (T *)x; /* nothing to add: the statistics come from x itself */                    \
            _Pragma("omp simd reduction(+ : total, squares)")                                        \
            for (Py_ssize_t j = 0; j < n; j++) {                                                     \
                const double v = (double)x[j];                                                       \
                total += v;                                                                          \
                squares += v * v;                                                                    \
            }                                                                                        \
        }                                                                                            \
        double mean = 0.0, var;                                                                      \
        if (a.simplified) {                                                                          \
            var = squares / (double)n;                                                               \
        } else {                                                                                     \
            mean = total / (double)n;                                                                \
            double sq = 0.0;                                                                         \
            _Pragma("omp simd reduction(+ : sq)") for (Py_ssize_t j = 0; j < n; j++) {               \
                const double d = (double)row[j] - mean;                                              \
                sq += d * d;                                                                         \
            }                                                                                        \
            var = sq / (double)n;                                                                    \
        }                                                                                            \
        const double inv = 1.0 / sqrt(var + a.eps);                                                  \
        const T m = (T)mean, k = (T)inv;                                                             \
        if (gamma == NULL) {                                                                         \
            _Pragma("omp simd") for (Py_ssize_t j = 0; j < n; j++) y[j] = (row[j] - m) * k;          \
        } else if (beta == NULL) {                                                                   \
            _Pragma("omp simd") for (Py_ssize_t j = 0; j < n; j++) y[j] = (row[j] - m) * k * gamma[j]; \
        } else {                                                                                     \
            _Pragma("omp simd") for (Py_ssize_t j = 0; j < n; j++) y[j] =                            \
                (row[j] - m) * k * gamma[j] + beta[j];                                               \
        }                                                                                            \
        *mean_out = (T)mean;                                                                         \
        *inv_out = (T)inv;                                                                           \
    }

DEFINE_ROW(norm_row_f32, float)
DEFINE_ROW(norm_row_f64, double)

static PyObject *py_norm_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *xo, *sko, *bio, *go, *beo, *yo, *so, *mo, *io;
    double eps;
    int simplified, threads;
    if (!PyArg_ParseTuple(args, "OOOOOdpOOOOi", &xo, &sko, &bio, &go, &beo, &eps, &simplified, &yo, &so,
                          &mo, &io, &threads))
        return NULL;
    onyx_array x, skip, bias, gamma, beta, y, s, mean, inv;
    PyObject *result = NULL;
    char fmt = 0;
    const int opt = ONYX_OPTIONAL | ONYX_DENSE, out = ONYX_OUT | ONYX_DENSE;
    if (ONYX_GET_ARGS(&fmt, {xo, &x, 'r', 2, ONYX_DENSE, "norm_rows: x"}, {sko, &skip, 'r', 2, opt, "norm_rows: skip"},
                      {bio, &bias, 'r', 1, opt, "norm_rows: bias"}, {go, &gamma, 'r', 1, opt, "norm_rows: gamma"},
                      {beo, &beta, 'r', 1, opt, "norm_rows: beta"}, {yo, &y, 'r', 2, out, "norm_rows: y"},
                      {so, &s, 'r', 2, out | ONYX_OPTIONAL, "norm_rows: s_out"},
                      {mo, &mean, 'r', 1, out, "norm_rows: mean_out"}, {io, &inv, 'r', 1, out, "norm_rows: inv_out"}) < 0)
        goto done;
    const Py_ssize_t rows = x.shape[0], n = x.shape[1];
    if (ONYX_EXPECT_SHAPE(&skip, "norm_rows: skip", rows, n) < 0 || ONYX_EXPECT_SHAPE(&bias, "norm_rows: bias", n) < 0 ||
        ONYX_EXPECT_SHAPE(&gamma, "norm_rows: gamma", n) < 0 || ONYX_EXPECT_SHAPE(&beta, "norm_rows: beta", n) < 0 ||
        ONYX_EXPECT_SHAPE(&y, "norm_rows: y", rows, n) < 0 || ONYX_EXPECT_SHAPE(&s, "norm_rows: s_out", rows, n) < 0 ||
        ONYX_EXPECT_SHAPE(&mean, "norm_rows: mean_out", rows) < 0 || ONYX_EXPECT_SHAPE(&inv, "norm_rows: inv_out", rows) < 0)
        goto done;
    if (beta.data != NULL && gamma.data == NULL) {
        PyErr_SetString(PyExc_ValueError, "norm_rows: beta needs gamma");
        goto done;
    }
    if (rows > 0 && n > 0) {
        const norm_args a = {n, eps, simplified};
        const int nt = onyx_threads(threads);
        const size_t item = fmt == 'd' ? sizeof(double) : sizeof(float);
        char *xd = x.data, *skd = skip.data, *yd = y.data, *sd = s.data;
        char *md = mean.data, *id = inv.data;
        const char *bid = bias.data, *gd = gamma.data, *bed = beta.data;
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nt)
        for (Py_ssize_t r = 0; r < rows; r++) {
            const size_t at = (size_t)(r * n) * item;
            char *row = sd != NULL ? sd + at : yd + at; /* s where it is kept, else in y */
            if (fmt == 'd')
                norm_row_f64((const double *)(xd + at), skd ? (const double *)(skd + at) : NULL,
                             (const double *)bid, (const double *)gd, (const double *)bed, (double *)row,
                             (double *)(yd + at), (double *)md + r, (double *)id + r, a);
            else
                norm_row_f32((const float *)(xd + at), skd ? (const float *)(skd + at) : NULL,
                             (const float *)bid, (const float *)gd, (const float *)bed, (float *)row,
                             (float *)(yd + at), (float *)md + r, (float *)id + r, a);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&x, &skip, &bias, &gamma, &beta, &y, &s, &mean, &inv);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(norm_rows, "norm_rows(x, skip, bias, gamma, beta, eps, simplified, y, s_out, mean_out, inv_out, "
                           "threads): layer normalisation of the rows of the 2-D x (optional arrays None)."),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_norm, "Layer normalisation of rows (float32 and float64, OpenMP).", methods)
