"""Executor overhead per node: a chain of N tiny elementwise nodes, onyx vs onnxruntime.

    python -m bench.overhead [--nodes 1000] [--repeat 200]

Prints the median time per node (microseconds) of each runtime and of a bare Python loop calling the
same numpy ufuncs (the floor any numpy executor pays).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def chain_model(n: int) -> bytes:
    from onyx.ir.builder import GraphBuilder
    from onyx.model_io import serialize

    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [4])
    one = b.const(np.ones(4, np.float32))
    y = x
    for i in range(n):
        y = b.Add(y, one) if i % 2 == 0 else b.Relu(y)
    b.output(y, "y", np.float32, [4])
    return serialize(b.model())


def timeit(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=100)
    args = ap.parse_args(argv[1:])
    import onnxruntime

    import onyx

    data = chain_model(args.nodes)
    x = np.ones(4, np.float32)
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    s_onyx = onyx.InferenceSession(data, so)
    oso = onnxruntime.SessionOptions()
    oso.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    s_ort = onnxruntime.InferenceSession(data, oso, providers=["CPUExecutionProvider"])
    one = np.ones(4, np.float32)

    def bare():
        y = x
        for i in range(args.nodes):
            y = np.add(y, one) if i % 2 == 0 else np.maximum(y, 0)
        return y

    rows = []
    for name, fn in [
        ("numpy loop", bare),
        ("onyx", lambda: s_onyx.run(None, {"x": x})),
        ("onnxruntime", lambda: s_ort.run(None, {"x": x})),
    ]:
        t = timeit(fn, args.repeat)
        rows.append((name, t / args.nodes * 1e6))
    for name, us in rows:
        print(f"{name:12s} {us:6.2f} us/node")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
