"""The ``onyx`` command: ``info``, ``run``, ``check``, ``ops``.

onyx run                     run the shipped digits model on its bundled samples
onyx run MODEL --input x=a.npy [--output-dir DIR]
onyx info [MODEL]            inputs, outputs, opsets, op histogram, parameters, external data;
                             and which kernels (compiled or numpy), BLAS and threads run here
onyx check MODEL             structural validation
onyx serve MODEL_REPOSITORY  serve a Triton-style repository over REST and gRPC (the serve extra)
onyx batch MODEL INPUT OUTPUT  score a Parquet/CSV/.npz table in-process or on Ray (docs/batch.md)
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import time
from importlib import resources
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument, OnyxError


def shipped_model() -> tuple[str, str]:
    """Paths of the model and samples shipped inside the package."""
    base = resources.files("onyx") / "data"
    return str(base / "digits.onnx"), str(base / "digits_samples.npz")


def _fmt_type(v) -> str:
    t = v.type
    if t is None:
        return "?"
    s = t.ort_name()
    shape = getattr(t, "shape", None)
    if shape is not None:
        s += "[" + ", ".join("?" if d is None else str(d) for d in shape.dims) + "]"
    return s


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GB"


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
    p(f"parameters: {params:,} in {len(inits)} initializers, {_human(nbytes)}")
    if external:
        p("external data:")
        for loc, n in external.items():
            p(f"  {loc}: {_human(n)}")
    return {"ops": dict(hist), "parameters": params, "bytes": nbytes, "external": dict(external)}


def _parse_inputs(items: list[str]) -> dict[str, np.ndarray]:
    feeds = {}
    for item in items:
        if "=" not in item:
            raise InvalidArgument(f"--input expects NAME=FILE.npy, got {item!r}")
        name, path = item.split("=", 1)
        if not os.path.exists(path):
            from onyx.errors import NoSuchFile

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


def run(args: argparse.Namespace, out=None) -> int:
    """Run a model on given inputs, or the shipped model on its samples."""
    out = out or sys.stdout
    from onyx.runtime.session import InferenceSession

    p = lambda *a: print(*a, file=out)  # noqa: E731
    if args.model is None:
        model_path, samples_path = shipped_model()
        t0 = time.perf_counter()
        sess = InferenceSession(model_path)
        t_create = time.perf_counter() - t0
        data = np.load(samples_path)
        x, y = data["x"], data["y"]
        name = sess.get_inputs()[0].name
        label, _ = sess.run(None, {name: x})
        lat = []
        for i in range(len(x)):
            t0 = time.perf_counter()
            sess.run(None, {name: x[i : i + 1]})
            lat.append(time.perf_counter() - t0)
        acc = float(np.mean(np.asarray(label).reshape(-1) == y))
        p(f"model: {model_path} (a classifier of 8x8 digit images, shipped with onyx)")
        p(f"predictions: {' '.join(str(int(v)) for v in np.asarray(label).reshape(-1)[:32])} ...")
        p(f"truth:       {' '.join(str(int(v)) for v in y[:32])} ...")
        p(f"accuracy: {acc:.3f} on {len(x)} samples")
        p(f"latency: median {np.median(lat) * 1e3:.3f} ms per sample (batch 1)")
        p(f"session created in {t_create * 1e3:.1f} ms")
        return 0
    sess = InferenceSession(args.model)
    feeds = _parse_inputs(args.input or [])
    if not feeds and sess.get_inputs():
        raise InvalidArgument(
            "the model needs inputs: "
            + ", ".join(f"--input {a.name}=FILE.npy ({a.type} {a.shape})" for a in sess.get_inputs())
        )
    t0 = time.perf_counter()
    outs = sess.run(None, feeds)
    dt = time.perf_counter() - t0
    names = [o.name for o in sess.get_outputs()]
    dests = {}
    if args.output_dir:
        dests = {name: os.path.join(args.output_dir, f"{name.replace('/', '_')}.npy") for name in names}
        clash = [d for d in dests.values() if os.path.exists(d)]
        if clash and not args.force:  # checked before anything is written
            raise InvalidArgument(f"{', '.join(clash)} exist(s): pass --force to overwrite")
        os.makedirs(args.output_dir, exist_ok=True)
    for name, value in zip(names, outs):
        if args.output_dir:
            dest = dests[name]
            if isinstance(value, np.ndarray):
                np.save(dest, value, allow_pickle=False)
                p(f"{name}: {value.dtype}{list(value.shape)} -> {dest}")
            else:
                p(f"{name}: {type(value).__name__} (not saved: not a tensor)")
        else:
            with np.printoptions(threshold=50, edgeitems=3, precision=5):
                shown = (
                    f"{value.dtype}{list(value.shape)}\n{value}"
                    if isinstance(value, np.ndarray)
                    else repr(value)
                )
            p(f"{name}: {shown}")
    p(f"ran in {dt * 1e3:.2f} ms")
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


def _serve(args: argparse.Namespace) -> int:
    """Run `onyx serve` (imports the server lazily: it needs the `serve` extra)."""
    import logging

    try:
        from onyx.serve import serve
    except ImportError as e:
        raise InvalidArgument(f"onyx serve needs the serve extra (pip install 'onyx[serve]'): {e}") from None
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return serve(
        args.repository,
        host=args.host,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        poll=args.poll,
        max_body_bytes=args.max_body_bytes,
        threads=args.threads,
        default_max_batch_size=args.default_max_batch_size,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="onyx", description="Read, check and run ONNX models on numpy.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="summarize a model; without one, what runs the kernels here")
    p_info.add_argument("model", nargs="?")
    p_run = sub.add_parser("run", help="run a model (default: the shipped digits classifier)")
    p_run.add_argument("model", nargs="?")
    p_run.add_argument("--input", "-i", action="append", metavar="NAME=FILE.npy")
    p_run.add_argument("--output-dir", "-o")
    p_run.add_argument("--force", action="store_true", help="overwrite existing .npy files in --output-dir")
    p_check = sub.add_parser("check", help="validate a model")
    p_check.add_argument("model")
    sub.add_parser("ops", help="list the operators onyx implements")
    p_serve = sub.add_parser("serve", help="serve a Triton-style model repository (Open Inference Protocol)")
    p_serve.add_argument("repository", metavar="MODEL_REPOSITORY")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--http-port", type=int, default=8000, help="0: any free port; -1: no REST")
    p_serve.add_argument("--grpc-port", type=int, default=8001, help="0: any free port; -1: no gRPC")
    p_serve.add_argument("--metrics-port", type=int, default=8002, help="/metrics listener; -1: none")
    p_serve.add_argument("--poll", type=float, metavar="SECONDS", help="pick up repository changes")
    p_serve.add_argument("--max-body-bytes", type=int, default=64 << 20, help="request size limit")
    p_serve.add_argument("--threads", type=int, default=0, help="intra-op threads per model instance")
    p_serve.add_argument("--default-max-batch-size", type=int, default=4, help="for models without config")
    p_serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p_batch = sub.add_parser("batch", help="score a table of rows in-process or on a Ray cluster")
    from onyx.ray.batch_cli import add_arguments as batch_arguments  # numpy only; Ray is imported on use

    batch_arguments(p_batch)
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            if args.model:
                info(args.model)
            from onyx import kernels

            for line in kernels.describe():
                print(line)
        elif args.command == "run":
            return run(args)
        elif args.command == "check":
            from onyx.checker import check
            from onyx.model_io import load

            check(load(args.model, load_external_data=False))
            print(f"{args.model}: OK")
        elif args.command == "ops":
            ops()
        elif args.command == "serve":
            return _serve(args)
        elif args.command == "batch":
            from onyx.ray.batch_cli import batch

            return batch(args)
        return 0
    except OnyxError as e:
        print(f"onyx: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
