"""The tree-ensemble engine shared by TreeEnsemble (v5), TreeEnsembleRegressor and TreeEnsembleClassifier.

Every encoding is compiled once into flat arrays over a global node index (interior nodes and leaves
alike): feature, threshold, comparison mode, true/false successor, NaN direction, and for leaves a row
of a (leaves x targets) weight matrix. Evaluation walks all (row, tree) pairs together, one depth level
per iteration, with numpy fancy indexing over the pairs still on interior nodes; there is no Python loop
per row or per tree. For a few rows and trees of at most 64 leaves, every branch condition is evaluated
at once instead and each tree's leaf found by AND-ing leaf masks (no loop per level). With the optional
``perf`` extra (numba), a compiled loop walks each (row, tree) pair and sums the leaf weights.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import jit_module

LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
MODE_NAMES = {
    "BRANCH_LEQ": LEQ,
    "BRANCH_LT": LT,
    "BRANCH_GTE": GTE,
    "BRANCH_GT": GT,
    "BRANCH_EQ": EQ,
    "BRANCH_NEQ": NEQ,
    "BRANCH_MEMBER": MEMBER,
    "LEAF": LEAF,
}


class Forest:
    """A compiled ensemble. ``n_nodes`` global nodes; leaves have ``leaf_id >= 0``."""

    def __init__(
        self,
        feature: np.ndarray,
        threshold: np.ndarray,
        mode: np.ndarray,
        true_next: np.ndarray,
        false_next: np.ndarray,
        missing_true: np.ndarray,
        leaf_id: np.ndarray,
        roots: np.ndarray,
        weights: np.ndarray,
        has_weight: np.ndarray,
        member_sets: list[np.ndarray] | None = None,
        member_set_of_node: np.ndarray | None = None,
    ):
        self.feature = feature.astype(np.int64)
        self.threshold = threshold.astype(np.float64)
        self.mode = mode.astype(np.int8)
        self.true_next = true_next.astype(np.int64)
        self.false_next = false_next.astype(np.int64)
        self.missing_true = missing_true.astype(bool)
        self.leaf_id = leaf_id.astype(np.int64)
        self.is_leaf = self.leaf_id >= 0
        self.roots = roots.astype(np.int64)
        self.weights = weights.astype(np.float64)
        self.has_weight = has_weight.astype(bool)
        self.n_targets = weights.shape[1]
        n = len(self.feature)
        for name, arr in (("true", self.true_next), ("false", self.false_next)):
            bad = (arr < 0) | (arr >= n)
            if np.any(bad & ~self.is_leaf):
                raise InvalidArgument(f"tree ensemble: a {name} branch points outside the {n} nodes")
        # leaves loop on themselves so that finished pairs can stay in place
        idx = np.arange(n)
        self.true_next = np.where(self.is_leaf, idx, self.true_next)
        self.false_next = np.where(self.is_leaf, idx, self.false_next)
        if len(self.roots) and (self.roots.min() < 0 or self.roots.max() >= n):
            raise InvalidArgument("tree ensemble: a tree root is outside the nodes")
        self.max_feature = int(self.feature[~self.is_leaf].max(initial=-1))
        if np.any(self.feature[~self.is_leaf] < 0):
            raise InvalidArgument("tree ensemble: a node has a negative feature id")
        branch_modes = np.unique(self.mode[~self.is_leaf])
        self.single_mode = int(branch_modes[0]) if len(branch_modes) == 1 else None
        self.any_missing_true = bool(np.any(self.missing_true & ~self.is_leaf))
        self.max_leaf_entries = int(self.has_weight.sum(axis=1).max()) if len(self.has_weight) else 0
        if self.max_leaf_entries <= 1 and len(self.weights):
            self.leaf_target = np.argmax(self.has_weight, axis=1)
            self.leaf_weight = self.weights[np.arange(len(self.weights)), self.leaf_target]
            self.leaf_has = self.has_weight.any(axis=1)
        # set membership: a sorted table of codes set_index * n_unique + rank(value)
        self.member_set_of_node = member_set_of_node
        if member_sets:
            allv = np.concatenate(member_sets) if member_sets else np.zeros(0)
            self.member_uniq = np.unique(allv)
            codes = [
                k * len(self.member_uniq) + np.searchsorted(self.member_uniq, s)
                for k, s in enumerate(member_sets)
            ]
            self.member_codes = np.unique(np.concatenate(codes)) if codes else np.zeros(0, np.int64)

    # ---- traversal -------------------------------------------------------------------------
    def _condition(self, v: np.ndarray, nd: np.ndarray) -> np.ndarray:
        mode = self.single_mode
        if mode is not None:
            return self._compare(mode, v, self.threshold[nd], nd)
        modes = self.mode[nd]
        thr = self.threshold[nd]
        cond = np.zeros(v.shape, dtype=bool)
        for m in np.unique(modes):
            sel = modes == m
            cond[sel] = self._compare(int(m), v[sel], thr[sel], nd[sel])
        return cond

    def _compare(self, mode: int, v, thr, nd) -> np.ndarray:
        if mode == LEQ:
            return v <= thr
        if mode == LT:
            return v < thr
        if mode == GTE:
            return v >= thr
        if mode == GT:
            return v > thr
        if mode == EQ:
            return v == thr
        if mode == NEQ:
            return v != thr
        if mode == MEMBER:
            return self._member(v, nd)
        raise InvalidArgument(f"tree ensemble: unknown node mode {mode}")

    def _member(self, v: np.ndarray, nd: np.ndarray) -> np.ndarray:
        if self.member_set_of_node is None or not hasattr(self, "member_uniq") or len(self.member_uniq) == 0:
            return np.zeros(v.shape, dtype=bool)
        u = self.member_uniq
        i = np.clip(np.searchsorted(u, v), 0, len(u) - 1)
        present = u[i] == v
        code = self.member_set_of_node[nd] * len(u) + i
        j = np.clip(np.searchsorted(self.member_codes, code), 0, len(self.member_codes) - 1)
        return present & (self.member_codes[j] == code)

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """(N, T) leaf node index reached by each row in each tree."""
        N = X.shape[0]
        T = len(self.roots)
        node = np.broadcast_to(self.roots, (N, T)).reshape(-1).copy()
        if N == 0 or T == 0:
            return node.reshape(N, T)
        nfeat = X.shape[1]
        if self.max_feature >= nfeat:
            raise InvalidArgument(
                f"tree ensemble: a node reads feature {self.max_feature} but X has {nfeat} features"
            )
        if N * (len(self.feature) - len(self.weights)) <= _ALL_NODES_BUDGET:
            ranges = self._leaf_ranges()
            if ranges is not None and N * len(ranges[0]) <= _ALL_NODES_BUDGET:
                found = self._leaves_bits(X, ranges)
                if found is not None:
                    return found
        xflat = X.reshape(-1)
        row_base = np.repeat(np.arange(N, dtype=np.int64) * nfeat, T)
        active = np.nonzero(~self.is_leaf[node])[0]
        limit = len(self.feature) + 1
        steps = 0
        while active.size:
            steps += 1
            if steps > limit:
                raise InvalidArgument("tree ensemble: the trees contain a cycle")
            nd = node[active]
            v = xflat[row_base[active] + self.feature[nd]]
            cond = self._condition(v, nd)
            if self.any_missing_true:
                cond |= np.isnan(v) & self.missing_true[nd]
            nxt = np.where(cond, self.true_next[nd], self.false_next[nd])
            node[active] = nxt
            active = active[~self.is_leaf[nxt]]
        return node.reshape(N, T)

    def _leaf_ranges(self):
        """For the few-rows walk: the forest as leaf masks (see _bit_plan), or None where it does not
        apply: a BRANCH_MEMBER node, a shared node or cycle, a tree of more than 64 leaves.

        Leaves are numbered depth-first, true branch first, tree after tree, so that every subtree's
        leaves are one contiguous range; a branch node rules out the side it does not take, and the one
        leaf no node of its tree rules out is the leaf the row reaches. Computed once.
        """
        cached_ranges = self.__dict__.get("_ranges", False)
        if cached_ranges is not False:
            return cached_ranges
        self._ranges = None
        if self.single_mode == MEMBER or np.any(self.mode[~self.is_leaf] == MEMBER):
            return None
        n = len(self.feature)
        tn = self.true_next.tolist()
        fn = self.false_next.tolist()
        is_leaf = self.is_leaf.tolist()
        seen = bytearray(n)
        lo = [0] * n
        hi = [0] * n
        order: list[int] = []
        internal: list[int] = []
        firsts: list[int] = []  # per tree: its first leaf's position, and its first internal node's
        int_starts: list[int] = []
        for r in self.roots.tolist():
            firsts.append(len(order))
            int_starts.append(len(internal))
            stack = [(r, False)]
            while stack:
                nd, done = stack.pop()
                if done:
                    lo[nd] = lo[tn[nd]]
                    hi[nd] = hi[fn[nd]]
                    continue
                if seen[nd]:
                    return None  # a shared node or a cycle: not a forest of trees
                seen[nd] = 1
                if is_leaf[nd]:
                    lo[nd] = len(order)
                    order.append(nd)
                    hi[nd] = len(order)
                    continue
                internal.append(nd)
                stack.append((nd, True))
                stack.append((fn[nd], False))
                stack.append((tn[nd], False))
        if not internal:
            return None
        counts = np.diff(np.asarray(firsts + [len(order)]))
        if counts.max() > 64:
            return None
        self._ranges = self._bit_plan(internal, int_starts, firsts, counts, lo, hi, order)
        return self._ranges

    def _bit_plan(self, internal, int_starts, firsts, counts, lo, hi, order):
        """Trees of at most 64 leaves: each branch node as two uint64 leaf masks (the leaves still
        possible when its condition holds, and when it does not); a row's leaf in a tree is the one bit
        left after AND-ing its nodes' masks. Each tree's columns start with one all-ones column, so that
        a tree without branches has a column too."""
        tn = self.true_next
        fn = self.false_next
        cols, m_true, m_false, starts = [], [], [], []
        for t in range(len(firsts)):
            first = firsts[t]
            full = (1 << int(counts[t])) - 1
            starts.append(len(cols))
            cols.append(internal[0])  # the all-ones column: its condition does not matter
            m_true.append(full)
            m_false.append(full)
            stop = int_starts[t + 1] if t + 1 < len(int_starts) else len(internal)
            for nd in internal[int_starts[t] : stop]:
                a, b = lo[tn[nd]] - first, hi[tn[nd]] - first  # the true side's leaves
                c, d = lo[fn[nd]] - first, hi[fn[nd]] - first  # the false side's
                m_true.append(full & ~(((1 << d) - 1) ^ ((1 << c) - 1)))
                m_false.append(full & ~(((1 << b) - 1) ^ ((1 << a) - 1)))
                cols.append(nd)
        idx = np.asarray(cols, dtype=np.int64)
        return (
            idx,
            self.feature[idx],
            self.threshold[idx],
            self.missing_true[idx],
            np.asarray(m_true, dtype=np.uint64),
            np.asarray(m_false, dtype=np.uint64),
            np.asarray(starts, dtype=np.int64),
            np.asarray(order, dtype=np.int64),
            np.asarray(firsts, dtype=np.int64),
        )

    def _leaves_bits(self, X: np.ndarray, plan) -> np.ndarray | None:
        """(N, T) leaves from every branch condition evaluated at once (few rows, small trees)."""
        idx, feat, thr, miss, m_true, m_false, starts, order, firsts = plan
        v = X[:, feat]
        cond = self._branch(v, thr, idx)
        if self.any_missing_true:
            cond |= np.isnan(v) & miss
        alive = np.bitwise_and.reduceat(np.where(cond, m_true, m_false), starts, axis=1)
        if not alive.all():
            return None
        # one bit left per (row, tree): its position is exact in float64
        local = np.log2(alive.astype(np.float64)).astype(np.int64)
        local += firsts
        return order[local]

    def _branch(self, v: np.ndarray, thr: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Branch conditions of (rows, nodes) values against the nodes ``idx``."""
        if self.single_mode is not None:
            return self._compare(self.single_mode, v, thr, idx)
        return self._condition(v.reshape(-1), np.tile(idx, v.shape[0])).reshape(v.shape)

    # ---- aggregation -------------------------------------------------------------------------
    def aggregate(self, X: np.ndarray, how: str = "SUM", dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        """(scores (N, K), has_score (N, K) bool) aggregated over the trees.

        Sums accumulate in ``dtype`` in tree order (``cumsum`` along the tree axis is sequential), as
        onnxruntime does, so that ties such as a probability of exactly 0.5 break the same way.
        """
        if how not in ("SUM", "AVERAGE", "MIN", "MAX"):
            raise InvalidArgument(
                f"tree ensemble: aggregate_function must be AVERAGE, SUM, MIN or MAX, got {how!r}"
            )
        if how in ("SUM", "AVERAGE") and X.shape[0] and len(self.roots):
            fast = self._jit_sum(X, np.dtype(dtype))
            if fast is not None:
                scores, has = fast
                if how == "AVERAGE":
                    scores /= scores.dtype.type(len(self.roots))
                return scores, has
        leaves = self.leaf_id[self.leaves(X)]  # (N, T) rows of the weight matrix
        N, T = leaves.shape
        K = self.n_targets
        dtype = np.dtype(dtype)
        scores = np.zeros((N, K), dtype=dtype)
        has = np.zeros((N, K), dtype=bool)
        if N == 0 or T == 0:
            return scores, has
        if how in ("SUM", "AVERAGE"):
            # W is zero where a leaf has no weight for a target: one gather, one sequential sum
            W = self._weights_as(dtype)
            every_leaf_scores = self.__dict__.get("_every_leaf_scores")
            if every_leaf_scores is None:
                every_leaf_scores = self._every_leaf_scores = bool(self.has_weight.all())
            step = max(1, (1 << 22) // max(1, T * K))
            for s0 in range(0, N, step):
                lv = leaves[s0 : s0 + step]
                scores[s0 : s0 + step] = np.cumsum(W[lv], axis=1)[:, -1]
                if not every_leaf_scores:
                    has[s0 : s0 + step] = self.has_weight[lv].any(axis=1)
            if every_leaf_scores:
                has[...] = True
        elif self.max_leaf_entries <= 1:
            w = self.leaf_weight.astype(dtype)[leaves]
            h = self.leaf_has[leaves]
            tg = self.leaf_target[leaves] if K > 1 else None
            for k in range(K):
                sel = h if tg is None else h & (tg == k)
                self._reduce_into(scores[:, k], w, sel, how)
                has[:, k] = sel.any(axis=1)
        else:
            W = self.weights.astype(dtype)
            step = max(1, (1 << 22) // max(1, T * K))
            for s0 in range(0, N, step):
                lv = leaves[s0 : s0 + step]
                g = W[lv]  # (n, T, K)
                hm = self.has_weight[lv]
                for k in range(K):
                    self._reduce_into(scores[s0 : s0 + step, k], g[:, :, k], hm[:, :, k], how)
                has[s0 : s0 + step] = hm.any(axis=1)
        if how == "AVERAGE":
            scores /= dtype.type(T)
        return scores, has

    def _weights_as(self, dtype: np.dtype) -> np.ndarray:
        """The (leaves, targets) weights in ``dtype``, converted once."""
        cache = self.__dict__.setdefault("_weights_by_dtype", {})
        W = cache.get(dtype)
        if W is None:
            W = cache[dtype] = np.ascontiguousarray(self.weights, dtype=dtype)
        return W

    def _jit_sum(self, X: np.ndarray, dtype: np.dtype):
        """SUM through the compiled walk (the perf extra), or None where it does not apply."""
        jit = self.__dict__.get("_jit", False)
        if jit is False:
            jit = jit_module() if self.single_mode != MEMBER and not np.any(self.mode == MEMBER) else None
            self._jit = jit
        if jit is None:
            return None
        N, nfeat = X.shape
        if self.max_feature >= nfeat:
            raise InvalidArgument(
                f"tree ensemble: a node reads feature {self.max_feature} but X has {nfeat} features"
            )
        W = self._weights_as(dtype)
        packed = self.__dict__.get("_packed")
        if packed is None:
            packed = np.empty((len(self.feature), 4))
            packed[:, 0] = self.threshold
            packed[:, 1] = np.where(self.is_leaf, -1, self.feature)
            packed[:, 2] = self.true_next
            packed[:, 3] = self.false_next
            self._packed = packed
        scores = np.zeros((N, self.n_targets), dtype=dtype)
        has = np.zeros((N, self.n_targets), dtype=bool)
        rc = jit.forest_sum(
            np.ascontiguousarray(X, dtype=np.float64),
            self.roots,
            packed,
            self.mode,
            -1 if self.single_mode is None else self.single_mode,
            self.missing_true,
            self.any_missing_true,
            self.leaf_id,
            W,
            self.has_weight,
            scores,
            has,
            len(self.feature) + 1,
        )
        if rc < 0:
            raise InvalidArgument("tree ensemble: the trees contain a cycle")
        return scores, has

    @staticmethod
    def _reduce_into(out: np.ndarray, w: np.ndarray, sel: np.ndarray, how: str) -> None:
        """Reduce (n, T) weights where ``sel`` over the tree axis into ``out`` (n,)."""
        if how in ("SUM", "AVERAGE"):
            vals = np.where(sel, w, w.dtype.type(0))
            out[...] = np.cumsum(vals, axis=1)[:, -1]
            return
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


# ---- a small cache so that a session's attributes are compiled once ---------------------------

#: The few-rows walk (every branch condition at once) runs while rows x branch nodes stays below this.
_ALL_NODES_BUDGET = 1 << 16

_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()


def cached(kind: str, attrs: dict, build):
    """Compile once per distinct set of attribute objects (identity-keyed; references are held)."""
    key = (kind,) + tuple((k, id(v)) for k, v in sorted(attrs.items()))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and all(hit[0][k] is v for k, v in attrs.items()):
            _cache.move_to_end(key)
            return hit[1]
    forest = build()
    with _cache_lock:
        _cache[key] = (dict(attrs), forest)
        while len(_cache) > 64:
            _cache.popitem(last=False)
    return forest


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
