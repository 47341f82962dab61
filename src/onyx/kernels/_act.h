/* The activations the convolution kernels apply on the way out (onyx.kernels.conv.Activation), one
 * loop per kind so that each is a single vectorised pass. NaN passes through every kind unchanged
 * (the comparisons below are false for NaN), as numpy's maximum / clip / where do. */
#ifndef ONYX_KERNELS_ACT_H
#define ONYX_KERNELS_ACT_H

enum { ONYX_ACT_NONE = 0, ONYX_ACT_RELU = 1, ONYX_ACT_CLIP = 2, ONYX_ACT_LEAKY_RELU = 3 };

/* for (k = 0; k < N; k++) DST = act(VEXPR), with `kind`, `lo` (Clip's min, LeakyRelu's alpha) and
 * `hi` (Clip's max) in scope; VEXPR and DST may use k. */
#define ONYX_ACT_LOOP(TYPE, N, VEXPR, DST)                                                              \
    do {                                                                                                \
        const Py_ssize_t n_ = (N);                                                                      \
        const TYPE zero_ = 0;                                                                           \
        switch (kind) {                                                                                 \
        case ONYX_ACT_RELU:                                                                             \
            for (Py_ssize_t k = 0; k < n_; k++) {                                                       \
                TYPE v_ = (VEXPR);                                                                      \
                DST = v_ < zero_ ? zero_ : v_;                                                          \
            }                                                                                           \
            break;                                                                                      \
        case ONYX_ACT_CLIP:                                                                             \
            for (Py_ssize_t k = 0; k < n_; k++) {                                                       \
                TYPE v_ = (VEXPR);                                                                      \
                v_ = v_ < lo ? lo : v_;                                                                 \
                DST = v_ > hi ? hi : v_;                                                                \
            }                                                                                           \
            break;                                                                                      \
        case ONYX_ACT_LEAKY_RELU:                                                                       \
            for (Py_ssize_t k = 0; k < n_; k++) {                                                       \
                TYPE v_ = (VEXPR);                                                                      \
                DST = v_ < zero_ ? v_ * lo : v_;                                                        \
            }                                                                                           \
            break;                                                                                      \
        default:                                                                                        \
            for (Py_ssize_t k = 0; k < n_; k++) DST = (VEXPR);                                          \
        }                                                                                               \
    } while (0)

static inline int onyx_act_valid(int kind) { return kind >= ONYX_ACT_NONE && kind <= ONYX_ACT_LEAKY_RELU; }

/* Parallel region with per-thread scratch: the thread's index in it (0 without OpenMP). */
#define ONYX_PARALLEL(threads) _Pragma(ONYX_STR(omp parallel num_threads(threads) if((threads) > 1)))
#define ONYX_FOR_STATIC _Pragma("omp for schedule(static)")

static inline int onyx_thread_index(void) {
#if ONYX_OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Python's floor division (b > 0). */
static inline Py_ssize_t onyx_floordiv(Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

#endif
