"""Batch scoring throughput: one in-process session against onyx.ray.predict on 1, 2 and 4 actors.

    python bench/batch_ray.py [--rows 100000] [--batch-size 5000] [--cpus 2]

The model is a small MLP (x [N, 32] -> Gemm 64 -> Relu -> Gemm 64 -> Relu -> Gemm 10 -> Softmax, and the
ArgMax label). The data (x and an id column) is put in Ray's object store once, in blocks of a whole
number of batches, so that every Ray batch has the rows of one in-process chunk and the results can be
compared row for row. Figures are rows/s over the whole job (actor start-up included for Ray, session
creation excluded in-process), one run each. It also runs `onyx batch --ray ADDRESS` on the same rows
(a Parquet file) against the same cluster and checks its output too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.model_io import serialize


def mlp() -> bytes:
    rng = np.random.default_rng(0)
    b = GraphBuilder(opset=17)
    h = b.input("x", np.float32, ["N", 32])
    for i, width in enumerate((64, 64, 10)):
        fan_in = 32 if i == 0 else 64
        w = (rng.standard_normal((fan_in, width)) / np.sqrt(fan_in)).astype(np.float32)
        h = b.Gemm(h, b.const(w), b.const(np.zeros(width, np.float32)))
        if width != 10:
            h = b.Relu(h)
    prob = b.Softmax(h, axis=1)
    b.output(prob, "prob", np.float32, ["N", 10])
    b.output(b.ArgMax(prob, axis=1, keepdims=0), "label", np.int64, ["N"])
    return serialize(b.model())


def in_process(model: bytes, x: np.ndarray, batch: int, threads: int) -> tuple[float, list[np.ndarray]]:
    opts = onyx.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = onyx.InferenceSession(model, opts)
    t0 = time.perf_counter()
    parts = [sess.run(None, {"x": x[i : i + batch]}) for i in range(0, len(x), batch)]
    dt = time.perf_counter() - t0
    return dt, [np.concatenate([p[k] for p in parts]) for k in range(2)]


def compare(name: str, got: dict, ref: list[np.ndarray], ids: np.ndarray) -> str:
    order = np.argsort(got["id"])
    if not np.array_equal(got["id"][order], ids):
        return f"{name}: ROWS LOST OR DUPLICATED"
    prob, label = got["prob"][order], got["label"][order]
    same = np.array_equal(prob, ref[0]) and np.array_equal(label, ref[1])
    diff = float(np.abs(prob - ref[0]).max())
    if same:
        return f"{name}: bitwise equal"
    return f"{name}: max |diff| {diff:.1e}, labels equal: {np.array_equal(label, ref[1])}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--batch-size", type=int, default=5000)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--actors", default="1,2,4")
    args = ap.parse_args(argv)

    import pyarrow as pa
    import pyarrow.parquet as pq
    import ray
    import ray.data

    from onyx.ray import predict

    model = mlp()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((args.rows, 32)).astype(np.float32)
    ids = np.arange(args.rows, dtype=np.int64)

    t_1, ref = in_process(model, x, args.batch_size, threads=1)
    t_all, _ = in_process(model, x, args.batch_size, threads=0)
    print(f"rows {args.rows:,}, batch {args.batch_size}, {os.cpu_count()} cores (shared with other jobs)")
    print(f"in-process, one session, 1 thread:       {args.rows / t_1:10,.0f} rows/s ({t_1:.2f} s)")
    print(f"in-process, one session, default threads:{args.rows / t_all:10,.0f} rows/s ({t_all:.2f} s)")

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="warning")
    ray.data.DataContext.get_current().enable_progress_bars = False
    block = args.batch_size * max(1, args.rows // args.batch_size // 16)  # 16 blocks of whole batches
    tables = [
        pa.table(
            {"id": ids[i : i + block], "x": pa.FixedShapeTensorArray.from_numpy_ndarray(x[i : i + block])}
        )
        for i in range(0, args.rows, block)
    ]
    ds = ray.data.from_arrow(tables).materialize()
    checks = []
    for k in (int(a) for a in args.actors.split(",")):
        t0 = time.perf_counter()
        out = predict(
            ds,
            model,
            batch_size=args.batch_size,
            concurrency=k,
            num_cpus=args.cpus / k,
            preserve_order=(k == 2),
        )
        batches, t_first = [], 0.0
        for b in out.iter_batches(batch_format="numpy", batch_size=None):
            batches.append(b)
            t_first = t_first or time.perf_counter()
        dt = time.perf_counter() - t0
        steady = (args.rows - len(batches[0]["id"])) / max(time.perf_counter() - t_first, 1e-9)
        got = {c: np.concatenate([b[c] for b in batches]) for c in ("id", "prob", "label")}
        if k == 2:
            checks.append(f"order preserved (2 actors): {np.array_equal(got['id'], ids)}")
        checks.append(compare(f"onyx.ray.predict, {k} actor(s)", got, ref, ids))
        print(
            f"onyx.ray.predict, {k} actor(s), {args.cpus / k:g} CPU each: {args.rows / dt:10,.0f} rows/s "
            f"({dt:.2f} s; after the first block: {steady:,.0f} rows/s)"
        )

    with tempfile.TemporaryDirectory() as d:
        model_path, data_path, out_path = (
            os.path.join(d, f) for f in ("m.onnx", "in.parquet", "out.parquet")
        )
        with open(model_path, "wb") as f:
            f.write(model)
        pq.write_table(pa.table({"id": ids, **{f"f{i}": x[:, i] for i in range(32)}}), data_path)
        cmd = [
            sys.executable,
            "-m",
            "onyx.cli",
            "batch",
            model_path,
            data_path,
            out_path,
            "--ray",
            ray.get_runtime_context().gcs_address,
            "--batch-size",
            str(args.batch_size),
            "--concurrency",
            "2",
            "--num-cpus",
            str(args.cpus / 2),
            "--preserve-order",
            "--input-column",
            "x=" + ",".join(f"f{i}" for i in range(32)),
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if proc.returncode:
            print(f"onyx batch --ray failed: {proc.stderr.strip()}")
        else:
            t = pq.read_table(out_path)
            got = {
                "id": t.column("id").to_numpy(),
                "label": t.column("label").to_numpy(),
                "prob": t.column("prob").combine_chunks().to_numpy_ndarray(),
            }
            checks.append(f"onyx batch --ray order preserved: {np.array_equal(got['id'], ids)}")
            checks.append(compare("onyx batch --ray, 2 actors", got, ref, ids))
            print(f"onyx batch --ray (with Parquet read/write): {proc.stdout.strip()} [{dt:.2f} s wall]")
    ray.shutdown()
    print("checks against the in-process session (1 thread, same batches):")
    for c in checks:
        print("  " + c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
