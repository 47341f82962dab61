"""Sessions let the kernel drop the model file's pages after creation (release_mapped_pages): weights
used zero-copy from the mapping still read correctly, and the pages no longer count in RSS until a
run touches them again."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.model_io import load, release_mapped_pages, save


def _rss_file_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssFile:"):
                return int(line.split()[1])
    pytest.skip("no RssFile in /proc/self/status")


def _big_model(path, rng):
    """A MatMul with 32 MiB of weights whose raw_data lies 4-byte aligned in the file (so that it is
    used zero-copy from the mapping): the producer name's length shifts it until it does."""
    w = rng.standard_normal((2048, 4096)).astype(np.float32)
    for pad in range(4):
        b = GraphBuilder(opset=17)
        x = b.input("x", np.float32, [1, 2048])
        y = b.MatMul(x, b.const(w, name="w"))
        b.output(y, "y", np.float32, [1, 4096])
        model = b.model()
        model.producer_name = "p" * (pad + 1)
        save(model, path)
        raw = next(iter(load(str(path)).graph.initializers.values())).const.raw
        if np.frombuffer(raw, dtype=np.uint8).ctypes.data % 4 == 0:
            return w
    raise AssertionError("no name length aligned the weight")


def test_released_weights_still_compute(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "m.onnx"
    w = _big_model(path, rng)
    x = rng.standard_normal((1, 2048)).astype(np.float32)
    s = onyx.InferenceSession(str(path))
    want = x @ w
    for _ in range(2):
        np.testing.assert_allclose(s.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-3)
        release_mapped_pages(s.model)  # again, after a run: still harmless
    np.testing.assert_allclose(s.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-3)


def test_loaded_pages_are_dropped(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "m.onnx"
    _big_model(path, rng)
    m = load(str(path))
    before = _rss_file_kib()
    total = sum(float(np.asarray(v.const.numpy()).sum()) for v in m.graph.initializers.values())
    touched = _rss_file_kib()
    release_mapped_pages(m)
    after = _rss_file_kib()
    assert np.isfinite(total)
    assert touched - before > 16 << 10  # the weight's pages were mapped in ...
    assert after < touched - (16 << 10)  # ... and are gone again
