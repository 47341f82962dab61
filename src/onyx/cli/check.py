"""``onyx check MODEL``: structural validation (onnx's checker rules)."""

from __future__ import annotations

import argparse

HELP = "validate a model"
EXAMPLE = "onyx check model.onnx"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model")


def main(args: argparse.Namespace) -> int:
    from onyx.checker import check
    from onyx.model_io import load

    check(load(args.model, load_external_data=False))
    print(f"{args.model}: OK")
    return 0
