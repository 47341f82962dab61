"""Small example models shipped with onyx (onnxruntime.datasets' names): ``get_example("mul_1.onnx")``.

mul_1.onnx, sigmoid.onnx and logreg_iris.onnx are written by scripts/make_datasets.py.
"""

from __future__ import annotations

import os

from onyx.errors import NoSuchFile

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_example(name: str) -> str:
    """The absolute path of an example model shipped with onyx."""
    full = os.path.join(_HERE, os.path.basename(str(name)))
    if os.path.basename(str(name)) != str(name) or not name.endswith(".onnx") or not os.path.exists(full):
        available = sorted(f for f in os.listdir(_HERE) if f.endswith(".onnx"))
        raise NoSuchFile(f"Unable to find example '{name}': onyx ships {available}")
    return full


__all__ = ["get_example"]
