"""``onyx batch MODEL INPUT OUTPUT``: score a table in-process or on Ray (see onyx.ray.batch_cli)."""

from __future__ import annotations

import argparse

HELP = "score a table of rows in-process or on a Ray cluster"
EXAMPLE = "onyx batch model.onnx rows.parquet scored.parquet --local"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from onyx.ray.batch_cli import add_arguments as batch_arguments  # numpy only; Ray is imported on use

    batch_arguments(p)


def main(args: argparse.Namespace) -> int:
    from onyx.ray.batch_cli import batch

    return batch(args)
