"""Tree ensembles: every (row, tree) pair walked to its leaf, the leaves' weights summed in tree order.

:class:`Forest` is an ensemble compiled into flat arrays over a global node index (interior nodes and
leaves alike): feature, threshold, comparison mode, true/false successor, NaN direction, and for leaves a
row of a (leaves x targets) weight matrix. :func:`forest_sum` adds every tree's leaf weights per row: in
C (``_trees.c``, rows over threads) when it was built, else with numpy, which walks all (row, tree) pairs
together one depth level per iteration (fancy indexing over the pairs still on interior nodes), or for
a few rows and trees of at most 64 leaves evaluates every branch condition at once and finds each tree's
leaf by AND-ing leaf masks. Both sum in tree order, in the accumulation dtype, as onnxruntime does.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import _loader, _threads

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
        self.member_sets = member_sets
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

    # ---- what the sums need, built once --------------------------------------------------------
    def weights_as(self, dtype: np.dtype) -> np.ndarray:
        """The (leaves, targets) weights in ``dtype``, converted once."""
        cache = self.__dict__.setdefault("_weights_by_dtype", {})
        W = cache.get(dtype)
        if W is None:
            W = cache[dtype] = np.ascontiguousarray(self.weights, dtype=dtype)
        return W

    def compiled(self, native):
        """The forest as the C module holds it (its own checked copy), built once."""
        handle = self.__dict__.get("_compiled")
        if handle is None:
            n = len(self.feature)
            is_member = self.mode == MEMBER
            sets = [np.zeros(0)]  # BRANCH_MEMBER nodes without sets test against an empty one
            member_set = np.where(is_member, 0, -1).astype(np.int64)
            if self.member_set_of_node is not None and self.member_sets:
                sets = [np.unique(np.asarray(v, dtype=np.float64)) for v in self.member_sets]
                member_set[is_member] = self.member_set_of_node[:n][is_member]
            offsets = np.concatenate([[0], np.cumsum([len(v) for v in sets])]).astype(np.int64)
            values = np.concatenate(sets).astype(np.float64)
            handle = self._compiled = native.forest(
                self.feature,
                self.threshold,
                self.mode,
                self.true_next,
                self.false_next,
                self.missing_true,
                self.leaf_id,
                member_set,
                self.roots,
                self.weights,
                self.has_weight,
                offsets,
                values,
            )
        return handle


#: The few-rows walk (every branch condition at once) runs while rows x branch nodes stays below this.
_ALL_NODES_BUDGET = 1 << 16
#: rows from which the C sums run on more than one thread (a block of 64 rows a thread at least)
PARALLEL_ROWS = 128


def forest_sum(forest: Forest, X: np.ndarray, dtype, *, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(scores (N, K), has_score (N, K) bool): per row, the sum over the trees of the leaf weights (in
    ``dtype``, float32 or float64, tree after tree), and which targets some leaf scored. ``X`` is a
    float64 (N, features) matrix. A node reading a feature X lacks, or a cycle, is an InvalidArgument."""
    dtype = np.dtype(dtype)
    N = X.shape[0]
    if N and forest.max_feature >= X.shape[1]:
        raise InvalidArgument(
            f"tree ensemble: a node reads feature {forest.max_feature} but X has {X.shape[1]} features"
        )
    native = _loader.compiled("_trees")
    if native is not None and dtype in (np.float32, np.float64):
        scores = np.zeros((N, forest.n_targets), dtype=dtype)
        has = np.zeros((N, forest.n_targets), dtype=bool)
        try:
            native.forest_sum(
                forest.compiled(native),
                np.ascontiguousarray(X, dtype=np.float64),
                scores,
                has,
                _threads.resolve(threads) if N >= PARALLEL_ROWS else 1,
            )
        except ValueError as e:
            raise InvalidArgument(f"tree ensemble: {e}") from None
        return scores, has
    return _forest_sum_numpy(forest, X, dtype)


def leaf_rows(forest: Forest, X: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a numpy aggregation of the trees starts: each (row, tree)'s row of the weight matrix
    (N, T), and the zero scores (N, targets) of ``dtype`` with the all-False mask of those scored."""
    leaves = forest.leaf_id[forest.leaves(X)]
    shape = (leaves.shape[0], forest.n_targets)
    return leaves, np.zeros(shape, dtype=dtype), np.zeros(shape, dtype=bool)


def _forest_sum_numpy(forest: Forest, X: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """forest_sum by numpy: the leaves, then one gather of their weights (zero where a leaf does not
    score a target) and one sequential sum (``cumsum`` along the tree axis) per block of rows."""
    leaves, scores, has = leaf_rows(forest, X, dtype)
    if not leaves.size:
        return scores, has
    N, T = leaves.shape
    K = forest.n_targets
    W = forest.weights_as(dtype)
    every_leaf_scores = bool(forest.has_weight.all())
    step = max(1, (1 << 22) // max(1, T * K))
    for s0 in range(0, N, step):
        lv = leaves[s0 : s0 + step]
        scores[s0 : s0 + step] = np.cumsum(W[lv], axis=1)[:, -1]
        if not every_leaf_scores:
            has[s0 : s0 + step] = forest.has_weight[lv].any(axis=1)
    if every_leaf_scores:
        has[...] = True
    return scores, has
