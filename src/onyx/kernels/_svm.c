/* One-vs-one kernel SVM classifiers: the kernel row of each input row against the support vectors,
 * the pair decisions, the voted class, and with Platt scaling the pairwise probabilities coupled into
 * class probabilities (Wu, Lin and Weng's second method, as libsvm). A few rows run as one call, where
 * numpy's per-call costs would dominate; the coupling also serves the many-row path.
 *
 * A model is built once (`svm_model`) into memory this module owns, every class index checked there.
 * Rows are independent: they run on `threads` threads, each with its own scratch. numpy's twins:
 * onyx.kernels.svm (_svm_ovo_numpy, _ovo_probabilities_numpy, _couple_numpy). */
#define PY_SSIZE_T_CLEAN
#include "_common.h"

#include <math.h>
#include <stdlib.h>

enum { LINEAR, POLY, SIGMOID, RBF };

typedef struct {
    Py_ssize_t n_sv, n_features, n_pairs, n_classes;
    int kernel, platt;
    double gamma, coef0, degree;
    double *sv, *sv2, *pair_coef, *rho, *pa, *pb; /* sv (S, F), pair_coef (S, P) */
    int64_t *pi, *pj;
} model_t;

#define CAPSULE "onyx.kernels._svm.model"

static void model_free(model_t *m) {
    if (m == NULL) return;
    ONYX_FREE_ALL(m->sv, m->sv2, m->pair_coef, m->rho, m->pa, m->pb, m->pi, m->pj, m);
}

static void capsule_free(PyObject *capsule) { model_free((model_t *)PyCapsule_GetPointer(capsule, CAPSULE)); }

/* A dense copy of a float64 array of any strides (rank 1 or 2), or NULL with MemoryError. */
static double *dense_copy(const onyx_array *a) {
    Py_ssize_t rows = a->ndim == 2 ? a->shape[0] : 1, cols = a->shape[a->ndim - 1];
    Py_ssize_t rs = a->ndim == 2 ? a->strides[0] : 0, cs = a->strides[a->ndim - 1];
    double *out = (double *)malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof(double));
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    const double *src = (const double *)a->data;
    for (Py_ssize_t i = 0; i < rows; i++)
        for (Py_ssize_t j = 0; j < cols; j++) out[i * cols + j] = src[i * rs + j * cs];
    return out;
}

static int64_t *class_copy(const onyx_array *a, Py_ssize_t n_classes) {
    int64_t *out = (int64_t *)malloc((size_t)(a->shape[0] > 0 ? a->shape[0] : 1) * sizeof(int64_t));
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    const int64_t *src = (const int64_t *)a->data;
    for (Py_ssize_t i = 0; i < a->shape[0]; i++) {
        int64_t v = src[i * a->strides[0]];
        if (v < 0 || v >= n_classes) {
            free(out);
            PyErr_SetString(PyExc_ValueError, "svm_model: a pair's class index is out of range");
            return NULL;
        }
        out[i] = v;
    }
    return out;
}

static PyObject *py_svm_model(PyObject *self, PyObject *args) {
    PyObject *osv, *opc, *orho, *opi, *opj, *opa, *opb;
    Py_ssize_t k;
    int kernel;
    double gamma, coef0, degree;
    if (!PyArg_ParseTuple(args, "OOOOOOOniddd", &osv, &opc, &orho, &opi, &opj, &opa, &opb, &k, &kernel, &gamma, &coef0,
                          &degree))
        return NULL;
    onyx_array sv, pc, rho, pi, pj, pa, pb;
    PyObject *result = NULL;
    model_t *m = NULL;
    if (ONYX_GET_ARGS(NULL, {osv, &sv, 'd', 2, 0, "svm_model sv"}, {opc, &pc, 'd', 2, 0, "svm_model pair_coef"},
                      {orho, &rho, 'd', 1, 0, "svm_model rho"}, {opi, &pi, 'q', 1, 0, "svm_model pi"},
                      {opj, &pj, 'q', 1, 0, "svm_model pj"}, {opa, &pa, 'd', 1, 0, "svm_model prob_a"},
                      {opb, &pb, 'd', 1, 0, "svm_model prob_b"}) < 0)
        goto done;
    Py_ssize_t S = sv.shape[0], P = pc.shape[1];
    if (kernel < LINEAR || kernel > RBF) {
        PyErr_SetString(PyExc_ValueError, "svm_model: unknown kernel code");
        goto done;
    }
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "svm_model: at least one class is needed");
        goto done;
    }
    if (ONYX_EXPECT_SHAPE(&pc, "svm_model pair_coef", S) < 0 || ONYX_EXPECT_SHAPE(&rho, "svm_model rho", P) < 0 ||
        ONYX_EXPECT_SHAPE(&pi, "svm_model pi", P) < 0 || ONYX_EXPECT_SHAPE(&pj, "svm_model pj", P) < 0)
        goto done;
    if (pa.shape[0] != pb.shape[0] || (pa.shape[0] != 0 && pa.shape[0] != P)) {
        PyErr_SetString(PyExc_ValueError, "svm_model: prob_a and prob_b need one value per pair, or none");
        goto done;
    }
    m = (model_t *)calloc(1, sizeof(model_t));
    if (m == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    m->n_sv = S;
    m->n_features = sv.shape[1];
    m->n_pairs = P;
    m->n_classes = k;
    m->kernel = kernel;
    m->platt = pa.shape[0] > 0;
    m->gamma = gamma;
    m->coef0 = coef0;
    m->degree = degree;
    if (!(m->sv = dense_copy(&sv)) || !(m->pair_coef = dense_copy(&pc)) || !(m->rho = dense_copy(&rho)) ||
        !(m->pa = dense_copy(&pa)) || !(m->pb = dense_copy(&pb)) || !(m->pi = class_copy(&pi, k)) ||
        !(m->pj = class_copy(&pj, k)))
        goto done;
    m->sv2 = (double *)malloc((size_t)(S > 0 ? S : 1) * sizeof(double));
    if (m->sv2 == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < S; s++) {
        double acc = 0.0;
        for (Py_ssize_t j = 0; j < m->n_features; j++) acc += m->sv[s * m->n_features + j] * m->sv[s * m->n_features + j];
        m->sv2[s] = acc;
    }
    result = PyCapsule_New(m, CAPSULE, capsule_free);
    if (result != NULL) m = NULL;
done:
    model_free(m);
    ONYX_RELEASE(&sv, &pc, &rho, &pi, &pj, &pa, &pb);
    return result;
}

/* Pairwise coupling of one row: r (k, k) with r[i][j] the probability of i against j, into p (k).
 * Q and Qp are (k, k) and (k) scratch. */
static void couple(const double *r, Py_ssize_t k, double *p, double *Q, double *Qp) {
    double eps = 0.005 / (double)k;
    for (Py_ssize_t t = 0; t < k; t++) {
        double s = 0.0;
        for (Py_ssize_t j = 0; j < k; j++) {
            if (j == t) continue;
            s += r[j * k + t] * r[j * k + t];
            Q[t * k + j] = -r[j * k + t] * r[t * k + j];
        }
        Q[t * k + t] = s;
    }
    for (Py_ssize_t t = 0; t < k; t++) p[t] = 1.0 / (double)k;
    Py_ssize_t iters = k > 100 ? k : 100;
    for (Py_ssize_t it = 0; it < iters; it++) {
        double pQp = 0.0;
        for (Py_ssize_t t = 0; t < k; t++) {
            double acc = 0.0;
            for (Py_ssize_t j = 0; j < k; j++) acc += Q[t * k + j] * p[j];
            Qp[t] = acc;
            pQp += p[t] * acc;
        }
        double err = 0.0;
        for (Py_ssize_t t = 0; t < k; t++) {
            double e = fabs(Qp[t] - pQp);
            if (e > err) err = e;
        }
        if (err < eps) break;
        for (Py_ssize_t t = 0; t < k; t++) {
            double qtt = Q[t * k + t];
            double diff = (-Qp[t] + pQp) / qtt;
            p[t] += diff;
            double inv = 1.0 / (1.0 + diff);
            pQp = (pQp + diff * (diff * qtt + 2 * Qp[t])) * inv * inv;
            for (Py_ssize_t j = 0; j < k; j++) {
                Qp[j] = (Qp[j] + diff * Q[t * k + j]) * inv;
                p[j] *= inv;
            }
        }
    }
}

/* Scratch of one thread: dec (P), r and Q (k, k), Qp (k), votes (k). */
static Py_ssize_t scratch_size(const model_t *m) { return m->n_pairs + 2 * m->n_classes * m->n_classes + 2 * m->n_classes; }

/* From one row's pair decisions: the voted class, and with Platt scaling the coupled probabilities. */
static int64_t decide(const model_t *m, const double *dec, double *probs, double *scratch) {
    Py_ssize_t k = m->n_classes, P = m->n_pairs;
    double *r = scratch, *Q = r + k * k, *Qp = Q + k * k, *votes = Qp + k;
    for (Py_ssize_t c = 0; c < k; c++) votes[c] = 0.0;
    if (m->platt) memset(r, 0, (size_t)(k * k) * sizeof(double));
    for (Py_ssize_t p = 0; p < P; p++) {
        double d = dec[p];
        votes[d > 0 ? m->pi[p] : m->pj[p]] += 1.0;
        if (!m->platt) continue;
        double f = d * m->pa[p] + m->pb[p];
        double e = exp(-fabs(f));
        double q = (f >= 0 ? e : 1.0) / (1.0 + e);
        q = q < 1e-7 ? 1e-7 : q > 1 - 1e-7 ? 1 - 1e-7 : q;
        r[m->pi[p] * k + m->pj[p]] = q;
        r[m->pj[p] * k + m->pi[p]] = 1 - q;
    }
    int64_t best = 0;
    for (Py_ssize_t c = 1; c < k; c++)
        if (votes[c] > votes[best]) best = c;
    if (m->platt) couple(r, k, probs, Q, Qp);
    return best;
}

/* The pair decisions of one row: kernel row against the support vectors, times pair_coef, plus rho. */
static void decisions(const model_t *m, const double *x, double *dec) {
    Py_ssize_t S = m->n_sv, F = m->n_features, P = m->n_pairs;
    double x2 = 0.0;
    for (Py_ssize_t j = 0; j < F; j++) x2 += x[j] * x[j];
    for (Py_ssize_t p = 0; p < P; p++) dec[p] = 0.0;
    for (Py_ssize_t s = 0; s < S; s++) {
        const double *v = m->sv + s * F;
        double dot = 0.0;
        for (Py_ssize_t j = 0; j < F; j++) dot += x[j] * v[j];
        double kv;
        switch (m->kernel) {
        case LINEAR: kv = dot; break;
        case POLY: kv = pow(m->gamma * dot + m->coef0, m->degree); break;
        case SIGMOID: kv = tanh(m->gamma * dot + m->coef0); break;
        default: {
            double d = -2.0 * dot + x2 + m->sv2[s];
            kv = exp(-m->gamma * (d > 0.0 ? d : 0.0));
        }
        }
        const double *pc = m->pair_coef + s * P;
        for (Py_ssize_t p = 0; p < P; p++) dec[p] += kv * pc[p];
    }
    for (Py_ssize_t p = 0; p < P; p++) dec[p] += m->rho[p];
}

/* Runs `BODY(row, scratch)` for rows [0, n) split over `nthreads` blocks, each with its own scratch of
 * `each` doubles; sets MemoryError and evaluates to -1 when the scratch cannot be had. */
#define OVER_ROWS(n, nthreads, each, BODY)                                                                     \
    do {                                                                                                       \
        Py_ssize_t blocks_ = (nthreads) < (n) ? (nthreads) : (n);                                              \
        if (blocks_ < 1) blocks_ = 1;                                                                          \
        double *all_ = (double *)malloc((size_t)(blocks_ * (each) > 0 ? blocks_ * (each) : 1) * sizeof(double)); \
        if (all_ == NULL) {                                                                                    \
            PyErr_NoMemory();                                                                                  \
            goto done;                                                                                         \
        }                                                                                                      \
        int threads_ = (int)blocks_;                                                                           \
        Py_BEGIN_ALLOW_THREADS ONYX_PARALLEL_FOR(threads_) for (Py_ssize_t b_ = 0; b_ < blocks_; b_++) {         \
            double *scratch = all_ + b_ * (each);                                                              \
            Py_ssize_t r0_ = (n) * b_ / blocks_, r1_ = (n) * (b_ + 1) / blocks_;                               \
            for (Py_ssize_t row = r0_; row < r1_; row++) BODY;                                                 \
        }                                                                                                      \
        Py_END_ALLOW_THREADS free(all_);                                                                       \
    } while (0)

/* What svm_ovo and ovo_probabilities take: (model, rows, winner, out, threads), rows (n, width) float64,
 * winner (n) int64 and out (n, cols) float64, all C-contiguous; the rows are the inputs (width: the
 * features) or, `from_decisions`, the pair decisions (width: the pairs; the model must have Platt's
 * scaling). Every array is emptied first: release them whatever this returns. */
typedef struct {
    const model_t *m;
    onyx_array in, w, o;
    int threads;
} ovo_call;

static int ovo_args(PyObject *args, ovo_call *c, int from_decisions, const char *what) {
    PyObject *capsule, *oin, *ow, *oo;
    memset(c, 0, sizeof *c);
    if (!PyArg_ParseTuple(args, "OOOOi", &capsule, &oin, &ow, &oo, &c->threads)) return -1;
    const model_t *m = c->m = (const model_t *)PyCapsule_GetPointer(capsule, CAPSULE);
    if (m == NULL) return -1;
    if (from_decisions && !m->platt) {
        PyErr_Format(PyExc_ValueError, "%s: the model has no prob_a / prob_b", what);
        return -1;
    }
    const int out = ONYX_OUT | ONYX_DENSE;
    if (ONYX_GET_ARGS(NULL, {oin, &c->in, 'd', 2, ONYX_DENSE, what}, {ow, &c->w, 'q', 1, out, what},
                      {oo, &c->o, 'd', 2, out, what}) < 0)
        return -1;
    const Py_ssize_t n = c->in.shape[0], cols = m->platt ? m->n_classes : m->n_pairs;
    if (ONYX_EXPECT_SHAPE(&c->in, what, n, from_decisions ? m->n_pairs : m->n_features) < 0 ||
        ONYX_EXPECT_SHAPE(&c->w, what, n) < 0 || ONYX_EXPECT_SHAPE(&c->o, what, n, cols) < 0)
        return -1;
    return 0;
}

/* The voted class of each row, and its probabilities (Platt) or pair decisions: from the inputs or, when
 * `from_decisions`, from their pair decisions. */
static PyObject *ovo_rows(PyObject *args, int from_decisions, const char *what) {
    ovo_call c;
    PyObject *result = NULL;
    if (ovo_args(args, &c, from_decisions, what) < 0) goto done;
    {
        const model_t *mm = c.m;
        const double *pin = (const double *)c.in.data;
        int64_t *pw = (int64_t *)c.w.data;
        double *po = (double *)c.o.data;
        const Py_ssize_t n = c.in.shape[0], width = c.in.shape[1], cols = c.o.shape[1];
        OVER_ROWS(n, onyx_threads(c.threads), scratch_size(mm), {
            const double *dec = pin + row * width;
            double *rest = scratch;
            if (!from_decisions) {
                double *own = mm->platt ? scratch : po + row * cols;
                decisions(mm, dec, own);
                dec = own;
                rest = mm->platt ? scratch + mm->n_pairs : scratch;
            }
            pw[row] = decide(mm, dec, po + row * cols, rest);
        });
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&c.in, &c.w, &c.o);
    return result;
}

static PyObject *py_svm_ovo(PyObject *self, PyObject *args) { return ovo_rows(args, 0, "svm_ovo"); }

static PyObject *py_ovo_probabilities(PyObject *self, PyObject *args) { return ovo_rows(args, 1, "ovo_probabilities"); }

static PyObject *py_couple_probabilities(PyObject *self, PyObject *args) {
    PyObject *or, *oo;
    int threads;
    if (!PyArg_ParseTuple(args, "OOi", &or, &oo, &threads)) return NULL;
    onyx_array r, o;
    PyObject *result = NULL;
    if (ONYX_GET_ARGS(NULL, {or, &r, 'd', 3, ONYX_DENSE, "couple_probabilities r"},
                      {oo, &o, 'd', 2, ONYX_OUT | ONYX_DENSE, "couple_probabilities out"}) < 0)
        goto done;
    Py_ssize_t n = r.shape[0], k = r.shape[1];
    if (ONYX_EXPECT_SHAPE(&r, "couple_probabilities r", n, k, k) < 0 ||
        ONYX_EXPECT_SHAPE(&o, "couple_probabilities out", n, k) < 0)
        goto done;
    if (k > 0) {
        const double *pr = (const double *)r.data;
        double *po = (double *)o.data;
        OVER_ROWS(n, onyx_threads(threads), k * k + k, { couple(pr + row * k * k, k, po + row * k, scratch, scratch + k * k); });
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&r, &o);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(svm_model,
                "svm_model(sv, pair_coef, rho, pi, pj, prob_a, prob_b, k, kernel, gamma, coef0, degree): a checked model."),
    ONYX_METHOD(svm_ovo, "svm_ovo(model, X, winner, out, threads): voted class and probabilities (Platt) or pair "
                         "decisions."),
    ONYX_METHOD(ovo_probabilities, "ovo_probabilities(model, dec, winner, out, threads): voted class and coupled "
                                   "probabilities from decisions."),
    ONYX_METHOD(couple_probabilities,
                "couple_probabilities(r, out, threads): pairwise coupling of (n, k, k) pair probabilities."),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_svm, "One-vs-one kernel SVMs.", methods)
