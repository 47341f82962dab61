"""One benchmark measurement in a fresh process: import, create a session, run, report JSON.

    python -m bench._worker RUNTIME MODEL.onnx FEEDS.npz [--seconds S] [--max-iters N] [--threads T]

RUNTIME is onyx, ort or ref (onnx.reference). Session creation is timed from before the runtime's
import; peak RSS is the process's VmHWM (ru_maxrss would include the parent's peak: Linux carries the
high-water mark across fork and exec).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

T_START = time.perf_counter()


def _peak_rss_mb() -> float:
    """This process's own peak resident set (VmHWM), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runtime", choices=["onyx", "ort", "ref"])
    ap.add_argument("model")
    ap.add_argument("feeds")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--max-iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv[1:])

    t0 = time.perf_counter()
    import numpy as np

    if args.runtime == "onyx":
        import onyx

        opts = onyx.SessionOptions()
        if args.threads:
            opts.intra_op_num_threads = args.threads
        sess = onyx.InferenceSession(args.model, opts)
        run = lambda feeds: sess.run(None, feeds)  # noqa: E731
    elif args.runtime == "ort":
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        if args.threads:
            opts.intra_op_num_threads = args.threads
        sess = onnxruntime.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
        run = lambda feeds: sess.run(None, feeds)  # noqa: E731
    else:
        from onnx.reference import ReferenceEvaluator

        sess = ReferenceEvaluator(args.model)
        run = lambda feeds: sess.run(None, feeds)  # noqa: E731
    create = time.perf_counter() - t0
    data = np.load(args.feeds)
    feeds = {k: data[k] for k in data.files}
    t1 = time.perf_counter()
    run(feeds)  # warm-up
    first = time.perf_counter() - t1
    lat = []
    deadline = time.perf_counter() + args.seconds
    while len(lat) < args.max_iters and (not lat or time.perf_counter() < deadline):
        t = time.perf_counter()
        run(feeds)
        lat.append(time.perf_counter() - t)
    rss_mb = _peak_rss_mb()
    print(json.dumps({"create_s": create, "first_s": first, "latencies_s": lat, "peak_rss_mb": rss_mb}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
