"""TreeEnsembleClassifier (v1, v3 with *_as_tensor attributes): labels and per-class scores.

The two-class case follows onnxruntime, which users compare against: when only one class carries
weights the missing score is synthesised (``1 - s`` for all-positive weights, ``-s`` otherwise) and the
label threshold is 0.5 or 0; with base_values of length 2 the positive score is ``base[1] + score[0]``;
a class that no visited leaf scores reports 0 before the post transform. A LOGISTIC post transform
applies to the synthesised pair whatever the signs of the weights ([sigmoid(-s), sigmoid(s)]), as the
spec says and onnxruntime does since 1.26 (microsoft/onnxruntime#27533; before, all-positive weights
gave [1 - s, s] untransformed); the label threshold stays 0.5 for all-positive weights.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import (
    FLOAT,
    POST_TRANSFORMS,
    label_elem,
    labels_of,
    logistic,
    logistic_pair,
    num_labels,
    probit,
    rows_of,
)
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._tree import accumulation_dtype, aggregate, compile_legacy, pick, prepare_x, register_legacy
from onyx.ops.registry import shape_rule


def classify(
    scores: np.ndarray,
    has: np.ndarray,
    labels: np.ndarray,
    is_str: bool,
    base,
    post: str,
    binary_case: bool,
    all_positive: bool,
):
    """onnxruntime's decision rule on aggregated (N, K) scores: (labels (N,), Z (N, K) float32)."""
    N, K = scores.shape
    base = np.asarray(base if base is not None else [], dtype=scores.dtype)
    if K != 2:
        if base.size:
            if base.size != K:
                raise InvalidArgument(f"{base.size} base_values for {K} classes")
            scores = scores + base
            has = np.ones_like(has)
        masked = np.where(has, scores, -np.inf)
        idx = np.argmax(masked, axis=1) if K else np.zeros(N, np.int64)
        z = apply_post(scores, post)
        return labels[idx], z.astype(np.float32)
    s0 = scores[:, 0].copy()
    s1 = scores[:, 1].copy()
    h0 = has[:, 0].copy()
    h1 = has[:, 1].copy()
    single = np.zeros(N, dtype=bool)  # rows whose class-1 score is synthesised from one score
    if base.size == 2:
        s1 = np.where(h1, base[1] + s0, s1 + base[1])
        s0 = np.where(h1, -s1, s0 + base[0])
    elif base.size == 1:
        s0 = s0 + base[0]
        single = ~h1
    elif base.size == 0:
        single = ~h1
    else:
        raise InvalidArgument(f"{base.size} base_values for 2 classes")
    pos = np.where(h1, s1, np.where(h0, s0, 0.0))
    if binary_case:
        positive = pos > scores.dtype.type(0.5) if all_positive else pos > 0
        lab = np.where(positive, 1, 0)
        out_labels = labels[lab]
    else:
        positive = pos > 0
        if is_str:
            out_labels = labels[np.where(positive, 1, 0)]
        else:
            out_labels = np.where(positive, 1, 0).astype(np.int64)
    # two-score rows: unscored classes report 0, then the post transform on both columns
    z = np.stack([np.where(h0, s0, 0.0), np.where(h1, s1, 0.0)], axis=1)
    z = apply_post(z, post)
    if np.any(single):
        s = s0[single]
        if post == "PROBIT":
            zs = np.stack([probit(s), np.zeros_like(s)], axis=1)
        elif post == "LOGISTIC":  # before the all-positive rule: see the module's docstring
            zs = np.stack([logistic(-s), logistic(s)], axis=1)
        elif binary_case and all_positive:
            zs = np.stack([1.0 - s, s], axis=1)
        else:
            zs = np.stack([-s, s], axis=1)
        z[single] = zs
    return out_labels, z.astype(np.float32)


def _make(attrs: dict):
    """The forest compiled once and the rest of the attributes resolved: ``X -> (labels, scores)``."""
    values = pick(attrs, "nodes_values")
    weights = pick(attrs, "class_weights")
    base = pick(attrs, "base_values")
    labels, is_str = labels_of(
        attrs["classlabels_int64s"], attrs["classlabels_strings"], "TreeEnsembleClassifier"
    )
    K = len(labels)
    forest = compile_legacy(
        attrs["nodes_treeids"],
        attrs["nodes_nodeids"],
        attrs["nodes_featureids"],
        attrs["nodes_modes"],
        values,
        attrs["nodes_truenodeids"],
        attrs["nodes_falsenodeids"],
        attrs["nodes_missing_value_tracks_true"],
        attrs["class_treeids"],
        attrs["class_nodeids"],
        attrs["class_ids"],
        weights,
        K,
        "TreeEnsembleClassifier",
    )
    ids = np.asarray(attrs["class_ids"] if attrs["class_ids"] is not None else [], dtype=np.int64)
    w = np.asarray(weights if weights is not None else [], dtype=np.float64)
    binary_case = K == 2 and len(np.unique(ids)) == 1
    all_positive = bool(np.all(w >= 0))
    post = attrs["post_transform"]
    wide = accumulation_dtype(np.zeros(0, np.float32), attrs) == np.float64
    nbase = 0 if base is None else len(base)
    # the usual binary model (one score per leaf, all for class 0, at most one base value): every
    # row's class-1 score is synthesised from its class-0 score; see classify
    one_score = K == 2 and binary_case and len(ids) and not np.any(ids) and nbase <= 1
    if one_score and post not in POST_TRANSFORMS:
        one_score = False  # classify reports the unknown transform
    base0 = float(np.asarray(base, dtype=np.float64)[0]) if nbase else None
    # every leaf scores class 0: each row has a score (no 'unscored' rows to report as 0)
    scored = bool(len(forest.roots)) and bool(forest.has_weight[:, 0].all()) if one_score else False

    def run(X):
        acc = np.float64 if wide or np.asarray(X).dtype == np.float64 else np.float32
        scores, has = aggregate(forest, prepare_x(X), "SUM", acc)
        if not one_score:
            return classify(scores, has, labels, is_str, base, post, binary_case, all_positive)
        s = scores[:, 0]
        if base0 is not None:
            s = s + scores.dtype.type(base0)
        pos = s if scored else np.where(has[:, 0], s, 0.0)
        positive = pos > scores.dtype.type(0.5) if all_positive else pos > 0
        out_labels = labels[positive.view(np.int8)]
        z = np.empty((len(s), 2), dtype=s.dtype)
        if post == "PROBIT":
            z[:, 0] = probit(s)
            z[:, 1] = 0
        elif post == "LOGISTIC":
            logistic_pair(s, z)
        elif all_positive:
            np.subtract(1.0, s, out=z[:, 0])
            z[:, 1] = s
        else:
            np.negative(s, out=z[:, 0])
            z[:, 1] = s
        return out_labels, z.astype(np.float32, copy=False)

    return run


register_legacy(
    "TreeEnsembleClassifier", _make, "class", {"classlabels_int64s": None, "classlabels_strings": None}
)


@shape_rule("TreeEnsembleClassifier", domain="ai.onnx.ml")
def _tree_ensemble_classifier_shape(ctx) -> None:
    """Y: [N] labels (int64 or string by the labels attribute); Z: float [N, number of labels]."""
    n = rows_of(ctx.input_shape(0))
    ctx.set_output(0, label_elem(ctx, "classlabels_int64s"), [n])
    ctx.set_output(1, FLOAT, [n, num_labels(ctx, "classlabels_int64s")])
