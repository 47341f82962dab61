/* onyx.kernels._pool: 2-D max pooling (float32, float64, uint8, int8) over NCHW planes, called from
 * onyx.kernels.pool. Window positions outside the input (padding, ceil mode) are ignored; NaNs
 * propagate as np.maximum propagates them. */
#include "_common.h"
#include "_act.h"

#include <math.h>

typedef struct {
    Py_ssize_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, row_len;
} pool_geometry;

#define ONYX_CAT_(a, b) a##b
#define ONYX_CAT(a, b) ONYX_CAT_(a, b)

#define T float
#define S(name) ONYX_CAT(name, _f32)
#define NEG_INF (-INFINITY)
#include "_pool_body.h"
#undef T
#undef S
#undef NEG_INF

#define T double
#define S(name) ONYX_CAT(name, _f64)
#define NEG_INF (-(double)INFINITY)
#include "_pool_body.h"
#undef T
#undef S
#undef NEG_INF

#define POOL_INTEGER 1
#define T uint8_t
#define S(name) ONYX_CAT(name, _u8)
#define NEG_INF 0
#include "_pool_body.h"
#undef T
#undef S
#undef NEG_INF

#define T int8_t
#define S(name) ONYX_CAT(name, _s8)
#define NEG_INF (-128)
#include "_pool_body.h"
#undef T
#undef S
#undef NEG_INF
#undef POOL_INTEGER

PyDoc_STRVAR(max_pool2d_doc,
             "max_pool2d(x, y, kh, kw, sh, sw, dh, dw, pt, pl, threads[, eight]): y (N, C, OH, OW) = the window "
             "maxima of x (N, C, H, W), positions outside x ignored; float32/float64, or with eight 1 / 2 uint8 / "
             "int8 given as uint8 views.");

static PyObject *py_max_pool2d(PyObject *self, PyObject *args) {
    PyObject *ox, *oy;
    pool_geometry g;
    int threads, eight = 0; /* 0: float32/float64 (x's type), 1: uint8, 2: int8 (both as uint8 views) */
    if (!PyArg_ParseTuple(args, "OOnnnnnnnni|i", &ox, &oy, &g.kh, &g.kw, &g.sh, &g.sw, &g.dh, &g.dw, &g.pt, &g.pl,
                          &threads, &eight))
        return NULL;
    if (eight < 0 || eight > 2) {
        PyErr_SetString(PyExc_ValueError, "max_pool2d: eight must be 0 (float), 1 (uint8) or 2 (int8)");
        return NULL;
    }
    if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.pt < 0 || g.pl < 0) {
        PyErr_SetString(PyExc_ValueError, "max_pool2d: kernel, strides and dilations must be positive, pads not negative");
        return NULL;
    }
    onyx_array x, y;
    char fmt = 0;
    PyObject *result = NULL;
    void *scratch = NULL;
    const char want = eight ? 'B' : 'r';
    if (ONYX_GET_ARGS(eight ? NULL : &fmt, {ox, &x, want, 4, ONYX_DENSE, "max_pool2d x"},
                      {oy, &y, want, 4, ONYX_OUT | ONYX_DENSE, "max_pool2d y"}) < 0 ||
        ONYX_EXPECT_SHAPE(&y, "max_pool2d y", x.shape[0], x.shape[1]) < 0)
        goto done;
    g.h = x.shape[2];
    g.w = x.shape[3];
    g.oh = y.shape[2];
    g.ow = y.shape[3];
    {
        const Py_ssize_t planes = x.shape[0] * x.shape[1];
        if (planes * g.oh * g.ow == 0) {
            result = Py_None;
            goto done;
        }
        /* the row every window reads: (ow-1)*sw + (kw-1)*dw + 1 positions, the input at pl */
        const Py_ssize_t span = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
        g.row_len = span > g.pl + g.w ? span : g.pl + g.w;
        int t = onyx_threads(threads);
        if (planes < t) t = (int)planes;
        const size_t item = eight ? 1 : fmt == 'f' ? sizeof(float) : sizeof(double);
        scratch = PyMem_RawMalloc((size_t)g.row_len * (size_t)t * item);
        if (scratch == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS;
        if (eight == 1)
            max_pool2d_u8((const uint8_t *)x.data, (uint8_t *)y.data, planes, &g, (uint8_t *)scratch, t);
        else if (eight == 2)
            max_pool2d_s8((const int8_t *)x.data, (int8_t *)y.data, planes, &g, (int8_t *)scratch, t);
        else
            ONYX_BY_REAL(fmt, max_pool2d, (void *)x.data, (void *)y.data, planes, &g, scratch, t);
        Py_END_ALLOW_THREADS;
        result = Py_None;
    }
done:
    PyMem_RawFree(scratch);
    ONYX_RELEASE(&x, &y);
    Py_XINCREF(result);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(max_pool2d, max_pool2d_doc),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_pool, "Pooling loops of onyx.kernels.pool: 2-D max pooling.", methods)
