"""Shared helpers: run a model before and after a pass and compare the outputs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

import onyx
from onyx import GraphOptimizationLevel, SessionOptions
from onyx.ir.model import Model


def plain_options() -> SessionOptions:
    so = SessionOptions()
    so.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
    return so


def run(model: Model | bytes, feeds: dict[str, np.ndarray]) -> list:
    """Run without any optimization (the session would otherwise optimize the model itself)."""
    return onyx.InferenceSession(model, plain_options()).run(None, feeds)


def ops(model: Model) -> Counter:
    """Operator counts over the main graph, its subgraphs and the function bodies."""
    c = Counter(n.op_type for n in model.graph.walk())
    for f in model.functions:
        c.update(n.op_type for n in f.graph.walk())
    return c


def assert_same(got: list, want: list, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def check_pass(
    build: Callable[[], Model],
    pass_fn: Callable[[Model], bool],
    feeds: dict[str, np.ndarray] | list[dict[str, np.ndarray]],
    *,
    changed: bool = True,
    rtol: float = 1e-6,
    atol: float = 1e-6,
) -> Model:
    """Build the model twice, apply ``pass_fn`` to one copy (after shape inference, the stage that
    precedes the passes), compare outputs of both (in memory and
    after a save/load round trip), check the pass's answer and that a second run changes nothing."""
    feed_sets = feeds if isinstance(feeds, list) else [feeds]
    before = build()
    names_before = [v.name for v in before.graph.outputs]
    want = [run(before, f) for f in feed_sets]
    after = build()
    onyx.infer_shapes(after)  # the stage every pass runs after (optimize and the session run it first)
    assert bool(pass_fn(after)) is changed
    assert [v.name for v in after.graph.outputs] == names_before, "a graph output was renamed"
    onyx.check(after)
    data = onyx.serialize(after)
    for f, w in zip(feed_sets, want):
        assert_same(run(after, f), w, rtol, atol)
        assert_same(run(data, f), w, rtol, atol)
    if changed:
        again = onyx.infer_shapes(onyx.load_from_string(data))
        pass_fn(again)  # the pass may find more after its own rewrite, but must not break anything
        for f, w in zip(feed_sets, want):
            assert_same(run(again, f), w, rtol, atol)
    return after


def rand(*shape: int, dtype=np.float32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)
