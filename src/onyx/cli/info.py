"""``onyx info [MODEL]``: inputs, outputs, opsets, op histogram, parameters; and the kernels here."""

from __future__ import annotations

import argparse
import collections
import math
import sys
from typing import Any

from onyx.cli._common import human_bytes
from onyx.errors import OnyxError

HELP = "summarize a model; without one, what runs the kernels here"
EXAMPLE = "onyx info model.onnx"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?")


def main(args: argparse.Namespace) -> int:
    if args.model:
        info(args.model)
    from onyx import kernels

    for line in kernels.describe():
        print(line)
    return 0


def _fmt_type(v) -> str:
    t = v.type
    if t is None:
        return "?"
    s = t.ort_name()
    shape = getattr(t, "shape", None)
    if shape is not None:
        s += "[" + ", ".join("?" if d is None else str(d) for d in shape.dims) + "]"
    return s


def info(path: str, out=None) -> dict[str, Any]:
    """Print (and return) a summary of a model."""
    out = out or sys.stdout
    from onyx.ir.tensor import SparseTensor, Tensor
    from onyx.model_io import load

    model = load(path, load_external_data=False)
    g = model.graph
    inits = set(g.initializers)
    hist: collections.Counter = collections.Counter()
    for n in g.walk():
        hist[(f"{n.domain}::" if n.domain else "") + n.op_type] += 1
    params = 0
    nbytes = 0
    external: dict[str, int] = collections.Counter()
    for v in g.initializers.values():
        c = v.const
        if isinstance(c, SparseTensor):
            c = c.values
        if isinstance(c, Tensor):
            params += math.prod(c.dims)
            if c.external is not None:
                external[c.external.location] += c.external.length or 0
                nbytes += c.external.length or 0
            else:
                try:
                    nbytes += c.nbytes
                except OnyxError:
                    pass
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"model: {path}")
    producer = f"{model.producer_name or '?'} {model.producer_version or ''}".rstrip()
    p(f"  ir_version {model.ir_version}, producer {producer}")
    p("  opsets: " + ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in model.opsets.items()))
    p("inputs:")
    for v in g.inputs:
        if v.name not in inits:
            p(f"  {v.name}: {_fmt_type(v)}")
    p("outputs:")
    for v in g.outputs:
        p(f"  {v.name}: {_fmt_type(v)}")
    p(f"nodes: {sum(hist.values())} ({len(g.nodes)} in the main graph)")
    for op, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
        p(f"  {op:<32} {n}")
    if model.functions:
        p("functions: " + ", ".join(f"{f.domain}::{f.name}" for f in model.functions))
    p(f"parameters: {params:,} in {len(inits)} initializers, {human_bytes(nbytes)}")
    if external:
        p("external data:")
        for loc, n in external.items():
            p(f"  {loc}: {human_bytes(n)}")
    return {"ops": dict(hist), "parameters": params, "bytes": nbytes, "external": dict(external)}


