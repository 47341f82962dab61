"""TreeEnsemble (ai.onnx.ml v5): interior nodes and leaves in separate arrays, set-membership nodes."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import post_transform as apply_post
from onyx.ops.ml._common import rows_of
from onyx.ops.ml._tree import LEAF, MEMBER, Forest, aggregate
from onyx.ops.registry import op, shape_rule

_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")


def _compile(a: dict) -> Forest:
    modes = np.asarray(a["nodes_modes"]).reshape(-1).astype(np.int64)
    n = len(modes)
    names = (
        "nodes_featureids",
        "nodes_splits",
        "nodes_truenodeids",
        "nodes_falsenodeids",
        "nodes_trueleafs",
        "nodes_falseleafs",
    )
    arrs = {}
    for k in names:
        v = np.asarray(a[k]).reshape(-1)
        if len(v) != n:
            raise InvalidArgument(f"TreeEnsemble: {k} has {len(v)} entries, nodes_modes has {n}")
        arrs[k] = v
    if np.any((modes < 0) | (modes > MEMBER)):
        raise InvalidArgument(f"TreeEnsemble: node modes must lie in 0..6, got {np.unique(modes).tolist()}")
    lw = np.asarray(a["leaf_weights"]).reshape(-1).astype(np.float64)
    lt = np.asarray(a["leaf_targetids"], dtype=np.int64).reshape(-1)
    L = len(lw)
    if len(lt) != L:
        raise InvalidArgument(f"TreeEnsemble: {len(lt)} leaf_targetids for {L} leaf_weights")
    K = int(a["n_targets"])
    if L and (lt.min() < 0 or lt.max() >= K):
        raise InvalidArgument(f"TreeEnsemble: a leaf target id is outside [0, {K})")
    tl = arrs["nodes_trueleafs"].astype(bool)
    fl = arrs["nodes_falseleafs"].astype(bool)
    tn = arrs["nodes_truenodeids"].astype(np.int64)
    fn = arrs["nodes_falsenodeids"].astype(np.int64)
    for leafs, ids, which in ((tl, tn, "true"), (fl, fn, "false")):
        lim = np.where(leafs, L, n)
        if np.any((ids < 0) | (ids >= lim)):
            raise InvalidArgument(f"TreeEnsemble: a {which} branch id is out of range")
    # global index: interior nodes 0..n-1, leaves n..n+L-1
    true_next = np.where(tl, n + tn, tn)
    false_next = np.where(fl, n + fn, fn)
    miss = a["nodes_missing_value_tracks_true"]
    missing = np.zeros(n, dtype=bool)
    if miss is not None and len(miss):
        if len(miss) != n:
            raise InvalidArgument("TreeEnsemble: nodes_missing_value_tracks_true has the wrong length")
        missing = np.asarray(miss, dtype=bool)
    member_sets = None
    set_of_node = None
    is_member = modes == MEMBER
    if np.any(is_member):
        mv = a["membership_values"]
        if mv is None:
            raise InvalidArgument("TreeEnsemble: BRANCH_MEMBER nodes need membership_values")
        mv = np.asarray(mv, dtype=np.float64).reshape(-1)
        cuts = np.nonzero(np.isnan(mv))[0]
        parts = np.split(mv, cuts)
        member_sets = [p[~np.isnan(p)] for p in parts]
        if member_sets and len(member_sets) > 1 and member_sets[-1].size == 0:
            member_sets = member_sets[:-1]
        if len(member_sets) < int(is_member.sum()):
            raise InvalidArgument(
                f"TreeEnsemble: {len(member_sets)} membership sets for {int(is_member.sum())} member nodes"
            )
        set_of_node = np.zeros(n + L, dtype=np.int64)
        set_of_node[np.nonzero(is_member)[0]] = np.arange(int(is_member.sum()))
    W = np.zeros((L, K), dtype=np.float64)
    H = np.zeros((L, K), dtype=bool)
    W[np.arange(L), lt] = lw
    H[np.arange(L), lt] = True
    leaf_id = np.concatenate([np.full(n, -1, dtype=np.int64), np.arange(L, dtype=np.int64)])
    z = np.zeros(L)
    return Forest(
        np.concatenate([arrs["nodes_featureids"].astype(np.int64), z.astype(np.int64)]),
        np.concatenate([arrs["nodes_splits"].astype(np.float64), z]),
        np.concatenate([modes, np.full(L, LEAF)]),
        np.concatenate([true_next, np.zeros(L, np.int64)]),
        np.concatenate([false_next, np.zeros(L, np.int64)]),
        np.concatenate([missing, np.zeros(L, dtype=bool)]),
        leaf_id,
        np.asarray(a["tree_roots"], dtype=np.int64),
        W,
        H,
        member_sets,
        set_of_node,
    )


def _prepare(**a):
    """The forest compiled once from every attribute (defaults included): ``X -> scores``."""
    if a["n_targets"] is None:
        raise InvalidArgument("TreeEnsemble: n_targets is required")
    aggregate_function = a["aggregate_function"]
    if not 0 <= aggregate_function < 4:
        raise InvalidArgument(f"TreeEnsemble: aggregate_function must be 0..3, got {aggregate_function}")
    forest = _compile(a)
    how = _AGGREGATES[aggregate_function]
    post = int(a["post_transform"])

    def run(X):
        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64, np.float16):
            raise InvalidArgument(f"TreeEnsemble: X must be float, double or float16, got {X.dtype}")
        x = X.reshape(1, -1) if X.ndim == 1 else X.reshape(X.shape[0], -1)
        # thresholds are compared in X's own precision
        xs = x.astype(np.float64)
        acc = np.float64 if X.dtype == np.float64 else np.float32
        scores, _ = aggregate(forest, xs, how, acc)
        return apply_post(scores, post).astype(X.dtype)

    return run


@op("TreeEnsemble", domain="ai.onnx.ml", since=5, prepare=_prepare)
def tree_ensemble_5(
    X,
    *,
    aggregate_function=1,
    leaf_targetids,
    leaf_weights,
    membership_values=None,
    n_targets=None,
    nodes_falseleafs,
    nodes_falsenodeids,
    nodes_featureids,
    nodes_hitrates=None,
    nodes_missing_value_tracks_true=None,
    nodes_modes,
    nodes_splits,
    nodes_trueleafs,
    nodes_truenodeids,
    post_transform=0,
    tree_roots,
):
    attrs = dict(locals())
    del attrs["X"]
    return _prepare(**attrs)(X)  # a session compiles the forest once, in _prepare


@shape_rule("TreeEnsemble", domain="ai.onnx.ml")
def _tree_ensemble_shape(ctx) -> None:
    """[N, n_targets] of X's type."""
    t = ctx.attr("n_targets")
    ctx.set_output(0, ctx.input_elem(0), [rows_of(ctx.input_shape(0)), None if t is None else int(t)])
