"""Shared by the convolution and pooling model tests: a model run with the compiled kernels and with
numpy only (ONYX_NO_PERF, read when a session is created)."""

from __future__ import annotations

import onyx


def run_both(model, feeds, monkeypatch):
    """(outputs with the compiled loops, outputs with numpy only)."""
    monkeypatch.delenv("ONYX_NO_PERF", raising=False)
    fast = onyx.InferenceSession(model).run(None, feeds)
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain = onyx.InferenceSession(model).run(None, feeds)
    monkeypatch.delenv("ONYX_NO_PERF")
    return fast, plain
