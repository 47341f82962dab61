"""The basic and extended optimization levels over the whole ONNX node suite.

Every case must still pass after ``optimize(model, level)``; the optimized model is serialized and
loaded again before running (so that what the passes create survives the encoder and the checker), and
run with the session's own optimizations off.
"""

from __future__ import annotations

import warnings

import pytest

import onyx
from onyx import GraphOptimizationLevel, SessionOptions
from tests.conformance.harness import check_case
from tests.conformance.test_node_suite import CASES, _is_random

LEVELS = {
    "basic": GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
}


def _runner(level: int):
    def run(model, inputs):
        m = onyx.load_from_string(model.SerializeToString())
        onyx.optimize(m, level)
        so = SessionOptions()
        so.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = onyx.InferenceSession(onyx.serialize(m), so)
        names = [i.name for i in sess.get_inputs()]
        return sess.run(None, dict(zip(names, inputs)))

    return run


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_level_keeps_node_case(name: str, level: str) -> None:
    case = CASES[name]
    if _is_random(case):
        pytest.skip("random outputs: judged by shape, type and range in tests/conformance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_case(case, _runner(int(LEVELS[level])))
