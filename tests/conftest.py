"""Session-wide test settings."""

import pytest

from onyx import config


@pytest.fixture(autouse=True)
def _fresh_switches():
    """Each test starts and ends with the environment's switches as they are (a test's monkeypatch of
    ONYX_NO_PERF is undone after it, and the switches are read again)."""
    config.reload()
    yield
    config.reload()


@pytest.fixture
def no_perf(monkeypatch):
    """ONYX_NO_PERF=1 for the test: every kernel on its numpy path."""
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    config.reload()
    yield
    monkeypatch.delenv("ONYX_NO_PERF")
    config.reload()
