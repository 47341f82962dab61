"""SVMClassifier: linear one-vs-rest or kernel one-vs-one SVM, with optional Platt probabilities."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import (
    FLOAT,
    as_2d,
    as_float,
    features_of,
    label_elem,
    labels_of,
    num_labels,
    rows_of,
)
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._svm import couple_probabilities, kernel_matrix, sigmoid_predict
from onyx.ops.registry import op, shape_rule


@op("SVMClassifier", domain="ai.onnx.ml", since=1)
def svm_classifier_1(
    X,
    *,
    classlabels_ints=None,
    classlabels_strings=None,
    coefficients=None,
    kernel_params=None,
    kernel_type="LINEAR",
    post_transform="NONE",
    prob_a=None,
    prob_b=None,
    rho=None,
    support_vectors=None,
    vectors_per_class=None,
):
    x = as_2d(as_float(X)).astype(np.float64)
    N, F = x.shape
    labels, is_str = labels_of(classlabels_ints, classlabels_strings, "SVMClassifier")
    K = len(labels)
    coef = np.asarray(coefficients or [], dtype=np.float64)
    rho_ = np.asarray(rho or [], dtype=np.float64)
    if not vectors_per_class:
        # linear: one weight row per class (or one row for two classes)
        if F == 0 or coef.size % F:
            raise InvalidArgument(f"SVMClassifier: {coef.size} coefficients do not split into rows of {F}")
        C = coef.size // F
        scores = kernel_matrix(x, coef.reshape(C, F), kernel_type, kernel_params)
        if rho_.size:
            scores = scores + rho_[:C]
        if C == 1 and K == 2:
            s = scores[:, 0]
            y = labels[np.where(s > 0, 1, 0)]
            z = np.stack([-s, s], axis=1)
            return y, apply_post(z, post_transform).astype(np.float32)
        y = labels[np.argmax(scores, axis=1)] if N else labels[:0]
        return y, apply_post(scores, post_transform).astype(np.float32)
    vpc = np.asarray(vectors_per_class, dtype=np.int64)
    if len(vpc) != K:
        raise InvalidArgument(f"SVMClassifier: vectors_per_class has {len(vpc)} entries for {K} classes")
    S = int(vpc.sum())
    sv = np.asarray(support_vectors or [], dtype=np.float64)
    if sv.size != S * F:
        raise InvalidArgument(
            f"SVMClassifier: {sv.size} support vector values for {S} vectors x {F} features"
        )
    if coef.size != (K - 1) * S:
        raise InvalidArgument(f"SVMClassifier: {coef.size} coefficients, expected {(K - 1) * S}")
    coef = coef.reshape(K - 1, S)
    kern = kernel_matrix(x, sv.reshape(S, F), kernel_type, kernel_params)  # (N, S)
    starts = np.concatenate([[0], np.cumsum(vpc)[:-1]])
    pairs = [(i, j) for i in range(K) for j in range(i + 1, K)]
    if rho_.size != len(pairs):
        raise InvalidArgument(f"SVMClassifier: {rho_.size} rho values for {len(pairs)} class pairs")
    dec = np.empty((N, len(pairs)))
    for p, (i, j) in enumerate(pairs):
        si = slice(starts[i], starts[i] + vpc[i])
        sj = slice(starts[j], starts[j] + vpc[j])
        dec[:, p] = kern[:, si] @ coef[j - 1, si] + kern[:, sj] @ coef[i, sj] + rho_[p]
    votes = np.zeros((N, K), dtype=np.int64)
    for p, (i, j) in enumerate(pairs):
        win_i = dec[:, p] > 0
        votes[:, i] += win_i
        votes[:, j] += ~win_i
    pa = np.asarray(prob_a or [], dtype=np.float64)
    pb = np.asarray(prob_b or [], dtype=np.float64)
    if pa.size:
        if pa.size != len(pairs) or pb.size != len(pairs):
            raise InvalidArgument(f"SVMClassifier: prob_a/prob_b need {len(pairs)} values")
        r = np.zeros((N, K, K))
        for p, (i, j) in enumerate(pairs):
            q = np.clip(sigmoid_predict(dec[:, p], pa[p], pb[p]), 1e-7, 1 - 1e-7)
            r[:, i, j] = q
            r[:, j, i] = 1 - q
        probs = couple_probabilities(r, K)
    # the label comes from the one-vs-one votes (as libsvm's predict), also with probabilities
    y = labels[np.argmax(votes, axis=1)] if N else labels[:0]
    if pa.size:
        return y, apply_post(probs, post_transform).astype(np.float32)
    if K == 2:
        s = dec[:, 0]
        return y, apply_post(np.stack([-s, s], axis=1), post_transform).astype(np.float32)
    return y, apply_post(dec, post_transform).astype(np.float32)


@shape_rule("SVMClassifier", domain="ai.onnx.ml")
def _svm_classifier_shape(ctx) -> None:
    """Y: [N] labels; Z: float [N, columns], columns as the kernel gives them: linear: one per
    coefficient row (two for one row and two labels); with support vectors: one per class with
    probabilities or two classes, else one per class pair."""
    x = ctx.input_shape(0)
    n = rows_of(x)
    k = num_labels(ctx)
    ctx.set_output(0, label_elem(ctx), [n])
    cols = None
    if not ctx.attr("vectors_per_class"):
        f = features_of(x)
        coef = ctx.attr("coefficients") or []
        if isinstance(f, int) and f > 0 and len(coef) % f == 0:
            c = len(coef) // f
            cols = 2 if c == 1 and k == 2 else c
    elif k is not None:
        cols = k if ctx.attr("prob_a") or k == 2 else k * (k - 1) // 2
    ctx.set_output(1, FLOAT, [n, cols])
