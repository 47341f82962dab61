"""LinearClassifier: scores = X @ coefficients^T + intercepts; label and scores as onnxruntime gives them.

With one coefficient row (binary), the score s gives the label ``labels[1] if s > 0 else labels[0]`` and
the scores ``[1 - f(s), f(s)]`` where f is the logistic function for LOGISTIC and the identity otherwise.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import (
    FLOAT,
    as_2d,
    as_float,
    label_elem,
    labels_of,
    logistic,
    mm,
    num_labels,
    probit,
    rows_of,
)
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.registry import op, shape_rule


def _prepare(
    *,
    classlabels_ints=None,
    classlabels_strings=None,
    coefficients,
    intercepts=None,
    multi_class=0,
    post_transform="NONE",
):
    """Labels and weights built once: ``X -> (labels, scores)``."""
    labels, _ = labels_of(classlabels_ints, classlabels_strings, "LinearClassifier")
    coef = np.asarray(coefficients, dtype=np.float32)
    bias = np.asarray(intercepts, dtype=np.float32) if intercepts else None
    by_features: dict[int, tuple] = {}  # F -> (rows C, transposed weights (F, C))
    # labels 0..C-1 (scikit-learn's usual classes): the best column is the label, no lookup needed
    identity_labels = labels.dtype == np.int64 and np.array_equal(labels, np.arange(len(labels)))

    def weights(F: int) -> tuple:
        if F == 0 or coef.size % F:
            raise InvalidArgument(
                f"LinearClassifier: {coef.size} coefficients do not split into rows of {F} features"
            )
        C = coef.size // F
        if bias is not None and bias.size != C:
            raise InvalidArgument(f"LinearClassifier: {bias.size} intercepts for {C} coefficient rows")
        if C == 1 and len(labels) != 2:
            raise InvalidArgument(
                f"LinearClassifier: one coefficient row (binary) needs 2 class labels, got {len(labels)}"
            )
        if C != 1 and len(labels) != C:
            raise InvalidArgument(f"LinearClassifier: {len(labels)} class labels for {C} coefficient rows")
        w = by_features[F] = (C, np.ascontiguousarray(coef.reshape(C, F).T))
        return w

    def run(X):
        x = as_2d(as_float(X))
        C, wt = by_features.get(x.shape[1]) or weights(x.shape[1])
        scores = mm(x.astype(np.float32, copy=False), wt)
        if bias is not None:
            scores += bias
        if post_transform != "NONE":
            # NONE: float32 throughout (1 - s rounds the same either way); else in float64
            scores = scores.astype(np.float64)
        if C == 1:
            s = scores[:, 0]
            y = labels[(s > 0).view(np.int8)]
            z = np.empty((len(s), 2), dtype=np.float32)
            if post_transform == "LOGISTIC":
                p = logistic(s)
                z[:, 0] = 1.0 - p
                z[:, 1] = p
            elif post_transform == "PROBIT":
                z[:, 0] = probit(s)
                z[:, 1] = probit(1.0 - s)
            else:
                np.subtract(1.0, s, out=z[:, 0], casting="same_kind")
                z[:, 1] = s
            return y, z
        best = scores.argmax(axis=1)
        y = best if identity_labels else labels[best]
        return y, apply_post(scores, post_transform).astype(np.float32, copy=False)

    return run


@op("LinearClassifier", domain="ai.onnx.ml", since=1, prepare=_prepare)
def linear_classifier_1(
    X,
    *,
    classlabels_ints=None,
    classlabels_strings=None,
    coefficients,
    intercepts=None,
    multi_class=0,
    post_transform="NONE",
):
    loc = locals()
    del loc["X"]
    return _prepare(**loc)(X)


@shape_rule("LinearClassifier", domain="ai.onnx.ml")
def _linear_classifier_shape(ctx) -> None:
    """Y: [N] labels (int64 or string by the labels attribute); Z: float [N, number of labels]
    (one coefficient row for two labels also gives two score columns)."""
    n = rows_of(ctx.input_shape(0))
    ctx.set_output(0, label_elem(ctx), [n])
    ctx.set_output(1, FLOAT, [n, num_labels(ctx)])
