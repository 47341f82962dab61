/* GELU (erf and tanh forms, with an optional bias over the last axis) and erf, elementwise over
 * float32 and float64 arrays, in one pass over memory with every value of an element in registers.
 *
 * erf is onyx's own fit (onyx.kernels.activation explains it; its numpy path evaluates the same
 * polynomials): for |x| < 1, x S(x^2 - c); from 1, 1 - exp(-x^2) G(|x| - c) in float32 (|x| clamped
 * to 4, where erf is 1 in float32) and 1 - exp(-x^2) H(1/|x| - c) / |x| in float64 (clamped to 6).
 * float32 uses onyx_exp32 (no libm call, so the loops vectorise). Both branches are computed for
 * every element and one chosen, without branches. NaN gives NaN. */
#define PY_SSIZE_T_CLEAN
#include "_common.h"
#include "_exp32.h"

#include <math.h>

/* Elements per piece of work handed to a thread (the bias-free case splits the flat array). */
#define CHUNK 4096

/* p(s) by Horner's rule, coefficients of decreasing degree (n known at compile time: unrolled) */
#define DEFINE_HORNER(name, T)                                                                       \
    ONYX_INLINE T name(T s, const T *c, int n) {                                                     \
        T p = c[0];                                                                                  \
        _Pragma("GCC unroll 32") for (int i = 1; i < n; i++) p = p * s + c[i];                       \
        return p;                                                                                    \
    }
DEFINE_HORNER(horner32, float)
DEFINE_HORNER(horner64, double)
#define HORNER(f, s, c) f((s), (c), (int)(sizeof(c) / sizeof((c)[0])))

/* ---- float32 ---- */

/* erf(a) / a for |a| < 1, in a^2 - 0.5 (float32 fit) */
ONYX_INLINE float s32(float a2) {
    static const float c[] = {
        (float)7.882497110086663e-05, (float)-0.0005654105859760388, (float)0.0034801918361182706,
        (float)-0.01828335623113844,  (float)0.07940999089111836,    (float)-0.28107219456307414,
        (float)0.9654687386375511,
    };
    return HORNER(horner32, a2 - 0.5f, c);
}

/* erfc(a) exp(a^2) on [1, 4], in a - 2.5 */
ONYX_INLINE float g32(float a) {
    static const float c[] = {
        (float)1.6718017850688058e-06, (float)-6.3860857039413425e-06, (float)1.435366257269743e-05,
        (float)-5.35858090596747e-05,  (float)0.00021297208021972148,  (float)-0.000738997567746934,
        (float)0.002465982357676093,   (float)-0.007999345595343389,   (float)0.024938203738504222,
        (float)-0.07434760092710317,   (float)0.21080635752833896,
    };
    return HORNER(horner32, a - 2.5f, c);
}

/* |erf(z)| for a = |z| (not NaN-safe: callers pass NaN through themselves) */
ONYX_INLINE float erf_abs32(float a) {
    a = a < 4.0f ? a : 4.0f;
    const float a2 = a * a;
    const float small = s32(a2) * a;
    const float big = 1.0f - onyx_exp32(-a2) * g32(a);
    return a < 1.0f ? small : big;
}

ONYX_INLINE float gelu32(float v) {
    const float m = erf_abs32(fabsf(v * (float)0.7071067811865476));
    const float e = v < 0.0f ? -m : m;
    const float res = (1.0f + e) * (v * 0.5f); /* halving first: no overflow of 2v near FLT_MAX */
    return v != v ? v : res;
}

/* v / (1 + exp(-2 t)), t = sqrt(2/pi) (v + 0.044715 v^3): 0.5 v (1 + tanh t) without its
 * cancellation where tanh is near -1 */
ONYX_INLINE float gelu_tanh32(float v) {
    const float k2 = (float)(-2.0 * 0.7978845608028654);
    const float c3 = (float)0.044715;
    const float u = k2 * (v + c3 * v * v * v);
    const float res = v / (1.0f + onyx_exp32(u));
    return v != v ? v : res;
}

ONYX_INLINE float erf32(float x) {
    const float r = copysignf(erf_abs32(fabsf(x)), x);
    return x != x ? x : r;
}

/* ---- float64 ---- */

ONYX_INLINE double s64(double a2) {
    static const double c[] = {
        -7.798543850549947e-10, 9.432321288548624e-09,   -1.0420369433085271e-07, 1.0536323833826933e-06,
        -9.614808686849139e-06, 7.829649688394879e-05,   -0.0005611894221159944,  0.0034802744965701446,
        -0.018283884489152906,  0.07940998675593687,     -0.2810721780454342,     0.9654687386698673,
    };
    return HORNER(horner64, a2 - 0.5, c);
}

/* a erfc(a) exp(a^2) on [1, 6], in 1/a - 7/12 */
ONYX_INLINE double h64(double s) {
    static const double c[] = {
        0.25078657571760904,   0.02262149302498069,   -0.4243746624475736,  0.2341193739225236,
        0.0341820473861779,    -0.06743581322740265,  0.06628547485901293,  -0.08801156394436697,
        0.08221594129284007,   -0.04763185019590349,  0.003166033340202935, 0.037442293501776164,
        -0.06301828781221525,  0.06551144646290044,   -0.04267019622273293, -0.0004660743574782559,
        0.051029890627973515,  -0.08856239570570126,  0.08598137592104492,  -0.011156475268370405,
        -0.17107890702111914,  0.4966664851259376,
    };
    return HORNER(horner64, s, c);
}

ONYX_INLINE double erf_abs64(double a) {
    const double clamped = a < 6.0 ? a : 6.0;
    const double small = s64(clamped * clamped) * clamped;
    const double b = clamped > 1.0 ? clamped : 1.0;
    const double big = 1.0 - exp(-(b * b)) / b * h64(1.0 / b - 0.5833333333333334);
    return a < 1.0 ? small : big;
}

ONYX_INLINE double gelu64(double v) {
    const double m = erf_abs64(fabs(v * 0.7071067811865476));
    const double e = v < 0.0 ? -m : m;
    const double res = (1.0 + e) * (v * 0.5);
    return v != v ? v : res;
}

ONYX_INLINE double gelu_tanh64(double v) {
    const double u = -2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v);
    const double res = v / (1.0 + exp(u));
    return v != v ? v : res;
}

ONYX_INLINE double erf64(double x) {
    const double r = copysign(erf_abs64(fabs(x)), x);
    return x != x ? x : r;
}

/* ---- per-block workers: out = f(x (+ bias)) over `rows` rows of `cols` ---- */

#define DEFINE_WORKER(name, T, f)                                                                    \
    ONYX_VECTOR static void name(const T *x, const T *bias, T *out, Py_ssize_t rows, Py_ssize_t cols) { \
        if (bias == NULL) {                                                                          \
            const Py_ssize_t n = rows * cols;                                                        \
            _Pragma("omp simd") for (Py_ssize_t i = 0; i < n; i++) out[i] = f(x[i]);                 \
            return;                                                                                  \
        }                                                                                            \
        for (Py_ssize_t r = 0; r < rows; r++) {                                                      \
            const T *xr = x + r * cols;                                                              \
            T *o = out + r * cols;                                                                   \
            _Pragma("omp simd") for (Py_ssize_t j = 0; j < cols; j++) o[j] = f(xr[j] + bias[j]);     \
        }                                                                                            \
    }

DEFINE_WORKER(gelu_f32, float, gelu32)
DEFINE_WORKER(gelu_tanh_f32, float, gelu_tanh32)
DEFINE_WORKER(erf_f32, float, erf32)
DEFINE_WORKER(gelu_f64, double, gelu64)
DEFINE_WORKER(gelu_tanh_f64, double, gelu_tanh64)
DEFINE_WORKER(erf_f64, double, erf64)

typedef void (*worker_f32)(const float *, const float *, float *, Py_ssize_t, Py_ssize_t);
typedef void (*worker_f64)(const double *, const double *, double *, Py_ssize_t, Py_ssize_t);

typedef struct {
    worker_f32 f32;
    worker_f64 f64;
} kernel;

/* Runs `k` over n elements: without a bias in flat pieces of CHUNK, with one in blocks of whole rows
 * of `cols` (about CHUNK elements each); the pieces go to `threads` threads. */
static void run_map(kernel k, int is64, const char *x, const char *bias, char *out, Py_ssize_t n,
                    Py_ssize_t cols, int threads) {
    const size_t item = is64 ? sizeof(double) : sizeof(float);
    Py_ssize_t piece_rows, row_len, rows;
    if (bias == NULL) {
        rows = n, row_len = 1, piece_rows = CHUNK;
    } else {
        rows = n / cols, row_len = cols, piece_rows = cols >= CHUNK ? 1 : CHUNK / cols;
    }
    const Py_ssize_t pieces = (rows + piece_rows - 1) / piece_rows;
    ONYX_PARALLEL_FOR(threads)
    for (Py_ssize_t p = 0; p < pieces; p++) {
        const Py_ssize_t r0 = p * piece_rows;
        const Py_ssize_t nr = rows - r0 < piece_rows ? rows - r0 : piece_rows;
        const size_t at = (size_t)(r0 * row_len) * item;
        if (is64)
            k.f64((const double *)(x + at), (const double *)bias, (double *)(out + at), nr, row_len);
        else
            k.f32((const float *)(x + at), (const float *)bias, (float *)(out + at), nr, row_len);
    }
}

/* f(x (+ bias)) into out: x and out C-contiguous, same shape and type; bias None or 1-D, one value
 * per element of x's last axis. */
static PyObject *map_call(PyObject *args, kernel k, int with_bias, const char *name) {
    PyObject *xo, *bo = Py_None, *oo;
    int threads;
    int ok;
    if (with_bias)
        ok = PyArg_ParseTuple(args, "OOOi", &xo, &bo, &oo, &threads);
    else
        ok = PyArg_ParseTuple(args, "OOi", &xo, &oo, &threads);
    if (!ok) return NULL;
    onyx_array x, b, out;
    char real = 0;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(&real, {xo, &x, 'r', -1, ONYX_DENSE, name}, {oo, &out, 'r', -1, ONYX_OUT | ONYX_DENSE, name},
                      {bo, &b, 'r', 1, ONYX_OPTIONAL | ONYX_DENSE, name}) < 0)
        goto done;
    if (out.ndim != x.ndim) {
        PyErr_Format(PyExc_ValueError, "%s: out has rank %d where x has %d", name, out.ndim, x.ndim);
        goto done;
    }
    if (onyx_expect_dims(&out, x.shape, x.ndim, name) < 0) goto done;
    const Py_ssize_t cols = x.ndim ? x.shape[x.ndim - 1] : 1;
    if (bo != Py_None && (x.ndim < 1 || b.shape[0] != cols)) {
        PyErr_Format(PyExc_ValueError, "%s: bias must have one value per element of x's last axis (%zd)", name,
                     cols);
        goto done;
    }
    if (x.size > 0) {
        const char *bias = bo != Py_None ? b.data : NULL;
        Py_BEGIN_ALLOW_THREADS
        run_map(k, real == 'd', x.data, bias, out.data, x.size, cols, onyx_threads(threads));
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&x, &b, &out);
    return result;
}

static PyObject *py_gelu(PyObject *self, PyObject *args) {
    (void)self;
    return map_call(args, (kernel){gelu_f32, gelu_f64}, 1, "gelu");
}

static PyObject *py_gelu_tanh(PyObject *self, PyObject *args) {
    (void)self;
    return map_call(args, (kernel){gelu_tanh_f32, gelu_tanh_f64}, 1, "gelu_tanh");
}

static PyObject *py_erf(PyObject *self, PyObject *args) {
    (void)self;
    return map_call(args, (kernel){erf_f32, erf_f64}, 0, "erf");
}

static PyMethodDef methods[] = {
    ONYX_METHOD(gelu, "gelu(x, bias or None, out, threads): out = 0.5 v (1 + erf(v / sqrt 2)), v = x (+ bias)."),
    ONYX_METHOD(gelu_tanh, "gelu_tanh(x, bias or None, out, threads): "
                           "out = v / (1 + exp(-2 sqrt(2/pi) (v + 0.044715 v^3)))."),
    ONYX_METHOD(erf, "erf(x, out, threads): out = erf(x)."),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_activation, "GELU and erf kernels (float32 and float64, OpenMP).", methods)
