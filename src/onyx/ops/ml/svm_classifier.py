"""SVMClassifier: linear one-vs-rest or kernel one-vs-one SVM, with optional Platt probabilities."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.svm import OvoModel, ovo_probabilities, svm_ovo, votes
from onyx.ops.ml._common import (
    FLOAT,
    POST_TRANSFORMS,
    as_2d,
    as_float,
    features_of,
    label_elem,
    labels_of,
    mm,
    num_labels,
    rows_of,
)
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._svm import kernel_function, kernel_params_of
from onyx.ops.registry import op, shape_rule


def _prepare(**a):
    """Everything that depends on the attributes (all of them, defaults included) only, once;
    returns ``X -> (labels, scores)``."""
    kernel_type, kernel_params = a["kernel_type"], a["kernel_params"]
    vectors_per_class = a["vectors_per_class"]
    labels, _ = labels_of(a["classlabels_ints"], a["classlabels_strings"], "SVMClassifier")
    K = len(labels)
    coef = np.asarray(a["coefficients"] or [], dtype=np.float64)
    rho_ = np.asarray(a["rho"] or [], dtype=np.float64)
    post = a["post_transform"]
    if post not in POST_TRANSFORMS:
        apply_post(np.zeros((1, 1)), post)  # raises the unknown-transform error
    if not vectors_per_class:
        # linear: one weight row per class (or one row for two classes)
        kernel_params_of(kernel_type, kernel_params)
        kernels: dict[int, tuple] = {}

        def linear(X):
            x = as_2d(as_float(X)).astype(np.float64)
            N, F = x.shape
            if F == 0 or coef.size % F:
                raise InvalidArgument(
                    f"SVMClassifier: {coef.size} coefficients do not split into rows of {F}"
                )
            C = coef.size // F
            kern = kernels.get(F)
            if kern is None:
                kern = kernels[F] = kernel_function(coef.reshape(C, F), kernel_type, kernel_params)
            scores = kern(x)
            if rho_.size:
                scores = scores + rho_[:C]
            if C == 1 and K == 2:
                s = scores[:, 0]
                y = labels[np.where(s > 0, 1, 0)]
                z = np.stack([-s, s], axis=1)
                return y, apply_post(z, post).astype(np.float32)
            y = labels[np.argmax(scores, axis=1)] if N else labels[:0]
            return y, apply_post(scores, post).astype(np.float32)

        return linear
    vpc = np.asarray(vectors_per_class, dtype=np.int64)
    if len(vpc) != K:
        raise InvalidArgument(f"SVMClassifier: vectors_per_class has {len(vpc)} entries for {K} classes")
    S = int(vpc.sum())
    sv = np.asarray(a["support_vectors"] or [], dtype=np.float64)
    F = sv.size // S if S else None  # no support vectors: any number of features
    if S == 0 and sv.size or S and sv.size != S * F:
        raise InvalidArgument(f"SVMClassifier: {sv.size} support vector values for {S} vectors")
    if coef.size != (K - 1) * S:
        raise InvalidArgument(f"SVMClassifier: {coef.size} coefficients, expected {(K - 1) * S}")
    coef = coef.reshape(K - 1, S)
    if S:
        kern = kernel_function(sv.reshape(S, F), kernel_type, kernel_params)
    else:
        kernel_params_of(kernel_type, kernel_params)

        def kern(x):
            return np.zeros((x.shape[0], 0))

    starts = np.concatenate([[0], np.cumsum(vpc)[:-1]])
    pairs = [(i, j) for i in range(K) for j in range(i + 1, K)]
    P = len(pairs)
    if rho_.size != P:
        raise InvalidArgument(f"SVMClassifier: {rho_.size} rho values for {P} class pairs")
    # the one-vs-one decisions as one product: dec = kern @ pair_coef + rho
    pair_coef = np.zeros((S, P))
    for p, (i, j) in enumerate(pairs):
        si = slice(starts[i], starts[i] + vpc[i])
        sj = slice(starts[j], starts[j] + vpc[j])
        pair_coef[si, p] = coef[j - 1, si]
        pair_coef[sj, p] = coef[i, sj]
    pa = np.asarray(a["prob_a"] or [], dtype=np.float64)
    pb = np.asarray(a["prob_b"] or [], dtype=np.float64)
    if pa.size and (pa.size != P or pb.size != P):
        raise InvalidArgument(f"SVMClassifier: prob_a/prob_b need {P} values")
    model = OvoModel(
        sv.reshape(S, F if F is not None else 0), pair_coef, rho_,
        [i for i, _ in pairs], [j for _, j in pairs], pa, pb, K,
        kernel_type, *kernel_params_of(kernel_type, kernel_params),
    )  # fmt: skip

    def kernel_svm(X):
        x = as_2d(as_float(X)).astype(np.float64)
        N, f = x.shape
        if F is not None and f != F:
            raise InvalidArgument(
                f"SVMClassifier: {sv.size} support vector values for {S} vectors x {f} features"
            )
        if S and N <= _ONE_CALL_ROWS:
            # a few rows: the whole model in one call (the label from the one-vs-one votes, as libsvm)
            idx, z = svm_ovo(model, x)
        else:
            dec = mm(kern(x), pair_coef)
            dec += rho_
            idx, z = ovo_probabilities(model, dec) if pa.size and N else (votes(model, dec), dec)
        if not pa.size and K == 2:
            z = np.stack([-z[:, 0], z[:, 0]], axis=1)
        return labels[idx], apply_post(z, post).astype(np.float32)

    return kernel_svm


#: up to this many rows a kernel SVM runs as one call (more: the kernel matrix on BLAS)
_ONE_CALL_ROWS = 16


@op("SVMClassifier", domain="ai.onnx.ml", since=1, prepare=_prepare)
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
    attributes = dict(locals())
    del attributes["X"]
    return _prepare(**attributes)(X)


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
