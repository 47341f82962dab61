"""Every input the fuzzer found (fuzz/regressions/: hangs, foreign exceptions, crashes, each fixed at its
cause) goes through the whole pipeline again and is refused with onyx's own error, or runs, promptly."""

from __future__ import annotations

import contextlib
import signal
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = sorted((ROOT / "fuzz" / "regressions").glob("*"))
#: a hang guard only (these run in well under a second): never a performance assertion
HANG_GUARD_S = 30


def _exercise():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from fuzz.pipeline import exercise

    return exercise


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"still running after {HANG_GUARD_S} s")


@contextlib.contextmanager
def _hang_guard():
    """Raise _Hang in the test if the body runs past HANG_GUARD_S (a hang in Python code)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_GUARD_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_there_are_regression_cases():
    assert REGRESSIONS, "fuzz/regressions/ is empty"


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_fuzz_regression(path: Path):
    exercise = _exercise()
    with _hang_guard(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's RuntimeWarnings on NaN are not findings
        stage = exercise(path.read_bytes())  # a foreign exception or _Hang fails the test
    assert stage in {"load", "session", "feed", "run", "ran"}


def test_a_merely_slow_model_stops_at_the_run_timeout(monkeypatch):
    """A Loop of 2**62 trips is slow, not broken: exercise() gives each run a deadline (run.timeout_ms),
    so it ends with onyx's Terminated ('run'), not as a hang the fuzzer reports."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from fuzz import pipeline

    monkeypatch.setattr(pipeline, "RUN_TIMEOUT_MS", 200)
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Neg", ["acc"], ["acc_out"])],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []), vi("acc", TensorProto.FLOAT, [2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [2])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body)],
        "g",
        [vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(1 << 62, np.int64), "trips")],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()
    with _hang_guard():
        assert _exercise()(data) == "run"


@pytest.mark.parametrize("op_type", ["LayerNormalization", "SimplifiedLayerNormalization"])
def test_normalization_axis_far_out_of_range_is_a_contradiction(op_type):
    """Finding 7's cause (a list of 2**31 ones built by the shape rule from axis -2**31): the rule refuses
    the axis; strict inference names the node, lenient inference leaves the statistics unknown."""
    from onnx import TensorProto, helper

    import onyx
    from onyx.errors import InvalidGraph

    node = helper.make_node(op_type, ["x", "scale"], ["y", "mean", "inv"], axis=-(2**31))
    if op_type == "SimplifiedLayerNormalization":
        node = helper.make_node(op_type, ["x", "scale"], ["y", "inv"], axis=-(2**31))
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = onyx.load_from_string(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    with pytest.raises(InvalidGraph, match="axis"):
        onyx.infer_shapes(model.clone(), strict=True)
    inferred = onyx.infer_shapes(model.clone())
    stats = [v for v in inferred.graph.value_info if v.name == "inv"]
    assert not stats or stats[0].type is None or stats[0].shape is None
