"""onyx.config: the environment switches, read in one place when a session is created."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx import config
from onyx.ir.builder import GraphBuilder
from onyx.kernels import _loader


@pytest.mark.parametrize("value,on", [("1", True), ("yes", True), ("0", False), ("", False), (None, False)])
def test_no_perf_values(value, on, monkeypatch):
    if value is None:
        monkeypatch.delenv("ONYX_NO_PERF", raising=False)
    else:
        monkeypatch.setenv("ONYX_NO_PERF", value)
    assert config.reload().no_perf is on
    if on:
        assert _loader.compiled("_norm") is None


def test_switches_are_read_when_a_session_is_created(monkeypatch):
    monkeypatch.delenv("ONYX_NO_PERF", raising=False)
    assert not config.reload().no_perf
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    assert not config.switches().no_perf  # not read again until asked
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [2, 3])
    b.output(b.Relu(x), "y", np.float32, [2, 3])
    onyx.InferenceSession(b.model())
    assert config.switches().no_perf


def test_blas_and_mallopt_switches(monkeypatch):
    monkeypatch.setenv("ONYX_BLAS", " OpenBLAS ")
    monkeypatch.setenv("ONYX_MALLOPT", "1")
    s = config.reload()
    assert s.blas == "openblas" and s.mallopt
    monkeypatch.delenv("ONYX_MALLOPT")
    assert not config.reload().mallopt
