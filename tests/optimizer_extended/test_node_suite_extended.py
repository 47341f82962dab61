"""The EXTENDED level over the whole ONNX node suite: every case onyx passes without optimization
must still pass after ``optimize(model, 2)`` (serialized and loaded again before running)."""

from __future__ import annotations

import warnings

import pytest

import onyx
from onyx import GraphOptimizationLevel, SessionOptions
from tests.conformance.harness import check_case

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from onnx.backend.test.case.node import collect_testcases

    CASES = {c.name: c for c in collect_testcases()}

RANDOM_OPS = {
    "Bernoulli",
    "RandomUniformLike",
    "RandomNormalLike",
    "RandomUniform",
    "RandomNormal",
    "Multinomial",
}


def _options(level: int) -> SessionOptions:
    so = SessionOptions()
    so.graph_optimization_level = GraphOptimizationLevel(level)
    return so


def run_plain(model, inputs):
    sess = onyx.InferenceSession(model.SerializeToString(), _options(0))
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def run_extended(model, inputs):
    m = onyx.load_from_string(model.SerializeToString())
    onyx.optimize(m, int(GraphOptimizationLevel.ORT_ENABLE_EXTENDED))
    sess = onyx.InferenceSession(onyx.serialize(m), _options(0))
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_extended_level_keeps_node_case(name: str) -> None:
    case = CASES[name]
    if any(n.op_type in RANDOM_OPS for n in case.model.graph.node):
        pytest.skip("random outputs: compared by tests/conformance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            check_case(case, run_extended)
            return
        except Exception as optimized_error:  # noqa: BLE001
            try:
                check_case(case, run_plain)
            except Exception:  # noqa: BLE001
                pytest.skip("fails without optimization too")
            raise optimized_error
