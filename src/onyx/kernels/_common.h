/* What every onyx kernel module shares: arrays taken from Python through the buffer protocol with
 * their element type, rank and shape checked before any memory is touched, and the OpenMP pragma
 * spelled once. Kernels read shapes and strides from these checked views only, so a caller that
 * passes the wrong array gets a Python exception, never a read out of bounds.
 *
 * Include after defining PY_SSIZE_T_CLEAN. */
#ifndef ONYX_KERNELS_COMMON_H
#define ONYX_KERNELS_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#define ONYX_OPENMP 1
#else
#define ONYX_OPENMP 0
#endif

/* "#pragma omp parallel for" over independent items, on `threads` threads (1: the caller alone). */
#define ONYX_STR(x) #x
#define ONYX_PARALLEL_FOR(threads) _Pragma(ONYX_STR(omp parallel for schedule(static) num_threads(threads) if((threads) > 1)))

/* On a function holding a hot inner loop: compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2, FMA)
 * and the baseline, the best chosen when the module loads (gcc's function multi-versioning), so one
 * build runs well on any x86-64 machine it is copied to. The clones are named by ISA level, not by CPU
 * model: "arch=skylake-avx512" is chosen on Intel's CPUs alone (an AMD EPYC with AVX-512 ran the
 * baseline clone). Put it on the per-row worker, not on a function holding an OpenMP region; helpers it
 * calls are ONYX_INLINE (gcc does not inline a plain function into a clone of another architecture).
 * Measured against explicit per-ISA copies chosen with __builtin_cpu_supports (GELU, softmax, layer
 * norm on an AMD EPYC): the same speed within 2%, so this is the one mechanism. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && __GNUC__ >= 12
#define ONYX_VECTOR __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* The clone ONYX_VECTOR runs here: 2 x86-64-v4, 1 x86-64-v3, 0 the baseline (the resolver's own test) */
static inline int onyx_isa_level(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v4") ? 2 : __builtin_cpu_supports("x86-64-v3") ? 1 : 0;
}
#else
#define ONYX_VECTOR
static inline int onyx_isa_level(void) { return 0; }
#endif

#if defined(__GNUC__)
#define ONYX_INLINE static inline __attribute__((always_inline))
#else
#define ONYX_INLINE static inline
#endif

#define ONYX_MAX_RANK 8

/* A checked view of a numpy array: data pointer, shape, strides in elements (not bytes). */
typedef struct {
    char *data;
    int ndim;
    Py_ssize_t shape[ONYX_MAX_RANK];
    Py_ssize_t strides[ONYX_MAX_RANK]; /* in elements */
    Py_ssize_t size;                  /* number of elements */
    Py_buffer view;
    int held;
} onyx_array;

/* The struct-module format letter of an element type: 'f' float32, 'd' float64, 'i' int32,
 * 'q' int64 ('l' accepted where long is 64-bit), 'B' uint8, 'b' int8, 'H' uint16, '?' bool. */
static inline int onyx_format_is(const char *format, char want) {
    if (format == NULL) return want == 'B';
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
    if (format[0] == '\0' || format[1] != '\0') return 0;
    if (format[0] == want) return 1;
    if (want == 'q' && sizeof(long) == 8 && format[0] == 'l') return 1;
    if (want == 'i' && sizeof(long) == 4 && format[0] == 'l') return 1;
    return 0;
}

/* Take `obj` as an array of element type `fmt` and rank `ndim` (-1: any rank up to ONYX_MAX_RANK),
 * writable when `writable`. Strided views are accepted; the kernel decides what it can walk.
 * On failure sets a Python exception naming `what` and returns -1. */
static inline int onyx_get(PyObject *obj, onyx_array *a, char fmt, int ndim, int writable, const char *what) {
    memset(a, 0, sizeof(*a));
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a %s%s array", what, writable ? "writable " : "",
                     fmt == 'f' ? "float32" : fmt == 'd' ? "float64" : "numeric");
        return -1;
    }
    a->held = 1;
    if (!onyx_format_is(a->view.format, fmt)) {
        PyErr_Format(PyExc_TypeError, "%s: element type '%s' where '%c' was expected", what,
                     a->view.format ? a->view.format : "B", fmt);
        return -1;
    }
    if (a->view.ndim > ONYX_MAX_RANK || (ndim >= 0 && a->view.ndim != ndim)) {
        PyErr_Format(PyExc_ValueError, "%s: rank %d where %d was expected", what, a->view.ndim, ndim);
        return -1;
    }
    a->data = (char *)a->view.buf;
    a->ndim = a->view.ndim;
    a->size = 1;
    for (int i = 0; i < a->ndim; i++) {
        a->shape[i] = a->view.shape[i];
        if (a->view.strides[i] % a->view.itemsize != 0) {
            PyErr_Format(PyExc_ValueError, "%s: strides are not a whole number of elements", what);
            return -1;
        }
        a->strides[i] = a->view.strides[i] / a->view.itemsize;
        a->size *= a->shape[i];
    }
    return 0;
}

static inline void onyx_release(onyx_array *a) {
    if (a->held) {
        PyBuffer_Release(&a->view);
        a->held = 0;
    }
}

/* Whether the array is C-contiguous (strides are those of a dense row-major array). */
static inline int onyx_contiguous(const onyx_array *a) {
    Py_ssize_t expect = 1;
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != expect) return 0;
        expect *= a->shape[i];
    }
    return 1;
}

/* Fails (ValueError naming `what`) unless dimension `dim` of `a` is `n`. */
static inline int onyx_expect_dim(const onyx_array *a, int dim, Py_ssize_t n, const char *what) {
    if (dim >= a->ndim || a->shape[dim] != n) {
        PyErr_Format(PyExc_ValueError, "%s: dimension %d is %zd where %zd was expected", what, dim,
                     dim < a->ndim ? a->shape[dim] : (Py_ssize_t)-1, n);
        return -1;
    }
    return 0;
}

static inline int onyx_expect_contiguous(const onyx_array *a, const char *what) {
    if (!onyx_contiguous(a)) {
        PyErr_Format(PyExc_ValueError, "%s: expected a C-contiguous array", what);
        return -1;
    }
    return 0;
}

/* The number of threads a call may use: at least 1. */
static inline int onyx_threads(int requested) { return requested < 1 ? 1 : requested; }

/* Takes `obj` as a float32 or float64 array (which one: *fmt, 'f' or 'd'; when *fmt is already set,
 * that one only): the element type is read first, so that onyx_get's error names what was wrong. */
static inline int onyx_get_real(PyObject *obj, onyx_array *a, char *fmt, int ndim, int writable, const char *what) {
    if (*fmt == 0) {
        Py_buffer probe;
        *fmt = 'f';
        if (PyObject_GetBuffer(obj, &probe, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
            if (onyx_format_is(probe.format, 'd')) *fmt = 'd';
            PyBuffer_Release(&probe);
        } else {
            PyErr_Clear();
        }
    }
    return onyx_get(obj, a, *fmt, ndim, writable, what);
}

/* ---- the arguments of an entry point, as a table ----
 *
 *     onyx_array x, w, out;
 *     char real = 0;
 *     if (ONYX_GET_ARGS(&real, {ox, &x, 'r', 2, ONYX_DENSE, "f x"}, {oo, &out, 'r', 2, ONYX_OUT | ONYX_DENSE,
 *                                                                    "f out"}) < 0) goto done;
 *     ...
 * done:
 *     ONYX_RELEASE(&x, &w, &out);
 *
 * Every array of the table is emptied before the first is taken, so that ONYX_RELEASE may run after any
 * failure. Element type 'r': float32 or float64, the same for every 'r' argument (*real says which). */
enum { ONYX_OUT = 1, ONYX_DENSE = 2, ONYX_OPTIONAL = 4 };

typedef struct {
    PyObject *obj;
    onyx_array *a;
    char fmt;
    int ndim; /* -1: any rank */
    int flags;
    const char *what;
} onyx_arg;

static inline int onyx_get_args(char *real, const onyx_arg *args, int n) {
    for (int i = 0; i < n; i++) memset(args[i].a, 0, sizeof(onyx_array));
    for (int i = 0; i < n; i++) {
        const onyx_arg *g = &args[i];
        if ((g->flags & ONYX_OPTIONAL) && g->obj == Py_None) continue;
        const int writable = (g->flags & ONYX_OUT) != 0;
        const int got = g->fmt == 'r' ? onyx_get_real(g->obj, g->a, real, g->ndim, writable, g->what)
                                      : onyx_get(g->obj, g->a, g->fmt, g->ndim, writable, g->what);
        if (got < 0) return -1;
        if ((g->flags & ONYX_DENSE) && onyx_expect_contiguous(g->a, g->what) < 0) return -1;
    }
    return 0;
}

#define ONYX_ARGS_(...) ((const onyx_arg[]){__VA_ARGS__})
#define ONYX_GET_ARGS(real, ...)                                                                          \
    onyx_get_args((real), ONYX_ARGS_(__VA_ARGS__), (int)(sizeof ONYX_ARGS_(__VA_ARGS__) / sizeof(onyx_arg)))

/* Releases every array named (each emptied or taken before). */
#define ONYX_RELEASE(...)                                                                                 \
    do {                                                                                                  \
        onyx_array *held_[] = {__VA_ARGS__};                                                              \
        for (size_t i_ = 0; i_ < sizeof held_ / sizeof held_[0]; i_++) onyx_release(held_[i_]);           \
    } while (0)

/* free() of every pointer named (NULL ones too). */
#define ONYX_FREE_ALL(...)                                                                                \
    do {                                                                                                  \
        void *owned_[] = {__VA_ARGS__};                                                                   \
        for (size_t i_ = 0; i_ < sizeof owned_ / sizeof owned_[0]; i_++) free(owned_[i_]);                \
    } while (0)

/* Fails (ValueError naming `what`) unless the first `n` dimensions of `a` are `dims` (-1: any size); an
 * optional argument left empty (None) passes. */
static inline int onyx_expect_dims(const onyx_array *a, const Py_ssize_t *dims, int n, const char *what) {
    if (!a->held) return 0;
    for (int i = 0; i < n; i++)
        if (dims[i] >= 0 && onyx_expect_dim(a, i, dims[i], what) < 0) return -1;
    return 0;
}
#define ONYX_EXPECT_SHAPE(a, what, ...)                                                                   \
    onyx_expect_dims((a), (const Py_ssize_t[]){__VA_ARGS__},                                              \
                     (int)(sizeof((const Py_ssize_t[]){__VA_ARGS__}) / sizeof(Py_ssize_t)), (what))

/* name_f32(...) or name_f64(...) by the element type `real` ('f' or 'd') of a kernel compiled for both:
 * pass arrays as (void *) data, which C converts to either type, and scalars as double. */
#define ONYX_BY_REAL(real, name, ...) ((real) == 'f' ? name##_f32(__VA_ARGS__) : name##_f64(__VA_ARGS__))

/* Sets a ValueError and gives -1: `if (bad) return onyx_fail("...")`. */
static inline int onyx_fail(const char *message) {
    PyErr_SetString(PyExc_ValueError, message);
    return -1;
}

/* ---- the module ---- */

/* The method `name` of a module, implemented by py_<name>(self, args). */
#define ONYX_METHOD(name, doc) {#name, py_##name, METH_VARARGS, doc}

/* Defines the module NAME (its init function) with its methods; every module says which ISA level its
 * ONYX_VECTOR workers run with (isa_level: 2 AVX-512, 1 AVX2+FMA, 0 baseline; for onyx info). */
#define ONYX_MODULE(NAME, DOC, METHODS)                                                                   \
    static struct PyModuleDef onyx_module_def_ = {PyModuleDef_HEAD_INIT, #NAME, DOC, -1, METHODS,       \
                                                  NULL, NULL, NULL, NULL};                                \
    PyMODINIT_FUNC PyInit_##NAME(void) {                                                                  \
        PyObject *m = PyModule_Create(&onyx_module_def_);                                                 \
        if (m != NULL && PyModule_AddIntConstant(m, "isa_level", onyx_isa_level()) < 0) Py_CLEAR(m);      \
        return m;                                                                                         \
    }

#endif
