"""Tree ensembles: the C sums against the numpy walks on every node mode, NaNs and missing-value
tracking, set membership, empty and odd batches; a malformed forest raises instead of reading out of
bounds."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.kernels import _loader, trees
from onyx.kernels.trees import EQ, GT, GTE, LEAF, LEQ, LT, MEMBER, NEQ, Forest

needs_c = pytest.mark.skipif(not _loader.built("_trees"), reason="onyx.kernels._trees was not built")
ALL_MODES = [LEQ, LT, GTE, GT, EQ, NEQ]


def _forest(rng, n_trees, n_features, n_targets, modes, depth=5, multi=False, member=False):
    """Random trees over a global node index; values on a 0.1 grid so that EQ/NEQ and ties matter."""
    feat, thr, mode, tn, fn, miss, leaf = [], [], [], [], [], [], []
    W, H, roots, sets, set_of = [], [], [], [], []

    def build(d):
        me = len(feat)
        for lst in (feat, thr, mode, tn, fn, miss, leaf):
            lst.append(0)
        set_of.append(0)
        if d >= depth or (d > 0 and rng.random() < 0.25):
            mode[me], leaf[me] = LEAF, len(W)
            w = np.zeros(n_targets)
            h = np.zeros(n_targets, bool)
            for k in rng.choice(
                n_targets, size=rng.integers(1, n_targets + 1) if multi else 1, replace=False
            ):
                w[k], h[k] = np.round(rng.normal(), 3), True
            W.append(w)
            H.append(h)
            return me
        leaf[me] = -1
        feat[me] = int(rng.integers(n_features))
        m = int(rng.choice(modes + ([MEMBER] if member else [])))
        mode[me] = m
        thr[me] = float(np.round(rng.normal(), 1))
        miss[me] = rng.random() < 0.3
        if m == MEMBER:
            set_of[me] = len(sets)
            sets.append(np.round(rng.normal(size=3), 1))
        tn[me] = build(d + 1)
        fn[me] = build(d + 1)
        return me

    for _ in range(n_trees):
        roots.append(build(0))
    a = lambda v, t: np.asarray(v, dtype=t)  # noqa: E731
    return Forest(
        a(feat, np.int64),
        a(thr, np.float64),
        a(mode, np.int8),
        a(tn, np.int64),
        a(fn, np.int64),
        a(miss, bool),
        a(leaf, np.int64),
        a(roots, np.int64),
        np.array(W).reshape(-1, n_targets),
        np.array(H).reshape(-1, n_targets),
        sets or None,
        a(set_of, np.int64) if sets else None,
    )


def _inputs(rng, n, f):
    x = np.round(rng.normal(size=(n, f)), 1)
    x[rng.random(x.shape) < 0.1] = np.nan
    return x


def _both(forest, x, dtype, monkeypatch):
    fast = trees.forest_sum(forest, x, dtype, threads=2)
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain = trees.forest_sum(forest, x, dtype)
    monkeypatch.delenv("ONYX_NO_PERF")
    return fast, plain


@needs_c
@pytest.mark.parametrize("modes", [[m] for m in ALL_MODES] + [ALL_MODES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("member", [False, True])
def test_compiled_matches_numpy(modes, dtype, member, monkeypatch):
    rng = np.random.default_rng(len(modes) * 10 + modes[0] + 100 * member)
    forest = _forest(rng, 12, 5, 3, modes, multi=True, member=member)
    for n in (0, 1, 7, 300):  # 300 rows: more than one thread
        (s1, h1), (s2, h2) = _both(forest, _inputs(rng, n, 5), dtype, monkeypatch)
        assert s1.dtype == s2.dtype == dtype and s1.shape == s2.shape == (n, 3)
        # the same weights added in the same (tree) order and precision: the same bits
        np.testing.assert_array_equal(s1, s2)
        np.testing.assert_array_equal(h1, h2)


@needs_c
def test_strided_input_and_single_tree(monkeypatch):
    rng = np.random.default_rng(3)
    forest = _forest(rng, 1, 4, 1, ALL_MODES, depth=8)
    x = _inputs(rng, 9, 8)[:, ::2]  # non-contiguous
    (s1, h1), (s2, h2) = _both(forest, x, np.float32, monkeypatch)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(h1, h2)


def _tiny(**change):
    """Two branch nodes and three leaves; ``change`` replaces arrays to make it malformed."""
    a = dict(
        feature=np.array([0, 1, 0, 0, 0]),
        threshold=np.zeros(5),
        mode=np.array([LEQ, LT, LEAF, LEAF, LEAF], np.int8),
        true_next=np.array([1, 2, 0, 0, 0]),
        false_next=np.array([4, 3, 0, 0, 0]),
        missing_true=np.zeros(5, bool),
        leaf_id=np.array([-1, -1, 0, 1, 2]),
        roots=np.array([0]),
        weights=np.array([[1.0], [2.0], [4.0]]),
        has_weight=np.ones((3, 1), bool),
    )
    a.update(change)
    return Forest(**a)


@needs_c
@pytest.mark.parametrize(
    "change",
    [
        {"leaf_id": np.array([-1, -1, 0, 1, 7])},  # a leaf's weight row past the weights
        {"mode": np.array([LEQ, 9, LEAF, LEAF, LEAF], np.int8)},  # an unknown mode
        {"mode": np.array([LEQ, MEMBER, LEAF, LEAF, LEAF], np.int8)},  # a member node: an empty set
    ],
)
def test_malformed_forest_raises_or_matches(change, monkeypatch):
    forest = _tiny(**change)
    x = np.array([[-1.0, -1.0], [1.0, 1.0]])
    try:
        plain = trees._forest_sum_numpy(forest, x, np.dtype(np.float64))
    except (InvalidArgument, IndexError):
        plain = None
    if plain is None:
        with pytest.raises(InvalidArgument):
            trees.forest_sum(forest, x, np.float64)
    else:
        np.testing.assert_array_equal(trees.forest_sum(forest, x, np.float64)[0], plain[0])


@needs_c
def test_out_of_range_indices_raise_in_c():
    native = _loader.compiled("_trees")
    f = _tiny()
    args = [
        f.feature,
        f.threshold,
        f.mode,
        f.true_next,
        f.false_next,
        f.missing_true,
        f.leaf_id,
        np.full(5, -1, np.int64),
        f.roots,
        f.weights,
        f.has_weight,
        np.zeros(1, np.int64),
        np.zeros(0),
    ]
    native.forest(*args)  # well formed
    member = np.array([LEQ, MEMBER, LEAF, LEAF, LEAF], np.int8)
    for changes in [
        {3: np.array([1, 5, 0, 0, 0])},  # a successor past the nodes
        {4: np.array([-1, 3, 0, 0, 0])},  # a negative successor
        {8: np.array([5])},  # a root past the nodes
        {0: np.array([-2, 1, 0, 0, 0])},  # a negative feature
        {2: member, 7: np.array([-1, 1, -1, -1, -1])},  # a member node's set past the sets
        {6: np.array([-1, -1, 0, 1])},  # arrays of different lengths
        {11: np.array([0, 2]), 12: np.zeros(1)},  # a set past the set values
    ]:
        wrong = list(args)
        for i, bad in changes.items():
            wrong[i] = bad
        with pytest.raises(ValueError):
            native.forest(*wrong)
    with pytest.raises(ValueError):  # a node reads feature 1, X has one column
        native.forest_sum(native.forest(*args), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1), bool), 1)


def test_cycle_is_reported_by_both_paths(monkeypatch):
    forest = _tiny(true_next=np.array([1, 0, 0, 0, 0]))  # node 1 leads back to node 0
    x = np.full((2, 2), -1.0)
    for env in ("0", "1"):
        monkeypatch.setenv("ONYX_NO_PERF", env)
        with pytest.raises(InvalidArgument, match="cycle"):
            trees.forest_sum(forest, x, np.float32)


def test_missing_feature_raises():
    with pytest.raises(InvalidArgument, match="feature 1"):
        trees.forest_sum(_tiny(), np.zeros((3, 1)), np.float32)


@pytest.mark.parametrize("modes", [[LEQ], ALL_MODES])
def test_few_rows_walk_matches_level_walk(modes, monkeypatch):
    """numpy's two walks: every condition at once (few rows) and one depth level at a time."""
    rng = np.random.default_rng(11)
    forest = _forest(rng, 30, 6, 2, modes, depth=6, multi=True)
    assert forest._leaf_ranges() is not None
    for n in (1, 4, 9):
        x = _inputs(rng, n, 6)
        few = forest.leaves(x)
        monkeypatch.setattr(trees, "_ALL_NODES_BUDGET", 0)
        level = forest.leaves(x)
        monkeypatch.undo()
        np.testing.assert_array_equal(few, level)
