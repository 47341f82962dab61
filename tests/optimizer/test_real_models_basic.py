"""The basic level over real exported models, against onnxruntime.

Every model of tests/models/exporters.py is optimized with ``onyx.optimize(model, 1)``, saved, loaded
again and run without further optimization; outputs must match onnxruntime within rtol 1e-3 and
atol 1e-4 * max|expected|. CNNs exported without torch's own constant folding keep their
BatchNormalization nodes: after the basic level none may remain.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import onyx
from tests.models import exporters
from tests.optimizer._helpers import ops, run

RTOL, ATOL_FACTOR = 1e-3, 1e-4
MODELS = exporters.all_models()


def _compare(got, expected, where: str) -> None:
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected)):
            _compare(g, e, f"{where}[{i}]")
        return
    if isinstance(expected, dict):
        assert isinstance(got, dict) and set(got) == set(expected), where
        for k in expected:
            _compare(got[k], expected[k], f"{where}[{k!r}]")
        return
    e, g = np.asarray(expected), np.asarray(got)
    assert g.shape == e.shape, f"{where}: shape {g.shape} != {e.shape}"
    if e.dtype.kind == "f":
        atol = ATOL_FACTOR * float(np.abs(e).max()) if e.size else 0.0
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=max(atol, 1e-7), err_msg=where)
    else:
        np.testing.assert_array_equal(g, e, err_msg=where)


def _oracle(path: Path, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def _optimized(path: Path) -> onyx.Model:
    m = onyx.load(str(path))
    onyx.optimize(m, int(onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC))
    return m


@pytest.mark.parametrize("key", sorted(MODELS))
def test_basic_level_matches_onnxruntime(key: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path, feeds = MODELS[key]()
    except exporters.ExportFailed as e:
        pytest.skip(str(e))
    expected = _oracle(path, feeds)
    m = _optimized(path)
    got = run(onyx.serialize(m), feeds)
    for i, (g, e) in enumerate(zip(got, expected)):
        _compare(g, e, f"{key} output {i}")
    assert "Identity" not in ops(m) or key.startswith(("lstm", "svc", "svr", "random_forest"))


def _export_with_batchnorm(name: str, make) -> tuple[Path, dict]:
    """A torchscript export without torch's constant folding: BatchNormalization nodes stay."""
    torch = pytest.importorskip("torch")
    path = exporters.cache_dir() / f"{name}-torchscript_nofold.onnx"
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    if not path.exists():
        torch.manual_seed(0)
        module = make().eval()
        tmp = path.with_name(f".{path.stem}-{os.getpid()}.onnx")
        sink = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                (torch.from_numpy(x),),
                str(tmp),
                dynamo=False,
                opset_version=17,
                do_constant_folding=False,
                input_names=["x"],
                output_names=["y"],
                dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
            )
        os.replace(tmp, path)
    return path, {"x": x}


@pytest.mark.parametrize("name", ["resnet_small", "mobilenet_small"])
def test_batchnorm_is_folded_into_convolutions(name: str) -> None:
    make = exporters.make_resnet if name == "resnet_small" else exporters.make_mobilenet
    path, feeds = _export_with_batchnorm(name, make)
    assert ops(onyx.load(str(path)))["BatchNormalization"] > 0
    expected = _oracle(path, feeds)
    m = _optimized(path)
    c = ops(m)
    assert c["BatchNormalization"] == 0
    assert c["Gemm"] == 1
    got = run(onyx.serialize(m), feeds)
    for i, (g, e) in enumerate(zip(got, expected)):
        _compare(g, e, f"{name} output {i}")
