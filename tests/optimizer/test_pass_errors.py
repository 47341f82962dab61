"""A pass that raises fails the optimization (and session creation) with an error naming the pass."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.errors import Fail, InvalidGraph
from onyx.ir.builder import GraphBuilder
from onyx.optimizer import levels


def _model():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [2])
    b.output(b.Relu(x), "y", np.float32, [2])
    return b.model()


def broken_pass(model) -> bool:
    raise KeyError("some_value")


def pass_finding_a_bad_graph(model) -> bool:
    raise InvalidGraph("node n1 reads a value nobody defines")


def test_a_failing_pass_is_named(monkeypatch):
    monkeypatch.setitem(levels.LEVELS, 1, [broken_pass])
    with pytest.raises(Fail, match="optimizer pass broken_pass failed: KeyError: 'some_value'"):
        onyx.optimize(_model(), 1)
    with pytest.raises(Fail, match="broken_pass"):
        onyx.InferenceSession(_model())


def test_an_onyx_error_keeps_its_type_and_gains_the_pass_name(monkeypatch):
    monkeypatch.setitem(levels.LEVELS, 1, [pass_finding_a_bad_graph])
    with pytest.raises(InvalidGraph, match="optimizer pass pass_finding_a_bad_graph failed: node n1"):
        onyx.InferenceSession(_model())


def test_without_optimization_the_pass_does_not_run(monkeypatch):
    monkeypatch.setitem(levels.LEVELS, 1, [broken_pass])
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    y = onyx.InferenceSession(_model(), so).run(None, {"x": np.array([-1, 2], np.float32)})[0]
    np.testing.assert_array_equal(y, [0, 2])
