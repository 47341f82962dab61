/* exp of a float32 without a libm call, so that loops calling it vectorise (gcc has no vector expf
 * without -ffast-math): shared by the GELU and softmax kernels.
 *
 * exp(u) = 2^k exp(r), u = k ln 2 + r, |r| <= ln(2)/2, exp(r) by its Taylor polynomial of degree 7
 * (truncation error below 6e-9), 2^k built from the exponent bits. Within 1.2 ulps of the exact value
 * on [ONYX_EXP_LO, ONYX_EXP_HI] (numpy's own float32 exp: within 2), 0 below, inf above, NaN for NaN.
 * Constants are written as doubles and rounded to float32 as numpy's float32(...) rounds them. */
#ifndef ONYX_KERNELS_EXP32_H
#define ONYX_KERNELS_EXP32_H

#include "_common.h"

#include <math.h>

#define ONYX_EXP_LO ((float)-86.5)
#define ONYX_EXP_HI ((float)88.5)

/* The float32 whose bit pattern is `i`, and back. memcpy compiles to a register move. */
ONYX_INLINE float onyx_f32_from_bits(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

ONYX_INLINE int32_t onyx_f32_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

ONYX_INLINE float onyx_exp32(float u) {
    const float log2e = (float)1.4426950408889634;
    /* ln 2 split in two (Cody-Waite): k * ln2_hi is exact for every |k| <= 2^15 */
    const float ln2_hi = (float)0.693359375;
    const float ln2_lo = (float)-2.1219444005469057e-4;
    float c = u > ONYX_EXP_LO ? u : ONYX_EXP_LO;
    c = c < ONYX_EXP_HI ? c : ONYX_EXP_HI;
    float k = floorf(c * log2e + 0.5f); /* -125 .. 128 */
    float r = c - k * ln2_hi - k * ln2_lo;
    float p = (float)(1.0 / 5040);
    p = p * r + (float)(1.0 / 720);
    p = p * r + (float)(1.0 / 120);
    p = p * r + (float)(1.0 / 24);
    p = p * r + (float)(1.0 / 6);
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    float e = p * onyx_f32_from_bits(((int32_t)k + 126) << 23) * 2.0f;
    e = u < ONYX_EXP_LO ? 0.0f : e;
    e = u > ONYX_EXP_HI ? INFINITY : e;
    return u != u ? u : e;
}

#endif
