"""TreeEnsembleRegressor (v1, v3 with *_as_tensor attributes): float32 regression scores."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, rows_of
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._tree import cached, compile_legacy, prepare_x
from onyx.ops.registry import op, shape_rule


def _pick(a, a_tensor):
    return np.asarray(a_tensor).reshape(-1) if a_tensor is not None else a


def _acc_dtype(X, attrs: dict):
    """float32 accumulation like onnxruntime, float64 for double inputs or double (*_as_tensor) weights."""
    if np.asarray(X).dtype == np.float64:
        return np.float64
    for k, v in attrs.items():
        if k.endswith("_as_tensor") and v is not None and np.asarray(v).dtype == np.float64:
            return np.float64
    return np.float32


def _make(attrs: dict):
    """The forest compiled once and the rest of the attributes resolved: ``X -> scores``."""
    values = _pick(attrs["nodes_values"], attrs.get("nodes_values_as_tensor"))
    weights = _pick(attrs["target_weights"], attrs.get("target_weights_as_tensor"))
    base = _pick(attrs["base_values"], attrs.get("base_values_as_tensor"))
    n_targets = attrs["n_targets"]
    if n_targets is None:
        n_targets = int(max(attrs["target_ids"] or [0])) + 1
    forest = compile_legacy(
        attrs["nodes_treeids"],
        attrs["nodes_nodeids"],
        attrs["nodes_featureids"],
        attrs["nodes_modes"],
        values,
        attrs["nodes_truenodeids"],
        attrs["nodes_falsenodeids"],
        attrs["nodes_missing_value_tracks_true"],
        attrs["target_treeids"],
        attrs["target_nodeids"],
        attrs["target_ids"],
        weights,
        int(n_targets),
        "TreeEnsembleRegressor",
    )
    how = attrs["aggregate_function"]
    post = attrs["post_transform"]
    # accumulation in float64 when a weight tensor is double, whatever X is
    wide = _acc_dtype(np.zeros(0, np.float32), attrs) == np.float64
    bases = {}
    if base is not None and len(base):
        for acc in (np.float32, np.float64):
            bases[acc] = np.asarray(base, dtype=acc)

    def run(X):
        acc = np.float64 if wide or np.asarray(X).dtype == np.float64 else np.float32
        scores, _ = forest.aggregate(prepare_x(X), how, acc)
        b = bases.get(acc)
        if b is not None:
            if b.size != scores.shape[1]:
                raise InvalidArgument(
                    f"TreeEnsembleRegressor: {b.size} base_values for {scores.shape[1]} targets"
                )
            scores += b
        return apply_post(scores, post).astype(np.float32)

    return run


_IGNORED = ("nodes_hitrates", "nodes_hitrates_as_tensor")


def _prepare(**attrs):
    for k in _IGNORED:
        attrs.pop(k, None)
    return _make(attrs)


def _regress(X, attrs: dict):
    return cached("TreeEnsembleRegressor", attrs, lambda: _make(attrs))(X)


@op("TreeEnsembleRegressor", domain="ai.onnx.ml", since=1, until=3)
def tree_ensemble_regressor_1(
    X,
    *,
    aggregate_function="SUM",
    base_values=None,
    n_targets=None,
    nodes_falsenodeids=None,
    nodes_featureids=None,
    nodes_hitrates=None,
    nodes_missing_value_tracks_true=None,
    nodes_modes=None,
    nodes_nodeids=None,
    nodes_treeids=None,
    nodes_truenodeids=None,
    nodes_values=None,
    post_transform="NONE",
    target_ids=None,
    target_nodeids=None,
    target_treeids=None,
    target_weights=None,
):
    attrs = dict(locals())
    attrs.pop("X")
    attrs.pop("nodes_hitrates")
    return _regress(X, attrs)


@op("TreeEnsembleRegressor", domain="ai.onnx.ml", since=3)
def tree_ensemble_regressor_3(
    X,
    *,
    aggregate_function="SUM",
    base_values=None,
    base_values_as_tensor=None,
    n_targets=None,
    nodes_falsenodeids=None,
    nodes_featureids=None,
    nodes_hitrates=None,
    nodes_hitrates_as_tensor=None,
    nodes_missing_value_tracks_true=None,
    nodes_modes=None,
    nodes_nodeids=None,
    nodes_treeids=None,
    nodes_truenodeids=None,
    nodes_values=None,
    nodes_values_as_tensor=None,
    post_transform="NONE",
    target_ids=None,
    target_nodeids=None,
    target_treeids=None,
    target_weights=None,
    target_weights_as_tensor=None,
):
    attrs = dict(locals())
    for k in ("X", "nodes_hitrates", "nodes_hitrates_as_tensor"):
        attrs.pop(k)
    return _regress(X, attrs)


tree_ensemble_regressor_1.prepare = _prepare
tree_ensemble_regressor_3.prepare = _prepare


@shape_rule("TreeEnsembleRegressor", domain="ai.onnx.ml")
def _tree_ensemble_regressor_shape(ctx) -> None:
    """float [N, n_targets] (n_targets, else the largest target id + 1)."""
    t = ctx.attr("n_targets")
    if t is None:
        ids = ctx.attr("target_ids")
        t = max(ids) + 1 if ids else None
    ctx.set_output(0, FLOAT, [rows_of(ctx.input_shape(0)), None if t is None else int(t)])
