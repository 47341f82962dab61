"""Run a model file with onyx: through ``onyx.InferenceSession`` once it exists, else the test harness.

Set ONYX_MODELS_RUNNER=harness to use the harness even when the session exists. The harness
(tests/conformance/harness.py) interprets the onnx ModelProto with onyx's kernels,
so real models can be checked operator by operator before onyx's own loader and executor land.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import onyx

RUNNER_ENV = "ONYX_MODELS_RUNNER"  # "harness" forces the harness even once InferenceSession exists


def has_session() -> bool:
    return hasattr(onyx, "InferenceSession")


def use_session() -> bool:
    return has_session() and os.environ.get(RUNNER_ENV, "") != "harness"


def onyx_session(path: str | os.PathLike):
    return onyx.InferenceSession(str(path))


def run_onyx(path: str | os.PathLike, feeds: dict[str, np.ndarray]) -> list[Any]:
    """All outputs of the model at ``path`` for ``feeds``, in graph output order."""
    if use_session():
        return list(onyx_session(path).run(None, feeds))
    import onnx

    from tests.conformance.harness import run_model

    model = onnx.load(str(path))
    return run_model(model, [feeds[i.name] for i in model.graph.input if i.name in feeds])


def runner_name() -> str:
    return "onyx.InferenceSession" if use_session() else "tests.conformance.harness.run_model"
