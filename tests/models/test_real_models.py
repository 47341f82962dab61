"""Real models (torch CNNs/transformers/LSTM/MLP, sklearn pipelines) run by onyx against onnxruntime.

Every output must match onnxruntime within rtol 1e-3 and atol 1e-4 * max|expected| (integer, bool and
string outputs exactly, sequences of maps key by key). The inputs/outputs metadata (names, type strings
such as 'tensor(float)' or 'seq(map(int64,tensor(float)))', ranks) must match onnxruntime's NodeArgs.

Models are exported once per run (session-scoped fixtures) into the cache of tests/models/exporters.py.
A model its exporter cannot produce is skipped with the exporter's reason; onyx's failures are failures.
"""

from __future__ import annotations

import importlib.resources
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.models import exporters
from tests.models._runner import has_session, onyx_session, run_onyx

RTOL = 1e-3
ATOL_FACTOR = 1e-4

MODELS = exporters.all_models()


def shipped_digits() -> tuple[Path, dict[str, np.ndarray]]:
    data = importlib.resources.files("onyx") / "data"
    samples = np.load(str(data / "digits_samples.npz"))
    return Path(str(data / "digits.onnx")), {"input": samples["x"]}


CASES = [*MODELS, "digits/shipped"]


class Case:
    def __init__(self, key: str, path: Path, feeds: dict[str, np.ndarray]):
        import onnxruntime as ort

        self.key, self.path, self.feeds = key, path, feeds
        try:
            sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            self.expected = sess.run(None, feeds)
        except Exception as e:  # noqa: BLE001 - the oracle failed: nothing to compare against
            pytest.skip(f"{key}: onnxruntime (the oracle) cannot run the exported model: {e}")
        self.ort_inputs = sess.get_inputs()
        self.ort_outputs = sess.get_outputs()


_cases: dict[str, Case] = {}


@pytest.fixture(scope="session", params=CASES)
def case(request) -> Case:
    key = request.param
    if key not in _cases:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                path, feeds = shipped_digits() if key == "digits/shipped" else MODELS[key]()
        except exporters.ExportFailed as e:
            pytest.skip(str(e))
        _cases[key] = Case(key, path, feeds)
    return _cases[key]


def _tol(expected: np.ndarray) -> float:
    m = float(np.max(np.abs(expected))) if expected.size else 0.0
    return ATOL_FACTOR * m if m > 0 else 1e-7


def compare(got: Any, expected: Any, where: str) -> str | None:
    """None when ``got`` matches ``expected``, else a one-line description of the difference."""
    if isinstance(expected, list):  # a sequence (of maps, for ZipMap)
        if not isinstance(got, list | tuple):
            return f"{where}: expected a sequence, got {type(got).__name__}"
        if len(got) != len(expected):
            return f"{where}: sequence length {len(got)} != {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            err = compare(g, e, f"{where}[{i}]")
            if err:
                return err
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{where}: expected a map, got {type(got).__name__}"
        gk = {k.item() if isinstance(k, np.generic) else k: v for k, v in got.items()}
        if sorted(gk, key=repr) != sorted(expected, key=repr):
            return f"{where}: map keys {sorted(gk, key=repr)} != {sorted(expected, key=repr)}"
        keys = list(expected)
        e = np.asarray([expected[k] for k in keys], dtype=np.float64)
        g = np.asarray([float(np.asarray(gk[k])) for k in keys], dtype=np.float64)
        if not np.allclose(g, e, rtol=RTOL, atol=_tol(e)):
            return f"{where}: map values {g.tolist()} != {e.tolist()}"
        return None
    expected = np.asarray(expected)
    if not isinstance(got, np.ndarray | np.generic):
        return f"{where}: expected an array, got {type(got).__name__}"
    got = np.asarray(got)
    if got.dtype != expected.dtype:
        return f"{where}: dtype {got.dtype} != {expected.dtype}"
    if got.shape != expected.shape:
        return f"{where}: shape {got.shape} != {expected.shape}"
    if expected.dtype.kind == "f":
        g, e = got.astype(np.float64), expected.astype(np.float64)
        atol = _tol(e)
        bad = ~(np.abs(g - e) <= atol + RTOL * np.abs(e))
        if bad.any():
            i = np.unravel_index(np.argmax(np.where(bad, np.abs(g - e), -1)), e.shape)
            return (
                f"{where}: {int(bad.sum())}/{e.size} elements differ; worst at {tuple(map(int, i))}: "
                f"{g[i]!r} vs {e[i]!r} (atol {atol:.3g}, rtol {RTOL})"
            )
        return None
    if got.tolist() != expected.tolist():
        n = int(np.sum(got != expected)) if expected.dtype != object else "some"
        return f"{where}: {n}/{expected.size} elements differ"
    return None


def test_outputs_match_onnxruntime(case: Case):
    got = run_onyx(case.path, case.feeds)
    names = [o.name for o in case.ort_outputs]
    assert len(got) == len(case.expected), f"{case.key}: {len(got)} outputs, onnxruntime gives {len(names)}"
    status = [(n, compare(g, e, f"{case.key} output {n!r}")) for n, g, e in zip(names, got, case.expected)]
    errors = [err for _, err in status if err]
    summary = ", ".join(f"{n}: {'ok' if err is None else 'MISMATCH'}" for n, err in status)
    assert not errors, f"{summary}\n" + "\n".join(errors)


def _type_and_rank(arg) -> tuple[str, int | None]:
    t = arg.type
    return t, (len(arg.shape) if t.startswith("tensor(") and arg.shape is not None else None)


@pytest.mark.skipif(not has_session(), reason="onyx.InferenceSession does not exist yet")
def test_node_args_match_onnxruntime(case: Case):
    sess = onyx_session(case.path)
    for kind, ours, theirs in (
        ("input", sess.get_inputs(), case.ort_inputs),
        ("output", sess.get_outputs(), case.ort_outputs),
    ):
        assert [a.name for a in ours] == [a.name for a in theirs], f"{case.key}: {kind} names"
        for a, b in zip(ours, theirs):
            assert _type_and_rank(a) == _type_and_rank(b), f"{case.key}: {kind} {b.name!r} type/rank"


def test_shipped_digits_accuracy():
    path, feeds = shipped_digits()
    y = np.load(str(importlib.resources.files("onyx") / "data" / "digits_samples.npz"))["y"]
    assert path.stat().st_size + 20_000 < 200_000
    label, proba = run_onyx(path, feeds)
    assert label.dtype == np.int64 and proba.shape == (64, 10)
    assert float((label == y).mean()) > 0.9


def test_cache_is_reused(tmp_path):
    path, feeds = exporters.build_sklearn("linear_regression", tmp_path)
    stamp = path.stat().st_mtime_ns
    path2, feeds2 = exporters.build_sklearn("linear_regression", tmp_path)
    assert path2 == path and path.stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(feeds["X"], feeds2["X"])


def test_cache_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv(exporters.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert exporters.cache_dir() == tmp_path / "elsewhere"
    assert (tmp_path / "elsewhere").is_dir()


def test_external_data_model_layout():
    import onnx

    path, _ = exporters.external_data_model()
    model = onnx.load(str(path), load_external_data=False)
    external = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external, "no initializer was saved as external data"
    assert (path.parent / (path.name + ".data")).is_file()
    assert os.path.getsize(path) < 16_000
