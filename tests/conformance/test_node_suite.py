"""The official ONNX backend node suite, run through onyx's own loader, checker and session.

Cases come from ``onnx.backend.test.case.node.collect_testcases()`` (the onnx wheel no longer ships
the data files). Floating outputs must be within the case's rtol/atol (1e-3 / 1e-7), everything else
exact, element types exact. Random operators are judged by shape, type and range. Cases onyx does
not pass are listed in known_failures.py with their reason; they are strict xfails, so a case that
starts passing must be taken off the list and the pass count can only go up.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.conformance.harness import check_case, to_numpy
from tests.conformance.harness import run_with_session as run_with_onyx
from tests.conformance.known_failures import KNOWN_FAILURES

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


def _is_random(case) -> bool:
    return any(n.op_type in RANDOM_OPS for n in case.model.graph.node)


def _check_random(case) -> None:
    """Random outputs: same shape and type as expected, values in the range the op allows."""
    node_ops = {n.op_type for n in case.model.graph.node}
    for inputs, outputs in case.data_sets:
        got = run_with_onyx(case.model, [to_numpy(x) for x in inputs])
        for g, e in zip(got, outputs):
            e = np.asarray(to_numpy(e))
            assert g.dtype == e.dtype and g.shape == e.shape, f"{g.dtype}{g.shape} != {e.dtype}{e.shape}"
            if "Bernoulli" in node_ops:
                assert set(np.unique(g).tolist()) <= {0, 1}
            if "RandomUniformLike" in node_ops or "RandomUniform" in node_ops:
                attrs = {a.name: a.f for n in case.model.graph.node for a in n.attribute}
                assert g.min() >= attrs.get("low", 0.0) and g.max() <= attrs.get("high", 1.0)


def _params():
    for name in sorted(CASES):
        marks = ()
        if name in KNOWN_FAILURES:
            marks = (pytest.mark.xfail(reason=KNOWN_FAILURES[name], strict=True),)
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_node_case(name: str) -> None:
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if _is_random(case):
            _check_random(case)
        else:
            check_case(case, run_with_onyx)


def test_suite_size() -> None:
    assert len(CASES) == 1884
