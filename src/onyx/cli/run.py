"""``onyx run [MODEL --input NAME=FILE.npy ...]``: run a model, or the shipped digits model on its samples."""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from onyx.cli._common import parse_inputs, shipped_model
from onyx.errors import InvalidArgument

HELP = "run a model (default: the shipped digits classifier)"
EXAMPLE = "onyx run model.onnx --input x=x.npy --output-dir out/"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?")
    p.add_argument("--input", "-i", action="append", metavar="NAME=FILE.npy")
    p.add_argument("--output-dir", "-o")
    p.add_argument("--force", action="store_true", help="overwrite existing .npy files in --output-dir")


def main(args: argparse.Namespace, out=None) -> int:
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
    feeds = parse_inputs(args.input or [])
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


