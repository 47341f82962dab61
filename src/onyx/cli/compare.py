"""``onyx compare A [B]``: compare two models, or a model on two runtimes, naming the first divergence.

Exit status: 0 when every value agrees, 1 on divergence, 2 on error, so that it can gate CI.
"""

from __future__ import annotations

import argparse
import os
import sys

from onyx.cli._common import parse_inputs
from onyx.errors import InvalidArgument, NoSuchFile

HELP = "compare two models, or a model on onyx and onnxruntime, and name the first node that diverges"
EXAMPLE = "onyx compare model.onnx model.quant.onnx --input x=x.npy --rtol 1e-2 --json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_a", metavar="A", help="the reference model")
    p.add_argument("model_b", metavar="B", nargs="?", help="the model to check (omit to compare runtimes)")
    p.add_argument("--input", "-i", action="append", metavar="NAME=FILE.npy", help="an input (repeatable)")
    p.add_argument(
        "--against",
        choices=["onnxruntime", "reference", "unoptimized", "onyx"],
        help="with one model: the peer onyx is checked against (default onnxruntime); with two: the "
        "runtime both run on (default onyx)",
    )
    p.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance (default 1e-5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument(
        "--dim", action="append", metavar="NAME=VALUE", help="size of a symbolic input dimension (default 1)"
    )
    p.add_argument("--top", type=int, default=10, help="values shown in the table (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object (first_divergence, values)")


def main(args: argparse.Namespace, out=None) -> int:
    """Compare, print the verdict (or JSON) and return 0 (agreement) or 1 (divergence)."""
    from onyx.debug import compare

    out = out or sys.stdout
    for path in (args.model_a, args.model_b):
        if path is not None and not os.path.exists(path):
            raise NoSuchFile(f"model file {path!r} does not exist")
    if args.model_b is None and args.against == "onyx":
        raise InvalidArgument("--against onyx compares two models: give a second model B")
    if args.model_b is not None and args.against in ("unoptimized",):
        raise InvalidArgument("--against unoptimized compares one model: omit B")
    feeds = parse_inputs(args.input or []) or None
    result = compare(
        args.model_a,
        args.model_b,
        feeds,
        against=args.against,
        rtol=args.rtol,
        atol=args.atol,
        seed=args.seed,
        dims=parse_dims(args.dim or []),
    )
    print(result.to_json() if args.json else result.summary(args.top), file=out)
    return 0 if result.agreed else 1


def parse_dims(items: list[str]) -> dict[str, int]:
    """``NAME=VALUE`` items as symbolic dimension sizes."""
    dims = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InvalidArgument(f"--dim expects NAME=VALUE, got {item!r}")
        try:
            size = int(value)
        except ValueError:
            raise InvalidArgument(f"--dim {name}: the size must be an integer, got {value!r}") from None
        if size < 0:
            raise InvalidArgument(f"--dim {name}: the size must not be negative, got {size}")
        dims[name] = size
    return dims
