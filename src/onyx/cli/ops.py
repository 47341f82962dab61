"""``onyx ops``: the operator table."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

HELP = "list the operators onyx implements"
EXAMPLE = "onyx ops | grep Conv"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    ops()
    return 0


def ops(out=None) -> None:
    """Print the operator table: domain::op, kernel version ranges, element types."""
    import json

    from onyx.ops.registry import registered

    out = out or sys.stdout
    types_file = resources.files("onyx") / "data" / "op_types.json"
    types = json.loads(types_file.read_text()) if types_file.is_file() else {}
    for (domain, op), ks in sorted(registered().items()):
        key = f"{domain or 'ai.onnx'}::{op}"
        ranges = ", ".join(k.version_range for k in ks)
        print(f"{key:48s} {ranges:40s} {types.get(key, '')}", file=out)


