"""Helpers: apply one EXTENDED pass to a builder model and compare outputs before and after, in
onyx and in onnxruntime (the fused com.microsoft nodes must mean what onnxruntime means)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import onnxruntime as ort

import onyx
from onyx import GraphOptimizationLevel, SessionOptions
from onyx.ir.model import Model


def _plain() -> SessionOptions:
    so = SessionOptions()
    so.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
    return so


def run_onyx(model: Model | bytes, feeds: dict) -> list:
    return onyx.InferenceSession(model if isinstance(model, bytes) else onyx.serialize(model), _plain()).run(
        None, feeds
    )


def run_ort(data: bytes, feeds: dict) -> list:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def ops(model: Model) -> Counter:
    return Counter((f"{n.domain}::" if n.domain else "") + n.op_type for n in model.graph.walk())


def close(got: list, want: list, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, float(np.max(np.abs(w), initial=0))))


def check_pass(
    build: Callable[[], Model],
    pass_fn: Callable[[Model], bool],
    feeds: dict,
    *,
    expect: str | None = None,
    changed: bool = True,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> Model:
    """Run ``build()`` before and after ``pass_fn``; the outputs must agree in onyx and, for the
    optimized model, in onnxruntime; ``expect`` (an op, "domain::Op" for contrib ops) must appear."""
    before = build()
    want = run_onyx(before, feeds)
    after = build()
    onyx.infer_shapes(after)  # the stage every pass runs after (optimize and the session run it first)
    assert pass_fn(after) is changed
    if expect is not None:
        assert ops(after)[expect] >= 1, ops(after)
    if changed:
        assert pass_fn(after) is False  # a fixed point after one run on these small graphs
    data = onyx.serialize(after)
    close(run_onyx(data, feeds), want, rtol, atol)
    close(run_ort(data, feeds), want, rtol, atol)
    return after
