"""TreeEnsembleRegressor (v1, v3 with *_as_tensor attributes): float32 regression scores."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, rows_of
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._tree import accumulation_dtype, aggregate, compile_legacy, pick, prepare_x, register_legacy
from onyx.ops.registry import shape_rule


def _make(attrs: dict):
    """The forest compiled once and the rest of the attributes resolved: ``X -> scores``."""
    values = pick(attrs, "nodes_values")
    weights = pick(attrs, "target_weights")
    base = pick(attrs, "base_values")
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
    wide = accumulation_dtype(np.zeros(0, np.float32), attrs) == np.float64
    bases = {}
    if base is not None and len(base):
        for acc in (np.float32, np.float64):
            bases[acc] = np.asarray(base, dtype=acc)

    def run(X):
        acc = np.float64 if wide or np.asarray(X).dtype == np.float64 else np.float32
        scores, _ = aggregate(forest, prepare_x(X), how, acc)
        b = bases.get(acc)
        if b is not None:
            if b.size != scores.shape[1]:
                raise InvalidArgument(
                    f"TreeEnsembleRegressor: {b.size} base_values for {scores.shape[1]} targets"
                )
            scores += b
        return apply_post(scores, post).astype(np.float32)

    return run


register_legacy("TreeEnsembleRegressor", _make, "target", {"aggregate_function": "SUM", "n_targets": None})


@shape_rule("TreeEnsembleRegressor", domain="ai.onnx.ml")
def _tree_ensemble_regressor_shape(ctx) -> None:
    """float [N, n_targets] (n_targets, else the largest target id + 1)."""
    t = ctx.attr("n_targets")
    if t is None:
        ids = ctx.attr("target_ids")
        t = max(ids) + 1 if ids else None
    ctx.set_output(0, FLOAT, [rows_of(ctx.input_shape(0)), None if t is None else int(t)])
