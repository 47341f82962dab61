"""What several subcommands share: the shipped model, ``--input NAME=FILE`` feeds, terminal progress."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import TypeVar

import numpy as np

from onyx.errors import InvalidArgument, NoSuchFile

T = TypeVar("T")


def shipped_model() -> tuple[str, str]:
    """Paths of the model and samples shipped inside the package."""
    base = resources.files("onyx") / "data"
    return str(base / "digits.onnx"), str(base / "digits_samples.npz")


def parse_inputs(items: list[str]) -> dict[str, np.ndarray]:
    """``NAME=FILE.npy`` (or a TensorProto ``.pb``) items as a feed dict."""
    feeds = {}
    for item in items:
        if "=" not in item:
            raise InvalidArgument(f"--input expects NAME=FILE.npy, got {item!r}")
        name, path = item.split("=", 1)
        if not os.path.exists(path):
            raise NoSuchFile(f"input file {path!r} does not exist")
        if path.endswith(".pb"):
            from onyx.model_io import load_tensor

            feeds[name] = load_tensor(path)
        else:
            try:
                feeds[name] = np.load(path, allow_pickle=False)
            except (ValueError, OSError) as e:
                raise InvalidArgument(f"cannot read {path!r} as a .npy file: {e}") from None
    return feeds


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GB"


def progress(items: Iterable[T], total: int | None = None, label: str = "", stream=None) -> Iterator[T]:
    """Yield ``items``, drawing a one-line bar on stderr only when stderr is a terminal.

    Pipes, files and CI logs get nothing, so output stays machine-readable.
    """
    stream = stream or sys.stderr
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield from items
        return
    width = 30
    done = 0
    for item in items:
        yield item
        done += 1
        if total:
            filled = int(width * done / total)
            stream.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        else:
            stream.write(f"\r{label} {done}")
        stream.flush()
    stream.write("\n")
    stream.flush()
