/* onyx.kernels._conv: the convolution loops numpy runs slowly (memory-bound ones): depthwise
 * convolution (NCHW on phase planes, and channels-last with its activation fused) and the epilogues
 * that finish a GEMM's output (bias, residual, activation in one pass; NCHW, channels-last and the
 * channels-last crop of an RGB stem). float32 and float64. Called from onyx.kernels.conv, which
 * documents the arguments; every entry point checks what guards memory and raises on a mismatch. */
#include "_common.h"
#include "_act.h"

#include <stdlib.h>

/* The phase-plane geometry of a 2-D depthwise convolution (see depthwise_nchw). */
typedef struct {
    Py_ssize_t chans, h, w, oh, ow, sh, sw, qw, length, width, taps;
    Py_ssize_t *row_plane, *row_base;    /* per input row: its phase plane (row phase * sw), its offset */
    Py_ssize_t col_first[64], col_start[64], col_count[64]; /* per column phase (sw <= 64) */
    int64_t *tap_phase, *tap_off;        /* per tap: its phase plane and offset there */
} dw_geometry;

/* The channels-last depthwise convolution's shape (see depthwise_nhwc). */
typedef struct {
    Py_ssize_t n, h, w, c, kh, kw, oh, ow, sh, sw, pt, pl;
    Py_ssize_t oy0, oy1, ox0, ox1; /* output rows / columns whose 3x3 window lies inside x */
    int three;
} dwcl_args;

#define ONYX_CAT_(a, b) a##b
#define ONYX_CAT(a, b) ONYX_CAT_(a, b)

#define T float
#define S(name) ONYX_CAT(name, _f32)
#include "_conv_body.h"
#undef T
#undef S

#define T double
#define S(name) ONYX_CAT(name, _f64)
#include "_conv_body.h"
#undef T
#undef S

static int threads_for(int requested, Py_ssize_t items) {
    int t = onyx_threads(requested);
    if (items < t) t = items < 1 ? 1 : (int)items;
    return t;
}

static int check_act(int kind) {
    if (!onyx_act_valid(kind)) {
        PyErr_Format(PyExc_ValueError, "activation kind %d is not one of 0..3", kind);
        return -1;
    }
    return 0;
}

/* What every epilogue takes after its three arrays: the activation (checked) and the threads. */
typedef struct {
    int kind, threads;
    double alpha, beta;
} act_args;

static int parse_epilogue(PyObject *args, PyObject **o, act_args *act) {
    if (!PyArg_ParseTuple(args, "OOOiddi", &o[0], &o[1], &o[2], &act->kind, &act->alpha, &act->beta, &act->threads))
        return -1;
    return check_act(act->kind);
}

/* Array arguments: (void *) data, converted by C to the element type of the kernel ONYX_BY_REAL calls. */
#define D(a) ((void *)(a).data)

/* The flags of an output array: writable, C-contiguous. */
#define OUT (ONYX_OUT | ONYX_DENSE)

/* ------------------------------------------------------------------------------------------------- */

PyDoc_STRVAR(depthwise_nchw_doc,
             "depthwise_nchw(x, w, b, y, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, act, alpha, beta, threads): "
             "y = act(depthwise conv of x (N, C, H, W) with w (C*mult, kh*kw) + b) on phase planes.");

static PyObject *py_depthwise_nchw(PyObject *self, PyObject *args) {
    PyObject *ox, *ow, *ob, *oy;
    Py_ssize_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int kind, threads;
    double alpha, beta;
    if (!PyArg_ParseTuple(args, "OOOOnnnnnnnnnniddi", &ox, &ow, &ob, &oy, &kh, &kw, &sh, &sw, &dh, &dw, &pt,
                          &pl, &pb, &pr, &kind, &alpha, &beta, &threads))
        return NULL;
    onyx_array x, w, b, y;
    char fmt = 0;
    PyObject *result = NULL;
    Py_ssize_t *rows = NULL;
    int64_t *taps = NULL;
    void *scratch = NULL;
    if (check_act(kind) < 0) return NULL;
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 || pt < 0 || pl < 0 || pb < 0 || pr < 0 || sw > 64) {
        PyErr_SetString(PyExc_ValueError, "depthwise_nchw: kernel, strides (sw <= 64), dilations must be positive, pads not negative");
        return NULL;
    }
    if (ONYX_GET_ARGS(&fmt, {ox, &x, 'r', 4, ONYX_DENSE, "depthwise_nchw x"}, {ow, &w, 'r', 2, ONYX_DENSE, "depthwise_nchw w"},
                      {ob, &b, 'r', 1, ONYX_DENSE, "depthwise_nchw b"}, {oy, &y, 'r', 4, OUT, "depthwise_nchw y"}) < 0)
        goto done;
    const Py_ssize_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
    const Py_ssize_t m = y.shape[1], oh = y.shape[2], owd = y.shape[3];
    if (c < 1 || m % c != 0) {
        PyErr_Format(PyExc_ValueError, "depthwise_nchw: y has %zd channels, not a multiple of x's %zd", m, c);
        goto done;
    }
    if (ONYX_EXPECT_SHAPE(&w, "depthwise_nchw w", m, kh * kw) < 0 || ONYX_EXPECT_SHAPE(&y, "depthwise_nchw y", n, m) < 0)
        goto done;
    if (b.shape[0] != 0 && b.shape[0] != m) {
        PyErr_Format(PyExc_ValueError, "depthwise_nchw: b has %zd values for %zd channels", b.shape[0], m);
        goto done;
    }
    /* every window inside the padded input */
    if ((oh > 0 && (oh - 1) * sh + (kh - 1) * dh >= h + pt + pb) ||
        (owd > 0 && (owd - 1) * sw + (kw - 1) * dw >= wd + pl + pr)) {
        PyErr_SetString(PyExc_ValueError, "depthwise_nchw: the output is larger than the padded input allows");
        goto done;
    }
    if (n * m * oh * owd == 0) {
        result = Py_None;
        goto done;
    }
    {
        dw_geometry g;
        memset(&g, 0, sizeof(g));
        g.chans = c;
        g.h = h;
        g.w = wd;
        g.oh = oh;
        g.ow = owd;
        g.sh = sh;
        g.sw = sw;
        const Py_ssize_t qh = (h + pt + pb + sh - 1) / sh;
        g.qw = (wd + pl + pr + sw - 1) / sw;
        g.length = oh * g.qw;
        g.taps = kh * kw;
        Py_ssize_t max_off = 0;
        taps = PyMem_Malloc(sizeof(int64_t) * 2 * g.taps + 1);
        rows = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * h + 1);
        if (taps == NULL || rows == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        g.tap_phase = taps;
        g.tap_off = taps + g.taps;
        for (Py_ssize_t ky = 0; ky < kh; ky++)
            for (Py_ssize_t kx = 0; kx < kw; kx++) {
                const Py_ssize_t t = ky * kw + kx, vy = ky * dh, vx = kx * dw;
                g.tap_phase[t] = (vy % sh) * sw + vx % sw;
                g.tap_off[t] = (vy / sh) * g.qw + vx / sw;
                if (g.tap_off[t] > max_off) max_off = g.tap_off[t];
            }
        g.width = qh * g.qw > g.length + max_off ? qh * g.qw : g.length + max_off;
        g.row_plane = rows;
        g.row_base = rows + h;
        for (Py_ssize_t i = 0; i < h; i++) {
            g.row_plane[i] = ((i + pt) % sh) * sw;
            g.row_base[i] = ((i + pt) / sh) * g.qw;
        }
        for (Py_ssize_t rw = 0; rw < sw; rw++) {
            const Py_ssize_t j0 = ((rw - pl) % sw + sw) % sw;
            g.col_first[rw] = j0;
            g.col_start[rw] = (j0 + pl) / sw;
            g.col_count[rw] = wd > j0 ? (wd - j0 + sw - 1) / sw : 0;
        }
        const int t = threads_for(threads, n * c);
        const size_t item = fmt == 'f' ? sizeof(float) : sizeof(double);
        const Py_ssize_t per_thread = sh * sw * g.width + g.length + 16; /* planes, then the accumulator */
        scratch = PyMem_RawMalloc((size_t)per_thread * (size_t)t * item);
        if (scratch == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS;
        ONYX_BY_REAL(fmt, depthwise_nchw, D(x), D(w), D(b), b.shape[0], D(y), n * c, m / c, &g, scratch, per_thread,
                     kind, alpha, beta, t);
        Py_END_ALLOW_THREADS;
        result = Py_None;
    }
done:
    PyMem_RawFree(scratch);
    PyMem_Free(taps);
    PyMem_Free(rows);
    ONYX_RELEASE(&x, &w, &b, &y);
    Py_XINCREF(result);
    return result;
}

/* ------------------------------------------------------------------------------------------------- */

PyDoc_STRVAR(depthwise_nhwc_doc,
             "depthwise_nhwc(x, w, b, y, sh, sw, pt, pl, act, alpha, beta, threads): y (N, OH, OW, C) = "
             "act(depthwise conv of x (N, H, W, C) with w (KH, KW, C) + b (C,)), channels-last.");

static PyObject *py_depthwise_nhwc(PyObject *self, PyObject *args) {
    PyObject *ox, *ow, *ob, *oy;
    Py_ssize_t sh, sw, pt, pl;
    int kind, threads;
    double alpha, beta;
    if (!PyArg_ParseTuple(args, "OOOOnnnniddi", &ox, &ow, &ob, &oy, &sh, &sw, &pt, &pl, &kind, &alpha, &beta,
                          &threads))
        return NULL;
    if (check_act(kind) < 0) return NULL;
    if (sh < 1 || sw < 1 || pt < 0 || pl < 0) {
        PyErr_SetString(PyExc_ValueError, "depthwise_nhwc: strides must be positive, pads not negative");
        return NULL;
    }
    onyx_array x, w, b, y;
    char fmt = 0;
    PyObject *result = NULL;
    void *zeros = NULL;
    if (ONYX_GET_ARGS(&fmt, {ox, &x, 'r', 4, ONYX_DENSE, "depthwise_nhwc x"}, {ow, &w, 'r', 3, ONYX_DENSE, "depthwise_nhwc w"},
                      {ob, &b, 'r', 1, ONYX_DENSE, "depthwise_nhwc b"}, {oy, &y, 'r', 4, OUT, "depthwise_nhwc y"}) < 0)
        goto done;
    dwcl_args g = {.n = x.shape[0], .h = x.shape[1], .w = x.shape[2], .c = x.shape[3], .kh = w.shape[0],
                   .kw = w.shape[1], .oh = y.shape[1], .ow = y.shape[2], .sh = sh, .sw = sw, .pt = pt, .pl = pl};
    if (ONYX_EXPECT_SHAPE(&w, "depthwise_nhwc w", -1, -1, g.c) < 0 || ONYX_EXPECT_SHAPE(&b, "depthwise_nhwc b", g.c) < 0 ||
        ONYX_EXPECT_SHAPE(&y, "depthwise_nhwc y", g.n, -1, -1, g.c) < 0)
        goto done;
    if (g.n * g.oh * g.ow * g.c == 0) {
        result = Py_None;
        goto done;
    }
    g.three = g.kh == 3 && g.kw == 3;
    g.oy0 = (pt + sh - 1) / sh;
    g.ox0 = (pl + sw - 1) / sw;
    {
        Py_ssize_t oy1 = onyx_floordiv(g.h - 3 + pt, sh) + 1, ox1 = onyx_floordiv(g.w - 3 + pl, sw) + 1;
        oy1 = oy1 < g.oh ? oy1 : g.oh;
        ox1 = ox1 < g.ow ? ox1 : g.ow;
        g.oy1 = oy1 > g.oy0 ? oy1 : g.oy0;
        g.ox1 = ox1 > g.ox0 ? ox1 : g.ox0;
    }
    {
        const size_t item = fmt == 'f' ? sizeof(float) : sizeof(double);
        zeros = PyMem_Calloc((size_t)g.c, item); /* the row a 3x3 tap outside x reads */
        if (zeros == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        const int t = threads_for(threads, g.n * g.oh);
        Py_BEGIN_ALLOW_THREADS;
        ONYX_BY_REAL(fmt, depthwise_nhwc, &g, D(x), D(w), D(b), D(y), zeros, kind, alpha, beta, t);
        Py_END_ALLOW_THREADS;
        result = Py_None;
    }
done:
    PyMem_Free(zeros);
    ONYX_RELEASE(&x, &w, &b, &y);
    Py_XINCREF(result);
    return result;
}

/* ------------------------------------------------------------------------------------------------- */

PyDoc_STRVAR(epilogue_nchw_doc,
             "epilogue_nchw(y, row0, nrows, src, b, z, act, alpha, beta, threads): y[i, row0:row0+nrows] = "
             "act(src[i, :, :W] (or y itself when src is None) + b[i % len(b)] + z[i, row0:row0+nrows]) "
             "for y (P, R, W); z None or (P, R, W).");

static PyObject *py_epilogue_nchw(PyObject *self, PyObject *args) {
    PyObject *oy, *osrc, *ob, *oz;
    Py_ssize_t row0, nrows;
    int kind, threads;
    double alpha, beta;
    if (!PyArg_ParseTuple(args, "OnnOOOiddi", &oy, &row0, &nrows, &osrc, &ob, &oz, &kind, &alpha, &beta,
                          &threads))
        return NULL;
    if (check_act(kind) < 0) return NULL;
    onyx_array y, b, src, z;
    char fmt = 0;
    PyObject *result = NULL;
    const int opt = ONYX_OPTIONAL | ONYX_DENSE;
    if (ONYX_GET_ARGS(&fmt, {oy, &y, 'r', 3, OUT, "epilogue_nchw y"}, {ob, &b, 'r', 1, ONYX_DENSE, "epilogue_nchw b"},
                      {osrc, &src, 'r', 3, opt, "epilogue_nchw src"}, {oz, &z, 'r', 3, opt, "epilogue_nchw z"}) < 0)
        goto done;
    const Py_ssize_t planes = y.shape[0], rows = y.shape[1], width = y.shape[2];
    if (row0 < 0 || nrows < 0 || row0 + nrows > rows) {
        PyErr_Format(PyExc_ValueError, "epilogue_nchw: rows %zd..%zd outside y's %zd", row0, row0 + nrows, rows);
        goto done;
    }
    if (ONYX_EXPECT_SHAPE(&src, "epilogue_nchw src", planes, nrows) < 0 ||
        ONYX_EXPECT_SHAPE(&z, "epilogue_nchw z", planes, rows, width) < 0)
        goto done;
    const Py_ssize_t srow = src.shape[2];
    if (src.held && srow < width) {
        PyErr_Format(PyExc_ValueError, "epilogue_nchw: src rows of %zd are shorter than y's %zd", srow, width);
        goto done;
    }
    {
        const int t = threads_for(threads, planes);
        Py_BEGIN_ALLOW_THREADS;
        ONYX_BY_REAL(fmt, epilogue_nchw, D(y), planes, rows, width, row0, nrows, D(src), srow, D(b), b.shape[0], D(z),
                     kind, alpha, beta, t);
        Py_END_ALLOW_THREADS;
        result = Py_None;
    }
done:
    ONYX_RELEASE(&y, &b, &src, &z);
    Py_XINCREF(result);
    return result;
}

/* ------------------------------------------------------------------------------------------------- */

/* elements per flat run of epilogue_nhwc without z (whole rows of channels) */
#define FLAT_RUN 1024

PyDoc_STRVAR(epilogue_nhwc_doc,
             "epilogue_nhwc(y, b, z, act, alpha, beta, threads): y (rows, C) = act(y + b (C,) + z) in place; "
             "z None or (rows, C).");

static PyObject *py_epilogue_nhwc(PyObject *self, PyObject *args) {
    PyObject *o[3]; /* y, b, z */
    act_args act;
    if (parse_epilogue(args, o, &act) < 0) return NULL;
    PyObject *oy = o[0], *ob = o[1], *oz = o[2];
    onyx_array y, b, z;
    char fmt = 0;
    PyObject *result = NULL;
    void *bt = NULL;
    if (ONYX_GET_ARGS(&fmt, {oy, &y, 'r', 2, OUT, "epilogue_nhwc y"}, {ob, &b, 'r', 1, ONYX_DENSE, "epilogue_nhwc b"},
                      {oz, &z, 'r', 2, ONYX_OPTIONAL | ONYX_DENSE, "epilogue_nhwc z"}) < 0)
        goto done;
    const Py_ssize_t rows = y.shape[0], c = y.shape[1];
    if (ONYX_EXPECT_SHAPE(&b, "epilogue_nhwc b", c) < 0 || ONYX_EXPECT_SHAPE(&z, "epilogue_nhwc z", rows, c) < 0) goto done;
    if (rows * c == 0) {
        result = Py_None;
        goto done;
    }
    {
        const size_t item = fmt == 'f' ? sizeof(float) : sizeof(double);
        const Py_ssize_t per = oz == Py_None ? (FLAT_RUN / c > 1 ? FLAT_RUN / c : 1) : 1;
        bt = PyMem_Malloc((size_t)(per * c) * item);
        if (bt == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < per; i++) memcpy((char *)bt + i * c * item, b.data, (size_t)c * item);
        const int t = threads_for(act.threads, (rows + per - 1) / per);
        Py_BEGIN_ALLOW_THREADS;
        ONYX_BY_REAL(fmt, epilogue_nhwc, D(y), rows, c, bt, per, D(z), act.kind, act.alpha, act.beta, t);
        Py_END_ALLOW_THREADS;
        result = Py_None;
    }
done:
    PyMem_Free(bt);
    ONYX_RELEASE(&y, &b, &z);
    Py_XINCREF(result);
    return result;
}

/* ------------------------------------------------------------------------------------------------- */

PyDoc_STRVAR(epilogue_crop_nhwc_doc,
             "epilogue_crop_nhwc(src, y, bt, act, alpha, beta, threads): y (R, L) = act(src[:, :L] + bt) for "
             "src (R, S), S >= L; bt (L,) or empty.");

static PyObject *py_epilogue_crop_nhwc(PyObject *self, PyObject *args) {
    PyObject *o[3]; /* src, y, bt */
    act_args act;
    if (parse_epilogue(args, o, &act) < 0) return NULL;
    PyObject *osrc = o[0], *oy = o[1], *ob = o[2];
    onyx_array src, y, bt;
    char fmt = 0;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(&fmt, {oy, &y, 'r', 2, OUT, "epilogue_crop_nhwc y"},
                      {osrc, &src, 'r', 2, ONYX_DENSE, "epilogue_crop_nhwc src"},
                      {ob, &bt, 'r', 1, ONYX_DENSE, "epilogue_crop_nhwc bt"}) < 0)
        goto done;
    const Py_ssize_t rows = y.shape[0], width = y.shape[1], srow = src.shape[1];
    if (ONYX_EXPECT_SHAPE(&src, "epilogue_crop_nhwc src", rows) < 0) goto done;
    if (srow < width) {
        PyErr_Format(PyExc_ValueError, "epilogue_crop_nhwc: src rows of %zd are shorter than y's %zd", srow, width);
        goto done;
    }
    if (bt.shape[0] != 0 && bt.shape[0] != width) {
        PyErr_Format(PyExc_ValueError, "epilogue_crop_nhwc: bt has %zd values for rows of %zd", bt.shape[0], width);
        goto done;
    }
    {
        const int t = threads_for(act.threads, rows);
        Py_BEGIN_ALLOW_THREADS;
        ONYX_BY_REAL(fmt, epilogue_crop_nhwc, D(src), srow, D(y), rows, width, bt.shape[0] ? D(bt) : NULL, act.kind,
                     act.alpha, act.beta, t);
        Py_END_ALLOW_THREADS;
        result = Py_None;
    }
done:
    ONYX_RELEASE(&src, &y, &bt);
    Py_XINCREF(result);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(depthwise_nchw, depthwise_nchw_doc),
    ONYX_METHOD(depthwise_nhwc, depthwise_nhwc_doc),
    ONYX_METHOD(epilogue_nchw, epilogue_nchw_doc),
    ONYX_METHOD(epilogue_nhwc, epilogue_nhwc_doc),
    ONYX_METHOD(epilogue_crop_nhwc, epilogue_crop_nhwc_doc),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_conv, "Convolution loops of onyx.kernels.conv: depthwise (NCHW, channels-last) and GEMM epilogues.",
            methods)
