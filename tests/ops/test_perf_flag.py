"""ONYX_NO_PERF: read on every call (kernels ask each run), so setting or clearing it takes effect at
once, and anything but "" or "0" turns the compiled loops off."""

from __future__ import annotations

import pytest

from onyx.ops import _perf


@pytest.mark.parametrize(
    "value,disabled", [("1", True), ("yes", True), ("0", False), ("", False), (None, False)]
)
def test_flag_values(value, disabled, monkeypatch):
    if value is None:
        monkeypatch.delenv("ONYX_NO_PERF", raising=False)
    else:
        monkeypatch.setenv("ONYX_NO_PERF", value)
    assert _perf.perf_disabled() is disabled
    if disabled:
        assert _perf.jit_module("onyx.ops.nn._jit") is None


def test_flag_follows_changes(monkeypatch):
    monkeypatch.delenv("ONYX_NO_PERF", raising=False)
    assert not _perf.perf_disabled()
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    assert _perf.perf_disabled()
    monkeypatch.setenv("ONYX_NO_PERF", "0")
    assert not _perf.perf_disabled()
    monkeypatch.delenv("ONYX_NO_PERF")
    assert not _perf.perf_disabled()
