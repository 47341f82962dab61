"""Model corpora shared by the format-layer tests: the ONNX node suite and the models the onnx wheel ships.

Everything is built on demand and cached for the test process; nothing is downloaded.
"""

from __future__ import annotations

import functools
import glob
import os
import warnings

import onnx

ONNX_DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
SHIPPED_FOLDERS = ("light", "simple", "pytorch-converted", "pytorch-operator")


@functools.lru_cache(maxsize=1)
def node_cases() -> tuple[tuple[str, bytes], ...]:
    """(name, serialized ModelProto) for every case of the official node suite."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generators warn about overflowing casts
        cases = collect_testcases()
    return tuple((c.name, c.model.SerializeToString()) for c in cases)


def shipped_models() -> list[str]:
    """Every .onnx file under the wheel's light/simple/pytorch-converted/pytorch-operator folders."""
    out: list[str] = []
    for folder in SHIPPED_FOLDERS:
        out.extend(sorted(glob.glob(os.path.join(ONNX_DATA, folder, "**", "*.onnx"), recursive=True)))
    return out


def shipped_tensors() -> list[str]:
    """Every .pb of the shipped model tests' test_data_set_* folders."""
    out: list[str] = []
    for folder in SHIPPED_FOLDERS:
        pattern = os.path.join(ONNX_DATA, folder, "**", "test_data_set_*", "*.pb")
        out.extend(sorted(glob.glob(pattern, recursive=True)))
    return out


def short(path: str) -> str:
    """A path relative to the wheel's data folder, for test ids."""
    return os.path.relpath(path, ONNX_DATA)
