"""``onyx optimize MODEL OUTPUT --level L``: save the graph the session would run, and what each pass did."""

from __future__ import annotations

import argparse
import os
import sys

from onyx.errors import InvalidArgument, NoSuchFile

HELP = "optimize a model at a level and save it, with node counts before, after and per pass"
EXAMPLE = "onyx optimize model.onnx model.opt.onnx --level extended"

LEVELS = {"disabled": 0, "basic": 1, "extended": 2, "all": 99}


def parse_level(name: str) -> int:
    """A level name (onnxruntime's: disabled, basic, extended, all) as its GraphOptimizationLevel."""
    try:
        return LEVELS[str(name).lower()]
    except KeyError:
        raise InvalidArgument(f"unknown level {name!r}: use one of {', '.join(LEVELS)}") from None


def check_destination(path: str, source: str | None = None) -> None:
    """Refuse, before any work, a destination that cannot be written: a missing or read-only folder, a
    folder in place of a file, or the input file itself (view, profile and optimize share this)."""
    if source is not None and os.path.abspath(path) == os.path.abspath(source):
        raise InvalidArgument(f"the output {path!r} is the input model: write to another file")
    same = source is not None and os.path.exists(path) and os.path.exists(source)
    if same and os.path.samefile(path, source):
        raise InvalidArgument(f"the output {path!r} is the input model (a link to it): write to another file")
    if os.path.isdir(path):
        raise InvalidArgument(f"cannot write {path!r}: it is a folder, give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise NoSuchFile(f"cannot write {path!r}: folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise InvalidArgument(f"cannot write {path!r}: folder {folder!r} is not writable")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model")
    p.add_argument("output")
    p.add_argument("--level", "-l", default="all", help=f"{'|'.join(LEVELS)} (default all)")


def main(args: argparse.Namespace, out=None) -> int:
    from onyx.model_io import load, save
    from onyx.optimizer import optimize

    out = out or sys.stdout
    level = parse_level(args.level)
    if not os.path.exists(args.model):
        raise NoSuchFile(f"model {args.model!r} does not exist")
    check_destination(args.output, args.model)
    model = load(args.model)
    before = sum(1 for _ in model.graph.walk())
    passes: dict[str, list[int]] = {}  # name -> [times it changed the model, nodes it removed]

    def report(name: str, n0: int, n1: int, changed: bool) -> None:
        row = passes.setdefault(name, [0, 0])
        row[0] += int(changed)
        row[1] += n0 - n1

    optimize(model, level, report=report)
    after = sum(1 for _ in model.graph.walk())
    save(model, args.output)  # written to a temporary name, then renamed: never half a file
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"level {args.level} ({level}): {before} nodes -> {after} nodes ({before - after} removed)")
    changed = {name: row for name, row in passes.items() if row[0]}
    if changed:
        p(f"{'pass':<36} {'changed':>8} {'nodes removed':>14}")
        for name, (times, removed) in changed.items():
            p(f"{name:<36} {times:>8} {removed:>14}")
    if len(changed) < len(passes):
        p(f"({len(passes) - len(changed)} other passes ran and changed nothing)")
    p(f"saved: {args.output}")
    return 0
