"""A bounded load test of `onyx serve`: N requests from C concurrent tritonclient clients on loopback.

    python bench/serve_load.py [--requests 2000] [--clients 16]

The server runs in its own process (`onyx serve` on free ports, one intra-op thread) with a small
MLP (64 layers of MatMul 64 x 64, Add and Relu: its time at batch 1 is the executor's per-node work,
which a batch shares) twice in its repository: `mlp` without dynamic batching and `mlp_batched` with
it (max_batch_size 16, max_queue_delay 2 ms, one instance). Each configuration (REST binary, REST
JSON, gRPC; with and without batching) gets the same requests of one row each; the figures are
throughput (requests/s over the whole run) and per-request latency (p50, p99) as the clients see it,
next to the same model run in-process by InferenceSession (batch 1 sequentially, and batch 16). Mean
batch sizes come from the server's own metrics (nv_inference_count / nv_inference_exec_count).
Clients and server share the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np

from onyx.ir.builder import GraphBuilder
from onyx.model_io import save

CONFIG = """
name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 16
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ 64 ] }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ 10 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
{batching}
"""


def mlp():
    """64 layers of MatMul (64 x 64), Add, Relu, then 64 -> 10: a small model whose time at batch 1 is
    the executor's per-node work, which a batch of 16 rows shares."""
    rng = np.random.default_rng(0)
    b = GraphBuilder(opset=17)
    h = b.input("x", np.float32, ["N", 64])
    for _ in range(64):
        w = b.const((rng.standard_normal((64, 64)) / 8).astype(np.float32))
        h = b.Relu(b.Add(b.MatMul(h, w), b.const(np.full(64, 0.01, np.float32))))
    w = b.const((rng.standard_normal((64, 10)) / 8).astype(np.float32))
    b.output(b.MatMul(h, w), "y", np.float32, ["N", 10])
    return b.model()


def write_repo(root: str) -> None:
    model = mlp()
    for name, batching in (
        ("mlp", ""),
        (
            "mlp_batched",
            "dynamic_batching { preferred_batch_size: [ 16 ] max_queue_delay_microseconds: 5000 }",
        ),
    ):
        os.makedirs(os.path.join(root, name, "1"))
        save(model, os.path.join(root, name, "1", "model.onnx"))
        with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
            f.write(CONFIG.format(name=name, batching=batching))


def start_server(repo: str) -> tuple[subprocess.Popen, int, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "onyx.cli", "serve", repo, "--http-port", "0", "--grpc-port", "0",
         "--metrics-port", "-1", "--threads", "1", "--log-level", "warning"],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    http_port = grpc_port = None
    while http_port is None or grpc_port is None:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server exited")
        if line.startswith("onyx serve: HTTP"):
            http_port = int(line.rsplit(":", 1)[1])
        elif line.startswith("onyx serve: gRPC"):
            grpc_port = int(line.rsplit(":", 1)[1])
    return proc, http_port, grpc_port


def metric(http_port: int, name: str, model: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics") as r:
        text = r.read().decode()
    m = re.search(rf'^{name}{{model="{model}",version="1"}} (\S+)$', text, re.M)
    return float(m.group(1))


def load(protocol: str, port: int, model: str, requests: int, clients: int, x: np.ndarray, want: np.ndarray):
    """Latencies (s) of every request and the wall time of the run."""
    if protocol == "grpc":
        import tritonclient.grpc as lib
    else:
        import tritonclient.http as lib
    per_client = [requests // clients + (i < requests % clients) for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients + 1)

    def worker(k: int) -> None:
        try:
            client = lib.InferenceServerClient(f"127.0.0.1:{port}")
            inp = lib.InferInput("x", [1, 64], "FP32")
            if protocol == "grpc":
                inp.set_data_from_numpy(x)
                outs = None
            else:
                inp.set_data_from_numpy(x, binary_data=protocol == "http-binary")
                outs = [lib.InferRequestedOutput("y", binary_data=protocol == "http-binary")]
            client.infer(model, [inp], outputs=outs)  # warm the connection
            barrier.wait()
            for _ in range(per_client[k]):
                t0 = time.perf_counter()
                y = client.infer(model, [inp], outputs=outs).as_numpy("y")
                latencies[k].append(time.perf_counter() - t0)
                if not np.allclose(y, want, rtol=1e-5, atol=1e-6):
                    raise AssertionError("wrong result")
            client.close()
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return np.array([v for lat in latencies for v in lat]), wall


def in_process(requests: int, x: np.ndarray) -> list[tuple[str, float, float, float]]:
    import onyx as ort

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        save(mlp(), path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(path, opts)
    rows = []
    for batch in (1, 16):
        xb = np.repeat(x, batch, axis=0)
        for _ in range(20):
            sess.run(None, {"x": xb})
        lat = []
        n = requests // batch
        t0 = time.perf_counter()
        for _ in range(n):
            t1 = time.perf_counter()
            sess.run(None, {"x": xb})
            lat.append(time.perf_counter() - t1)
        wall = time.perf_counter() - t0
        lat = np.array(lat)
        rows.append((f"in-process InferenceSession.run, batch {batch}", n * batch / wall,
                     np.percentile(lat, 50) * 1e3, np.percentile(lat, 99) * 1e3))  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    import onyx as ort

    with tempfile.TemporaryDirectory() as d:
        save(mlp(), os.path.join(d, "m.onnx"))
        want = ort.InferenceSession(os.path.join(d, "m.onnx")).run(None, {"x": x})[0]
    rows = in_process(args.requests, x)
    with tempfile.TemporaryDirectory() as repo:
        write_repo(repo)
        proc, http_port, grpc_port = start_server(repo)
        try:
            for protocol, port in (("http-binary", http_port), ("http-json", http_port), ("grpc", grpc_port)):
                for model in ("mlp", "mlp_batched"):
                    e0 = metric(http_port, "nv_inference_exec_count", model)
                    c0 = metric(http_port, "nv_inference_count", model)
                    lat, wall = load(protocol, port, model, args.requests, args.clients, x, want)
                    execs = metric(http_port, "nv_inference_exec_count", model) - e0
                    count = metric(http_port, "nv_inference_count", model) - c0
                    label = f"{protocol}, {'dynamic batching' if model == 'mlp_batched' else 'no batching'}"
                    label += f" (mean batch {count / execs:.1f})"
                    rows.append(
                        (label, len(lat) / wall, np.percentile(lat, 50) * 1e3, np.percentile(lat, 99) * 1e3)
                    )
                    print(f"{label}: done", file=sys.stderr, flush=True)
        finally:
            proc.terminate()
            proc.wait(60)
    print(
        f"{args.requests} requests of one row, {args.clients} concurrent clients, MLP of 64 layers 64 wide\n"
    )
    print("| configuration | requests/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for label, rps, p50, p99 in rows:
        print(f"| {label} | {rps:,.0f} | {p50:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
