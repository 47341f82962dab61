"""The tree-ensemble engine shared by TreeEnsemble (v5), TreeEnsembleRegressor and TreeEnsembleClassifier:
the legacy (v1/v3) attribute encoding compiled into a :class:`onyx.kernels.trees.Forest`, and the
aggregation of the trees' leaf weights (SUM and AVERAGE by :func:`onyx.kernels.trees.forest_sum`, MIN
and MAX here, from the leaves).
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.trees import LEAF, MEMBER, MODE_NAMES, Forest, forest_sum, leaf_rows
from onyx.ops._versions import register_versions
from onyx.ops.registry import ML_DOMAIN

__all__ = ["LEAF", "MEMBER", "Forest", "aggregate", "compile_legacy", "prepare_x"]

_AGGREGATES = ("SUM", "AVERAGE", "MIN", "MAX")


def aggregate(forest: Forest, X: np.ndarray, how: str = "SUM", dtype=np.float32, threads: int = 0):
    """(scores (N, K), has_score (N, K) bool) aggregated over the trees by ``how`` (SUM, AVERAGE, MIN,
    MAX) in ``dtype``; ``X`` is a float64 (rows, features) matrix (see :func:`prepare_x`)."""
    if how not in _AGGREGATES:
        raise InvalidArgument(
            f"tree ensemble: aggregate_function must be AVERAGE, SUM, MIN or MAX, got {how!r}"
        )
    dtype = np.dtype(dtype)
    if how in ("SUM", "AVERAGE"):
        scores, has = forest_sum(forest, X, dtype, threads=threads)
        if how == "AVERAGE":
            scores /= dtype.type(len(forest.roots))
        return scores, has
    leaves, scores, has = leaf_rows(forest, X, dtype)  # leaves: (N, T) rows of the weight matrix
    if not leaves.size:
        return scores, has
    N, T = leaves.shape
    K = forest.n_targets
    if forest.max_leaf_entries <= 1:
        w = forest.leaf_weight.astype(dtype)[leaves]
        h = forest.leaf_has[leaves]
        tg = forest.leaf_target[leaves] if K > 1 else None
        for k in range(K):
            sel = h if tg is None else h & (tg == k)
            _reduce_into(scores[:, k], w, sel, how)
            has[:, k] = sel.any(axis=1)
        return scores, has
    W = forest.weights.astype(dtype)
    step = max(1, (1 << 22) // max(1, T * K))
    for s0 in range(0, N, step):
        lv = leaves[s0 : s0 + step]
        g = W[lv]  # (n, T, K)
        hm = forest.has_weight[lv]
        for k in range(K):
            _reduce_into(scores[s0 : s0 + step, k], g[:, :, k], hm[:, :, k], how)
        has[s0 : s0 + step] = hm.any(axis=1)
    return scores, has


def _reduce_into(out: np.ndarray, w: np.ndarray, sel: np.ndarray, how: str) -> None:
    """MIN or MAX of (n, T) weights where ``sel`` over the tree axis into ``out`` (n,); 0 where none."""
    fill = np.inf if how == "MIN" else -np.inf
    vals = np.where(sel, w, w.dtype.type(fill))
    r = vals.min(axis=1) if how == "MIN" else vals.max(axis=1)
    out[...] = np.where(np.isinf(r) & ~sel.any(axis=1), 0, r)


# ---- compiling the legacy (v1/v3) encoding -----------------------------------------------------


def compile_legacy(
    nodes_treeids,
    nodes_nodeids,
    nodes_featureids,
    nodes_modes,
    nodes_values,
    nodes_truenodeids,
    nodes_falsenodeids,
    nodes_missing_value_tracks_true,
    leaf_treeids,
    leaf_nodeids,
    leaf_targets,
    leaf_weights,
    n_targets: int,
    what: str,
) -> Forest:
    tid = np.asarray(nodes_treeids if nodes_treeids is not None else [], dtype=np.int64)
    nid = np.asarray(nodes_nodeids if nodes_nodeids is not None else [], dtype=np.int64)
    n = len(tid)
    fields = {
        "nodes_nodeids": nid,
        "nodes_featureids": nodes_featureids,
        "nodes_modes": nodes_modes,
        "nodes_values": nodes_values,
        "nodes_truenodeids": nodes_truenodeids,
        "nodes_falsenodeids": nodes_falsenodeids,
    }
    for k, v in fields.items():
        if v is None or len(v) != n:
            raise InvalidArgument(
                f"{what}: {k} has {0 if v is None else len(v)} entries, nodes_treeids has {n}"
            )
    if n == 0:
        raise InvalidArgument(f"{what}: the ensemble has no nodes")
    try:
        mode = np.fromiter(map(MODE_NAMES.__getitem__, map(str, nodes_modes)), dtype=np.int8, count=n)
    except KeyError as e:
        raise InvalidArgument(f"{what}: unknown node mode {e.args[0]!r}") from None
    if nodes_missing_value_tracks_true is not None and len(nodes_missing_value_tracks_true):
        if len(nodes_missing_value_tracks_true) != n:
            raise InvalidArgument(f"{what}: nodes_missing_value_tracks_true has the wrong length")
        missing = np.asarray(nodes_missing_value_tracks_true, dtype=bool)
    else:
        missing = np.zeros(n, dtype=bool)
    tn_ids = np.asarray(nodes_truenodeids, dtype=np.int64)
    fn_ids = np.asarray(nodes_falsenodeids, dtype=np.int64)
    if nid.min() < 0:
        raise InvalidArgument(f"{what}: node ids must not be negative")
    M = int(max(nid.max(), tn_ids.max(), fn_ids.max())) + 1
    tmin = int(tid.min())
    key = (tid - tmin) * M + nid
    span = int(key.max()) + 1
    if span <= 8 * n + 1024:
        # dense (tree, node) -> position table: no sorting
        table = np.full(span, -1, dtype=np.int64)
        table[key] = np.arange(n)
        if np.count_nonzero(table >= 0) != n:
            raise InvalidArgument(f"{what}: a (tree id, node id) pair appears twice")

        def find(t, i, label):
            k = (np.asarray(t, dtype=np.int64) - tmin) * M + np.asarray(i, dtype=np.int64)
            inside = (k >= 0) & (k < span)
            p = np.where(inside, table[np.where(inside, k, 0)], -1)
            return np.maximum(p, 0), p >= 0

    else:
        order = np.argsort(key, kind="stable")
        skey = key[order]
        if np.any(skey[1:] == skey[:-1]):
            raise InvalidArgument(f"{what}: a (tree id, node id) pair appears twice")

        def find(t, i, label):
            k = (np.asarray(t, dtype=np.int64) - tmin) * M + np.asarray(i, dtype=np.int64)
            p = np.clip(np.searchsorted(skey, k), 0, n - 1)
            ok = skey[p] == k
            return order[p], ok

    is_leaf = mode == LEAF
    tnext, tok = find(tid, tn_ids, "true")
    fnext, fok = find(tid, fn_ids, "false")
    if np.any(~is_leaf & ~(tok & fok)):
        raise InvalidArgument(f"{what}: a branch node points to a node id missing from its tree")
    # roots: the smallest node id of each tree, trees in order of id
    trees, first = np.unique(tid, return_index=True)
    roots = np.empty(len(trees), dtype=np.int64)
    by_tree = np.lexsort((nid, tid))
    starts = np.searchsorted(tid[by_tree], trees)
    roots[:] = by_tree[starts]
    # leaves and their weights
    leaf_nodes = np.nonzero(is_leaf)[0]
    leaf_id = np.full(n, -1, dtype=np.int64)
    leaf_id[leaf_nodes] = np.arange(len(leaf_nodes))
    L = len(leaf_nodes)
    W = np.zeros((L, n_targets), dtype=np.float64)
    H = np.zeros((L, n_targets), dtype=bool)
    if leaf_treeids is not None and len(leaf_treeids):
        g, ok = find(leaf_treeids, leaf_nodeids, "leaf")
        if not np.all(ok):
            raise InvalidArgument(f"{what}: a weight refers to a node that does not exist")
        tg = np.asarray(leaf_targets, dtype=np.int64)
        if len(tg) and (tg.min() < 0 or tg.max() >= n_targets):
            raise InvalidArgument(f"{what}: a target/class id is outside [0, {n_targets})")
        lid = leaf_id[g]
        keep = lid >= 0
        np.add.at(W, (lid[keep], tg[keep]), np.asarray(leaf_weights, dtype=np.float64)[keep])
        H[lid[keep], tg[keep]] = True
    feature = np.asarray(nodes_featureids, dtype=np.int64)
    return Forest(
        feature,
        np.asarray(nodes_values, dtype=np.float64),
        mode,
        tnext,
        fnext,
        missing,
        leaf_id,
        roots,
        W,
        H,
    )


def prepare_x(X) -> np.ndarray:
    """X as a float64 (rows, features) matrix; a 1-D input is one row."""
    X = np.asarray(X)
    if X.dtype.kind not in "fiub":
        raise InvalidArgument(f"tree ensemble: X must be numeric, got {X.dtype}")
    if X.ndim == 0:
        X = X.reshape(1, 1)
    elif X.ndim == 1:
        X = X.reshape(1, -1)
    elif X.ndim > 2:
        X = X.reshape(X.shape[0], -1)
    return np.ascontiguousarray(X, dtype=np.float64)


# ---- TreeEnsembleRegressor and TreeEnsembleClassifier: the attributes they share ----------------

#: v1's attributes of both: the node lists, base values and the post transform
LEGACY_ATTRIBUTES: dict = {
    "base_values": None,
    "nodes_falsenodeids": None,
    "nodes_featureids": None,
    "nodes_hitrates": None,
    "nodes_missing_value_tracks_true": None,
    "nodes_modes": None,
    "nodes_nodeids": None,
    "nodes_treeids": None,
    "nodes_truenodeids": None,
    "nodes_values": None,
    "post_transform": "NONE",
}
#: v3 adds a tensor form of the float lists
LEGACY_TENSORS = ("base_values_as_tensor", "nodes_hitrates_as_tensor", "nodes_values_as_tensor")
#: attributes that change nothing in the result (hit rates are statistics of the training data)
_IGNORED = ("nodes_hitrates", "nodes_hitrates_as_tensor")


def pick(attrs: dict, name: str):
    """The attribute ``name``, or its ``name_as_tensor`` form (v3) flattened when that is given."""
    tensor = attrs.get(f"{name}_as_tensor")
    return np.asarray(tensor).reshape(-1) if tensor is not None else attrs[name]


def accumulation_dtype(X, attrs: dict):
    """float32 accumulation like onnxruntime, float64 for double inputs or double (*_as_tensor) weights."""
    if np.asarray(X).dtype == np.float64:
        return np.float64
    for k, v in attrs.items():
        if k.endswith("_as_tensor") and v is not None and np.asarray(v).dtype == np.float64:
            return np.float64
    return np.float32


def register_legacy(op_type: str, make, leaf: str, attributes: dict) -> None:
    """Register ``make(attrs) -> (X -> outputs)`` as op_type v1 (LEGACY_ATTRIBUTES, the leaf weights
    ``<leaf>_ids / _nodeids / _treeids / _weights`` and ``attributes``) and v3 (with LEGACY_TENSORS and
    ``<leaf>_weights_as_tensor``), compiled once per node when a session is created (``prepare``);
    called plainly (constant folding), it compiles the forest for that call."""
    weights = f"{leaf}_weights"
    leaves = {f"{leaf}_{k}": None for k in ("ids", "nodeids", "treeids", "weights")}

    def prepare(**attrs):
        return make({k: v for k, v in attrs.items() if k not in _IGNORED})

    def kernel(X, **attrs):
        attrs = {k: v for k, v in attrs.items() if k not in _IGNORED}
        return make(attrs)(X)

    tensors = {k: None for k in (*LEGACY_TENSORS, f"{weights}_as_tensor")}
    register_versions(
        op_type,
        kernel,
        inputs=("X",),
        required_inputs=1,
        attributes={**LEGACY_ATTRIBUTES, **leaves, **attributes},
        versions=((1, 3, {}, ()), (3, None, tensors, ())),
        domain=ML_DOMAIN,
        prepare=prepare,
    )
