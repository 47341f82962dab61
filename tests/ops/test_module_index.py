"""The registry's index of operator modules (listed by file name, imported on first use)."""

from __future__ import annotations

import importlib
import os

import pytest

from onyx.ops import registry


@pytest.fixture
def fresh_index(monkeypatch):
    monkeypatch.setattr(registry, "_index", None)
    yield
    registry._index = None


def test_every_listed_module_imports_and_names_its_ops(fresh_index):
    index = registry._module_index()
    assert index["matmul"] == ["onyx.ops.linalg.mat_mul"]
    assert "conv" in index and "lstm" in index
    for names in index.values():
        for name in names:
            assert not name.rsplit(".", 1)[-1].startswith("_")
            importlib.import_module(name)


def test_the_pkgutil_fallback_lists_the_same_modules(fresh_index, monkeypatch):
    scanned = registry._module_index()
    registry._index = None

    def refuse(path):
        raise NotADirectoryError(path)

    monkeypatch.setattr(os, "scandir", refuse)
    assert registry._module_index() == scanned
