/* Attention's softmax over the last axis of float32 scores, in place, with the scale and an optional
 * additive bias folded into the same passes: s = softmax(s * scale (+ bias)) row by row.
 *
 * A row is read three times: max, exp and sum, normalise. exp is onyx_exp32 (no libm call, so the
 * loops vectorise). As numpy's path (onyx.kernels.softmax): a row whose largest value is -inf gives
 * zeros (what the exporters' Where(IsNaN(p), 0, p) guard computes for a fully masked row), and one
 * holding NaN or +inf gives NaN. */
#define PY_SSIZE_T_CLEAN
#include "_common.h"
#include "_exp32.h"

#define MAGNITUDE 0x7FFFFFFF

/* The largest value of the row, by a maximum over integers that order as the floats do (gcc
 * vectorises integer max reductions without -ffast-math): a positive NaN wins (and the row becomes
 * NaN, as numpy's max makes it); a negative NaN orders below -inf and shows later, through exp. */
ONYX_INLINE float row_max(const float *s, Py_ssize_t t) {
    int32_t m = INT32_MIN;
#pragma omp simd reduction(max : m)
    for (Py_ssize_t j = 0; j < t; j++) {
        const int32_t i = onyx_f32_bits(s[j]);
        const int32_t k = i ^ ((i >> 31) & MAGNITUDE);
        m = k > m ? k : m;
    }
    return onyx_f32_from_bits(m ^ ((m >> 31) & MAGNITUDE));
}

/* One row of t > 0 scores; `bias` is the row's bias (contiguous) or NULL. */
ONYX_VECTOR static void softmax_row(float *s, const float *bias, Py_ssize_t t, float scale) {
    /* without a bias and with a positive scale, the scale goes into exp's argument (one pass
     * less): the max of s * scale is scale * max(s) */
    const int folded = bias == NULL && scale > 0.0f;
    if (bias != NULL) {
#pragma omp simd
        for (Py_ssize_t j = 0; j < t; j++) s[j] = s[j] * scale + bias[j];
    } else if (!folded) {
#pragma omp simd
        for (Py_ssize_t j = 0; j < t; j++) s[j] = s[j] * scale;
    }
    const float m = row_max(s, t);
    if (m == -INFINITY) { /* no finite value: zeros, or NaN if there is one */
        /* an integer flag: gcc's vectorised "last value where" reduction lost a NaN */
        int any_nan = 0;
        for (Py_ssize_t j = 0; j < t; j++) any_nan |= s[j] != s[j];
        const float fill = any_nan ? NAN : 0.0f;
        for (Py_ssize_t j = 0; j < t; j++) s[j] = fill;
        return;
    }
    float total = 0.0f;
    if (folded) {
#pragma omp simd reduction(+ : total)
        for (Py_ssize_t j = 0; j < t; j++) {
            const float e = onyx_exp32((s[j] - m) * scale);
            s[j] = e;
            total += e;
        }
    } else {
#pragma omp simd reduction(+ : total)
        for (Py_ssize_t j = 0; j < t; j++) {
            const float e = onyx_exp32(s[j] - m);
            s[j] = e;
            total += e;
        }
    }
    /* NaN when the row held NaN or +inf: all NaN, as numpy gives */
    const float inv = 1.0f / total;
#pragma omp simd
    for (Py_ssize_t j = 0; j < t; j++) s[j] *= inv;
}

static PyObject *py_softmax_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *so, *bo;
    float scale;
    int threads;
    if (!PyArg_ParseTuple(args, "OfOi", &so, &scale, &bo, &threads)) return NULL;
    onyx_array s, b;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {so, &s, 'f', 4, ONYX_OUT | ONYX_DENSE, "softmax_rows: scores"},
                      {bo, &b, 'f', 4, ONYX_OPTIONAL, "softmax_rows: bias"}) < 0 ||
        onyx_expect_dims(&b, s.shape, 4, "softmax_rows: bias") < 0)
        goto done;
    if (b.held && b.shape[3] > 1 && b.strides[3] != 1) {
        PyErr_SetString(PyExc_ValueError, "softmax_rows: bias: its last axis must be contiguous");
        goto done;
    }
    const Py_ssize_t nh = s.shape[1], ns = s.shape[2], t = s.shape[3];
    const Py_ssize_t rows = s.shape[0] * nh * ns;
    if (rows > 0 && t > 0) {
        float *data = (float *)s.data;
        const float *bias = bo != Py_None ? (const float *)b.data : NULL;
        const Py_ssize_t b0 = b.strides[0], b1 = b.strides[1], b2 = b.strides[2];
        const int nt = onyx_threads(threads);
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nt)
        for (Py_ssize_t row = 0; row < rows; row++) {
            const Py_ssize_t i = row % ns, h = (row / ns) % nh, n = row / (ns * nh);
            const float *br = bias == NULL ? NULL : bias + n * b0 + h * b1 + i * b2;
            softmax_row(data + row * t, br, t, scale);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&s, &b);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(softmax_rows, "softmax_rows(scores, scale, bias or None, threads): in place over the last axis of "
                              "the 4-D C-contiguous float32 scores, softmax(scores * scale (+ bias)); bias of the "
                              "scores' shape (any strides, the last axis contiguous)."),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_softmax, "Attention's row softmax (float32, OpenMP).", methods)
