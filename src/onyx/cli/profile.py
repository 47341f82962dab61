"""``onyx profile MODEL``: where the time goes, per op type and per node, and the Chrome trace."""

from __future__ import annotations

import argparse
import sys

from onyx.cli._common import parse_inputs, progress
from onyx.cli.optimize import check_destination, parse_level

HELP = "time a model per op type and per node; write the Chrome trace (chrome://tracing, Perfetto)"
EXAMPLE = "onyx profile model.onnx --runs 20 --dim batch=8 -o trace.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model")
    p.add_argument("--runs", "-n", type=int, default=10, help="runs to time (default 10)")
    p.add_argument(
        "--warmup", "-w", type=int, default=1, help="untimed runs first, not in the trace (default 1)"
    )
    p.add_argument("--input", "-i", action="append", metavar="NAME=FILE.npy", help="an input (else random)")
    p.add_argument(
        "--dim", action="append", metavar="NAME=V", help="a symbolic dim of random inputs (else 1)"
    )
    p.add_argument("--output", "-o", metavar="TRACE.json", help="write the trace here")
    p.add_argument("--top", type=int, default=20, help="how many of the slowest nodes to list (default 20)")
    p.add_argument(
        "--level",
        default="all",
        help="optimization level of the profiled session: disabled|basic|extended|all (default all); "
        "'disabled' keeps the file's node names, so the trace lines up with `onyx view`",
    )


def main(args: argparse.Namespace, out=None) -> int:
    from onyx.debug.profile import format_report, node_times, parse_dims, profile_model

    out = out or sys.stdout
    level = parse_level(args.level)
    if args.output:
        check_destination(args.output, args.model)
    feeds = parse_inputs(args.input or [])
    dims = parse_dims(args.dim or [])
    events, path = profile_model(
        args.model,
        feeds,
        runs=args.runs,
        output=args.output,
        level=level,
        dims=dims,
        warmup=args.warmup,
        each=lambda it: progress(it, args.runs, "profiling"),
    )
    print(format_report(node_times(events), args.runs, args.top), file=out)
    if path:
        print(f"trace: {path} (open in chrome://tracing or https://ui.perfetto.dev)", file=out)
    return 0
