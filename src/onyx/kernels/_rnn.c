/* The LSTM time loop (float32, default activations sigmoid/tanh/tanh, no peepholes or sequence
 * lengths): each step's recurrent product, with R read once for all batch rows, and the gates in one
 * pass, instead of ten numpy calls a step. The directions of a bidirectional layer are independent
 * and run on their own threads.
 *
 * sigmoid and tanh are computed here, vectorisable, to float32 accuracy (tanh within ~1.5 ulps,
 * sigmoid within ~2; numpy's float32 tanh is within about 1): an odd polynomial for small |x|, where
 * tanh = 1 - 2 / (exp(2x) + 1) would cancel, and that formula beyond. numpy's twin:
 * onyx.kernels.rnn._lstm_direction_numpy. */
#define PY_SSIZE_T_CLEAN
#include "_common.h"
#include "_exp32.h"

#include <math.h>
#include <stdlib.h>

ONYX_INLINE float sigmoid32(float x) { return 1.0f / (1.0f + onyx_exp32(-x)); }

/* Below this |x| tanh is its odd polynomial (a least-squares fit of (tanh x - x) / x^3 in x^2,
 * within 0.8 ulps there); from it, 1 - 2 / (exp(2|x|) + 1) with x's sign. */
#define TANH_POLY_BOUND 0.625f

ONYX_INLINE float tanh32(float x) {
    float a = fabsf(x);
    float z = x * x;
    float p = 0.002138040727004409f;
    p = p * z - 0.008171590976417065f;
    p = p * z + 0.021698132157325745f;
    p = p * z - 0.05394623801112175f;
    p = p * z + 0.1333320140838623f;
    p = p * z - 0.3333333134651184f;
    float small = x + x * z * p;
    float big = 1.0f - 2.0f / (onyx_exp32(2.0f * a) + 1.0f);
    big = copysignf(big, x);
    return a < TANH_POLY_BOUND ? small : big; /* NaN: big, which is NaN */
}

/* One step's recurrent product for every batch row: gates[b] = xw[b] + h[b] @ r_t. */
ONYX_VECTOR static void step_product(const float *xw, const float *r_t, const float *h, float *gates,
                                     Py_ssize_t rows, Py_ssize_t hidden) {
    Py_ssize_t width = 4 * hidden;
    memcpy(gates, xw, (size_t)(rows * width) * sizeof(float));
    Py_ssize_t k = 0;
    for (; k + 4 <= hidden; k += 4) { /* four rows of R read once a step for every batch row */
        const float *r0 = r_t + k * width, *r1 = r0 + width, *r2 = r1 + width, *r3 = r2 + width;
        for (Py_ssize_t b = 0; b < rows; b++) {
            const float *hb = h + b * hidden + k;
            float h0 = hb[0], h1 = hb[1], h2 = hb[2], h3 = hb[3];
            float *gb = gates + b * width;
#pragma omp simd
            for (Py_ssize_t j = 0; j < width; j++) gb[j] += (h0 * r0[j] + h1 * r1[j]) + (h2 * r2[j] + h3 * r3[j]);
        }
    }
    for (; k < hidden; k++) {
        const float *rk = r_t + k * width;
        for (Py_ssize_t b = 0; b < rows; b++) {
            float hk = h[b * hidden + k];
            float *gb = gates + b * width;
#pragma omp simd
            for (Py_ssize_t j = 0; j < width; j++) gb[j] += hk * rk[j];
        }
    }
}

/* The gates of one batch row (i, o, f, c order): clip, activations, c = f c + i g, h = o tanh(c). */
ONYX_VECTOR static void step_gates(float *gb, float *hb, float *cb, float *out, Py_ssize_t hidden, float clip,
                                   int input_forget) {
    Py_ssize_t width = 4 * hidden;
    if (clip > 0) {
        float lo = -clip;
#pragma omp simd
        for (Py_ssize_t j = 0; j < width; j++) {
            float v = gb[j];
            v = v < lo ? lo : v;
            gb[j] = v > clip ? clip : v;
        }
    }
    if (input_forget) { /* f = 1 - i: written over the f gates, read back below */
#pragma omp simd
        for (Py_ssize_t j = 0; j < hidden; j++) gb[2 * hidden + j] = 1.0f - sigmoid32(gb[j]);
    } else {
#pragma omp simd
        for (Py_ssize_t j = 0; j < hidden; j++) gb[2 * hidden + j] = sigmoid32(gb[2 * hidden + j]);
    }
#pragma omp simd
    for (Py_ssize_t j = 0; j < hidden; j++) {
        float i = sigmoid32(gb[j]);
        float o = sigmoid32(gb[hidden + j]);
        float f = gb[2 * hidden + j];
        float g = tanh32(gb[3 * hidden + j]);
        float cv = f * cb[j] + i * g;
        float hv = o * tanh32(cv);
        cb[j] = cv;
        hb[j] = hv;
        out[j] = hv;
    }
}

/* One direction's time loop over its own slices; ``gates`` is (rows, 4 hidden) scratch. */
static void lstm_direction(const float *xw, const float *r_t, float *h, float *c, float *y, float *gates,
                           Py_ssize_t steps, Py_ssize_t rows, Py_ssize_t hidden, float clip, int input_forget) {
    Py_ssize_t width = 4 * hidden;
    for (Py_ssize_t t = 0; t < steps; t++) {
        step_product(xw + t * rows * width, r_t, h, gates, rows, hidden);
        for (Py_ssize_t b = 0; b < rows; b++)
            step_gates(gates + b * width, h + b * hidden, c + b * hidden, y + (t * rows + b) * hidden, hidden,
                       clip, input_forget);
    }
}

static PyObject *py_lstm_sequence(PyObject *self, PyObject *args) {
    PyObject *oxw, *or, *oh, *oc, *oy;
    float clip;
    int input_forget, threads;
    if (!PyArg_ParseTuple(args, "OOOOOfpi", &oxw, &or, &oh, &oc, &oy, &clip, &input_forget, &threads))
        return NULL;
    onyx_array xw, r, h, c, y;
    float **scratch = NULL;
    PyObject *result = NULL;
    const int out = ONYX_OUT | ONYX_DENSE;
    if (ONYX_GET_ARGS(NULL, {oxw, &xw, 'f', 4, ONYX_DENSE, "lstm_sequence xw"},
                      {or, &r, 'f', 3, ONYX_DENSE, "lstm_sequence r_t"}, {oh, &h, 'f', 3, out, "lstm_sequence h"},
                      {oc, &c, 'f', 3, out, "lstm_sequence c"}, {oy, &y, 'f', 4, out, "lstm_sequence y"}) < 0)
        goto done;
    Py_ssize_t dirs = xw.shape[0], steps = xw.shape[1], rows = xw.shape[2], width = xw.shape[3];
    Py_ssize_t hidden = width / 4;
    if (width % 4 != 0) {
        PyErr_Format(PyExc_ValueError, "lstm_sequence xw: last dimension %zd is not 4 * hidden", width);
        goto done;
    }
    if (ONYX_EXPECT_SHAPE(&r, "lstm_sequence r_t", dirs, hidden, width) < 0 ||
        ONYX_EXPECT_SHAPE(&h, "lstm_sequence h", dirs, rows, hidden) < 0 ||
        ONYX_EXPECT_SHAPE(&c, "lstm_sequence c", dirs, rows, hidden) < 0 ||
        ONYX_EXPECT_SHAPE(&y, "lstm_sequence y", dirs, steps, rows, hidden) < 0)
        goto done;
    if (dirs == 0 || steps == 0 || rows == 0 || hidden == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    scratch = (float **)calloc((size_t)dirs, sizeof(float *));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t d = 0; d < dirs; d++) {
        scratch[d] = (float *)malloc((size_t)(rows * width) * sizeof(float));
        if (scratch[d] == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    {
        const float *pxw = (const float *)xw.data, *pr = (const float *)r.data;
        float *ph = (float *)h.data, *pc = (float *)c.data, *py = (float *)y.data;
        int nthreads = onyx_threads(threads) < dirs ? onyx_threads(threads) : (int)dirs;
        float bound = clip > 0 ? clip : 0.0f;
        Py_BEGIN_ALLOW_THREADS
        ONYX_PARALLEL_FOR(nthreads)
        for (Py_ssize_t d = 0; d < dirs; d++)
            lstm_direction(pxw + d * steps * rows * width, pr + d * hidden * width, ph + d * rows * hidden,
                           pc + d * rows * hidden, py + d * steps * rows * hidden, scratch[d], steps, rows, hidden,
                           bound, input_forget);
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    if (scratch != NULL) {
        for (Py_ssize_t d = 0; d < xw.shape[0]; d++) free(scratch[d]);
        free(scratch);
    }
    ONYX_RELEASE(&xw, &r, &h, &c, &y);
    return result;
}

/* The activations alone, for the tests: out = sigmoid(x) (which 0) or tanh(x) (which 1), float32. */
static PyObject *py_activation(PyObject *self, PyObject *args) {
    PyObject *ox, *oout;
    int which;
    if (!PyArg_ParseTuple(args, "OOi", &ox, &oout, &which)) return NULL;
    onyx_array x, out;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {ox, &x, 'f', 1, 0, "activation x"}, {oout, &out, 'f', 1, ONYX_OUT, "activation out"}) < 0 ||
        ONYX_EXPECT_SHAPE(&out, "activation out", x.shape[0]) < 0)
        goto done;
    {
        const float *px = (const float *)x.data;
        float *po = (float *)out.data;
        Py_ssize_t sx = x.strides[0], so = out.strides[0];
        for (Py_ssize_t i = 0; i < x.shape[0]; i++) po[i * so] = which ? tanh32(px[i * sx]) : sigmoid32(px[i * sx]);
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&x, &out);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(lstm_sequence,
                "lstm_sequence(xw, r_t, h, c, y, clip, input_forget, threads): the LSTM time loop of every direction."),
    ONYX_METHOD(activation, "activation(x, out, which): out = sigmoid(x) (0) or tanh(x) (1)."),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_rnn, "The LSTM time loop, float32.", methods)
