/* Tree ensembles: every (row, tree) pair walked to its leaf and the leaf's weights added, trees in
 * order (the sums in the order onnxruntime and the numpy path use).
 *
 * A forest is built once (`forest`), into memory this module owns: every successor, leaf, set and
 * feature index is checked there, so that a walk never reads out of bounds, whatever the model says.
 * A walk that takes more steps than there are nodes (a cycle) stops and is reported after the loop.
 * numpy's twin: onyx.kernels.trees (Forest.leaves and the sums of _forest_sum_numpy). */
#define PY_SSIZE_T_CLEAN
#include "_common.h"

#include <stdlib.h>

enum { LEQ, LT, GTE, GT, EQ, NEQ, MEMBER };

/* 32 bytes: two nodes a cache line (indices fit in int32: forest() refuses 2^31 nodes or more) */
typedef struct {
    double threshold;
    int32_t next[2]; /* [0]: condition false, [1]: true */
    int32_t aux;     /* a leaf: its row of the weights; a BRANCH_MEMBER node: its set */
    int32_t feature; /* -1 for a leaf */
    int8_t mode;
    int8_t missing_true;
} node_t;

typedef struct {
    Py_ssize_t n_nodes, n_trees, n_leaves, n_targets, max_feature;
    node_t *nodes;
    int64_t *roots;
    double *weights;     /* (leaves, targets) */
    uint8_t *has_weight; /* (leaves, targets) */
    int64_t *set_offsets; /* (sets + 1) into set_values, each set sorted */
    double *set_values;
} forest_t;

#define CAPSULE "onyx.kernels._trees.forest"

static void forest_free(forest_t *f) {
    if (f == NULL) return;
    ONYX_FREE_ALL(f->nodes, f->roots, f->weights, f->has_weight, f->set_offsets, f->set_values, f);
}

static void capsule_free(PyObject *capsule) { forest_free((forest_t *)PyCapsule_GetPointer(capsule, CAPSULE)); }

/* Element i of a 1-D int64 / float64 / bool array (any stride). */
#define AT(a, T, i) (((const T *)(a).data)[(i) * (a).strides[0]])

/* Fill and check `f` from the arrays; -1 with a ValueError on anything out of bounds. */
static int forest_fill(forest_t *f, onyx_array *feature, onyx_array *threshold, onyx_array *mode,
                       onyx_array *true_next, onyx_array *false_next, onyx_array *missing, onyx_array *leaf_id,
                       onyx_array *member_set, onyx_array *roots, onyx_array *weights, onyx_array *has,
                       onyx_array *offsets, onyx_array *values) {
    Py_ssize_t n = feature->shape[0];
    onyx_array *per_node[] = {threshold, mode, true_next, false_next, missing, leaf_id, member_set};
    for (size_t i = 0; i < sizeof(per_node) / sizeof(per_node[0]); i++)
        if (per_node[i]->shape[0] != n) return onyx_fail("forest: the node arrays differ in length");
    if (has->shape[0] != weights->shape[0] || has->shape[1] != weights->shape[1])
        return onyx_fail("forest: weights and has_weight differ in shape");
    Py_ssize_t n_sets = offsets->shape[0] - 1;
    if (n_sets < 0) return onyx_fail("forest: set_offsets must hold at least one entry");
    if (n >= INT32_MAX || weights->shape[0] >= INT32_MAX || n_sets >= INT32_MAX)
        return onyx_fail("forest: more than 2^31 nodes, leaves or sets");
    f->n_nodes = n;
    f->n_trees = roots->shape[0];
    f->n_leaves = weights->shape[0];
    f->n_targets = weights->shape[1];
    f->max_feature = -1;
    f->nodes = (node_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(node_t));
    f->roots = (int64_t *)calloc((size_t)(f->n_trees > 0 ? f->n_trees : 1), sizeof(int64_t));
    size_t lk = (size_t)(f->n_leaves * f->n_targets);
    f->weights = (double *)calloc(lk ? lk : 1, sizeof(double));
    f->has_weight = (uint8_t *)calloc(lk ? lk : 1, 1);
    f->set_offsets = (int64_t *)calloc((size_t)(n_sets + 1), sizeof(int64_t));
    f->set_values = (double *)calloc((size_t)(values->shape[0] > 0 ? values->shape[0] : 1), sizeof(double));
    if (!f->nodes || !f->roots || !f->weights || !f->has_weight || !f->set_offsets || !f->set_values) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s <= n_sets; s++) {
        int64_t o = AT(*offsets, int64_t, s);
        if (o < 0 || o > values->shape[0] || (s > 0 && o < f->set_offsets[s - 1]))
            return onyx_fail("forest: set_offsets are not increasing within the set values");
        f->set_offsets[s] = o;
    }
    for (Py_ssize_t i = 0; i < values->shape[0]; i++) f->set_values[i] = AT(*values, double, i);
    for (Py_ssize_t i = 0; i < n; i++) {
        node_t *nd = &f->nodes[i];
        int64_t leaf = AT(*leaf_id, int64_t, i);
        if (leaf >= 0) {
            if (leaf >= f->n_leaves) return onyx_fail("forest: a leaf's weight row is out of range");
            nd->feature = -1;
            nd->aux = (int32_t)leaf;
            continue;
        }
        int64_t feat = AT(*feature, int64_t, i), yes = AT(*true_next, int64_t, i), no = AT(*false_next, int64_t, i);
        int8_t m = AT(*mode, int8_t, i);
        if (feat < 0) return onyx_fail("forest: a node has a negative feature id");
        if (yes < 0 || yes >= n || no < 0 || no >= n) return onyx_fail("forest: a branch points outside the nodes");
        if (m < LEQ || m > MEMBER) return onyx_fail("forest: a node mode is out of range");
        int64_t set = AT(*member_set, int64_t, i);
        if (m == MEMBER && (set < 0 || set >= n_sets)) return onyx_fail("forest: a member node's set is out of range");
        nd->threshold = AT(*threshold, double, i);
        if (feat >= INT32_MAX) return onyx_fail("forest: a feature id is out of range");
        nd->next[1] = (int32_t)yes;
        nd->next[0] = (int32_t)no;
        nd->feature = (int32_t)feat;
        nd->mode = m;
        nd->missing_true = AT(*missing, uint8_t, i) != 0;
        nd->aux = m == MEMBER ? (int32_t)set : 0;
        if (feat > f->max_feature) f->max_feature = (Py_ssize_t)feat;
    }
    for (Py_ssize_t t = 0; t < f->n_trees; t++) {
        int64_t r = AT(*roots, int64_t, t);
        if (r < 0 || r >= n) return onyx_fail("forest: a tree root is outside the nodes");
        f->roots[t] = r;
    }
    for (Py_ssize_t l = 0; l < f->n_leaves; l++)
        for (Py_ssize_t k = 0; k < f->n_targets; k++) {
            const char *w = weights->data + (l * weights->strides[0] + k * weights->strides[1]) * sizeof(double);
            const char *h = has->data + (l * has->strides[0] + k * has->strides[1]);
            f->weights[l * f->n_targets + k] = *(const double *)w;
            f->has_weight[l * f->n_targets + k] = *(const uint8_t *)h != 0;
        }
    return 0;
}

static PyObject *py_forest(PyObject *self, PyObject *args) {
    PyObject *o[13];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9],
                          &o[10], &o[11], &o[12]))
        return NULL;
    static const char fmt[13] = {'q', 'd', 'b', 'q', 'q', '?', 'q', 'q', 'q', 'd', '?', 'q', 'd'};
    static const int rank[13] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1};
    static const char *names[13] = {"forest feature",    "forest threshold",  "forest mode",  "forest true_next",
                                    "forest false_next", "forest missing",    "forest leaf_id", "forest member_set",
                                    "forest roots",      "forest weights",    "forest has_weight",
                                    "forest set_offsets", "forest set_values"};
    onyx_array a[13];
    memset(a, 0, sizeof(a));
    PyObject *result = NULL;
    forest_t *f = NULL;
    for (int i = 0; i < 13; i++)
        if (onyx_get(o[i], &a[i], fmt[i], rank[i], 0, names[i]) < 0) goto done;
    f = (forest_t *)calloc(1, sizeof(forest_t));
    if (f == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (forest_fill(f, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8], &a[9], &a[10], &a[11], &a[12]) < 0)
        goto done;
    result = PyCapsule_New(f, CAPSULE, capsule_free);
    if (result != NULL) f = NULL;
done:
    forest_free(f);
    for (int i = 0; i < 13; i++) onyx_release(&a[i]);
    return result;
}

/* Whether `v` is in set `s` (sorted values; NaN is in none). */
static inline int member_of(const forest_t *f, int32_t s, double v) {
    int64_t lo = f->set_offsets[s], hi = f->set_offsets[s + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        double m = f->set_values[mid];
        if (m < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->set_offsets[s + 1] && f->set_values[lo] == v;
}

/* The leaf row reached from `root` by the row `x`, or -1 after more steps than nodes (a cycle). */
static inline int32_t walk(const forest_t *f, int64_t root, const double *x) {
    const node_t *nodes = f->nodes;
    const node_t *nd = &nodes[root];
    Py_ssize_t steps = 0;
    while (nd->feature >= 0) {
        if (++steps > f->n_nodes) return -1;
        double v = x[nd->feature], thr = nd->threshold;
        int c;
        switch (nd->mode) {
        case LEQ: c = v <= thr; break;
        case LT: c = v < thr; break;
        case GTE: c = v >= thr; break;
        case GT: c = v > thr; break;
        case EQ: c = v == thr; break;
        case NEQ: c = v != thr; break;
        default: c = member_of(f, nd->aux, v); break;
        }
        if (nd->missing_true && v != v) c = 1;
        nd = &nodes[nd->next[c]];
    }
    return nd->aux;
}

/* Rows [r0, r1): trees outer (a tree's nodes stay in cache for the rows), sums in tree order.
 * Returns 0, or -1 when a walk found a cycle. */
static int sum_rows(const forest_t *f, const double *x, Py_ssize_t nfeat, char *scores, int single, uint8_t *has,
                    Py_ssize_t r0, Py_ssize_t r1) {
    Py_ssize_t K = f->n_targets;
    for (Py_ssize_t t = 0; t < f->n_trees; t++) {
        int64_t root = f->roots[t];
        for (Py_ssize_t n = r0; n < r1; n++) {
            int32_t leaf = walk(f, root, x + n * nfeat);
            if (leaf < 0) return -1;
            const double *w = f->weights + leaf * K;
            const uint8_t *hw = f->has_weight + leaf * K;
            for (Py_ssize_t k = 0; k < K; k++) {
                if (!hw[k]) continue;
                if (single)
                    ((float *)scores)[n * K + k] += (float)w[k];
                else
                    ((double *)scores)[n * K + k] += w[k];
                has[n * K + k] = 1;
            }
        }
    }
    return 0;
}

/* Rows a thread block walks together. */
#define BLOCK_ROWS 64

static PyObject *py_forest_sum(PyObject *self, PyObject *args) {
    PyObject *capsule, *ox, *oscores, *ohas;
    int threads;
    if (!PyArg_ParseTuple(args, "OOOOi", &capsule, &ox, &oscores, &ohas, &threads)) return NULL;
    const forest_t *f = (const forest_t *)PyCapsule_GetPointer(capsule, CAPSULE);
    if (f == NULL) return NULL;
    onyx_array x, scores, has;
    PyObject *result = NULL;
    char real = 0;
    const int out = ONYX_OUT | ONYX_DENSE;
    if (ONYX_GET_ARGS(&real, {ox, &x, 'd', 2, ONYX_DENSE, "forest_sum X"}, {oscores, &scores, 'r', 2, out, "forest_sum scores"},
                      {ohas, &has, '?', 2, out, "forest_sum has"}) < 0)
        goto done;
    const int single = real == 'f';
    Py_ssize_t N = x.shape[0], F = x.shape[1];
    if (ONYX_EXPECT_SHAPE(&scores, "forest_sum scores", N, f->n_targets) < 0 ||
        ONYX_EXPECT_SHAPE(&has, "forest_sum has", N, f->n_targets) < 0)
        goto done;
    if (N > 0 && f->max_feature >= F) {
        PyErr_Format(PyExc_ValueError, "forest_sum: a node reads feature %zd but X has %zd features", f->max_feature, F);
        goto done;
    }
    {
        const double *px = (const double *)x.data;
        char *ps = scores.data;
        uint8_t *ph = (uint8_t *)has.data;
        Py_ssize_t blocks = (N + BLOCK_ROWS - 1) / BLOCK_ROWS;
        int nthreads = onyx_threads(threads);
        if (nthreads > blocks) nthreads = (int)(blocks > 0 ? blocks : 1);
        int cycle = 0;
        Py_BEGIN_ALLOW_THREADS
        if (nthreads <= 1) {
            cycle = sum_rows(f, px, F, ps, single, ph, 0, N) < 0;
        } else {
            ONYX_PARALLEL_FOR(nthreads)
            for (Py_ssize_t b = 0; b < blocks; b++) {
                Py_ssize_t r1 = (b + 1) * BLOCK_ROWS < N ? (b + 1) * BLOCK_ROWS : N;
                if (sum_rows(f, px, F, ps, single, ph, b * BLOCK_ROWS, r1) < 0) {
#pragma omp atomic write
                    cycle = 1;
                }
            }
        }
        Py_END_ALLOW_THREADS
        if (cycle) {
            PyErr_SetString(PyExc_ValueError, "forest_sum: the trees contain a cycle");
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    ONYX_RELEASE(&x, &scores, &has);
    return result;
}

static PyMethodDef methods[] = {
    ONYX_METHOD(forest, "forest(feature, threshold, mode, true_next, false_next, missing_true, leaf_id, member_set, "
                        "roots, weights, has_weight, set_offsets, set_values): a checked forest."),
    ONYX_METHOD(forest_sum, "forest_sum(forest, X, scores, has, threads): add every tree's leaf weights into scores "
                            "(float32 or float64)."),
    {NULL, NULL, 0, NULL},
};

ONYX_MODULE(_trees, "Tree ensembles: leaf sums.", methods)
