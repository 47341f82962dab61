"""``onyx bench MODEL``: latency percentiles and throughput, optionally against onnxruntime."""

from __future__ import annotations

import argparse
import sys

from onyx.cli._common import parse_inputs, progress

HELP = "latency (p50/p90/p99) and throughput of a model, optionally against onnxruntime"
EXAMPLE = "onyx bench model.onnx --batch 8 --runs 50 --against onnxruntime"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model")
    p.add_argument("--batch", "-b", type=int, help="first dim of random inputs when symbolic (default 1)")
    p.add_argument("--threads", "-t", type=int, default=0, help="intra-op threads (default 0: the engine's)")
    p.add_argument("--runs", "-n", type=int, default=20, help="timed runs (default 20)")
    p.add_argument("--warmup", "-w", type=int, default=3, help="untimed runs first (default 3)")
    p.add_argument("--against", choices=["onnxruntime"], help="time this engine too, interleaved")
    p.add_argument("--input", "-i", action="append", metavar="NAME=FILE.npy", help="an input (else random)")
    p.add_argument("--dim", action="append", metavar="NAME=V", help="a symbolic dim of random inputs")


def main(args: argparse.Namespace, out=None) -> int:
    from onyx.debug.bench import bench, format_result
    from onyx.debug.profile import parse_dims

    out = out or sys.stdout
    result = bench(
        args.model,
        parse_inputs(args.input or []),
        batch=args.batch,
        dims=parse_dims(args.dim or []),
        threads=args.threads,
        runs=args.runs,
        warmup=args.warmup,
        against=args.against,
        each=lambda it: progress(it, args.runs, "benchmarking"),
    )
    print(format_result(result), file=out)
    return 0
