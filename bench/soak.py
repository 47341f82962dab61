"""Soak (issue 23): many threads, many runs, shapes changing every run; results against single-threaded
references and the process's RSS over time. Minutes long: not part of CI (tests/hardening/
test_soak_short.py runs a few seconds of the same).

    python -m bench.soak [--minutes 5] [--threads 4] [--no-deterministic] [--latency]

Two models built here with random weights: a BERT-like encoder (2 layers: self-attention, LayerNorm,
a GELU feed-forward) and a bidirectional LSTM. Every run takes another (batch, sequence) pair, growing
and varying as in onnxruntime issue #11118 (a server fed ever new lengths). Each pair's inputs are
fixed, and their reference outputs are computed first, one run at a time on this thread; each threaded
run is compared with its reference: bit for bit with SessionOptions.use_deterministic_compute (the
default here), else within float32 tolerance. RSS (/proc/self/statm) is sampled every --every runs;
the report gives it at the start, after the warm-up (every pair run once by every thread), at the end,
and the slope after the warm-up, beside the sessions' arena caches (bounded: kernels/arena.py).

``--latency`` measures instead how fast a run stops: RunOptions.terminate set from another thread
during an endless Loop, and run.timeout_ms during a chain of products of ~4 blocks each.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import onyx

OPSET = 17


def _init(name: str, a: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(a, name)


def transformer_model(layers: int = 2, d: int = 256, heads: int = 4, ff: int = 1024, seed: int = 0) -> bytes:
    """A BERT-like encoder on embeddings x (B, S, d) with an additive attention mask (B, S): per layer
    Q, K, V projections, softmax(QK^T / sqrt(dh) + mask) V, an output projection, residual + LayerNorm,
    a GELU (erf form) feed-forward, residual + LayerNorm."""
    rng = np.random.default_rng(seed)
    dh = d // heads
    nodes, inits = [], []

    def w(name: str, *shape: int, scale: float | None = None) -> str:
        s = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        inits.append(_init(name, (rng.standard_normal(shape) * s).astype(np.float32)))
        return name

    def c(name: str, value) -> str:
        inits.append(_init(name, np.asarray(value)))
        return name

    def n(op: str, ins: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    split = c("split_shape", np.array([0, 0, heads, dh], np.int64))
    merge = c("merge_shape", np.array([0, 0, d], np.int64))
    scale = c("scale", np.float32(1.0 / np.sqrt(dh)))
    half, one, sqrt2 = (
        c("half", np.float32(0.5)),
        c("one", np.float32(1.0)),
        c("sqrt2", np.float32(np.sqrt(2))),
    )
    # mask (B, S) of 0/1 -> (B, 1, 1, S) of 0 / -10000
    m = n("Unsqueeze", ["mask", c("mask_axes", np.array([1, 2], np.int64))], "mask4")
    m = n("Sub", [one, m], "mask_inv")
    m = n("Mul", [m, c("neg_big", np.float32(-10000.0))], "mask_add")
    x = "x"
    for i in range(layers):
        p = f"l{i}_"

        def heads_of(t: str, which: str, p=p) -> str:
            r = n("Reshape", [t, split], p + which + "_r")
            return n("Transpose", [r], p + which + "_t", perm=[0, 2, 1, 3])

        q = n("Add", [n("MatMul", [x, w(p + "wq", d, d)], p + "q0"), w(p + "bq", d, scale=0.02)], p + "q")
        k = n("Add", [n("MatMul", [x, w(p + "wk", d, d)], p + "k0"), w(p + "bk", d, scale=0.02)], p + "k")
        v = n("Add", [n("MatMul", [x, w(p + "wv", d, d)], p + "v0"), w(p + "bv", d, scale=0.02)], p + "v")
        qh, kh, vh = heads_of(q, "qh"), heads_of(k, "kh"), heads_of(v, "vh")
        kt = n("Transpose", [kh], p + "kT", perm=[0, 1, 3, 2])
        s = n("Mul", [n("MatMul", [qh, kt], p + "qk"), scale], p + "scores0")
        s = n("Add", [s, m], p + "scores")
        a = n("Softmax", [s], p + "probs", axis=-1)
        ctx = n("MatMul", [a, vh], p + "ctx_h")
        ctx = n("Reshape", [n("Transpose", [ctx], p + "ctx_t", perm=[0, 2, 1, 3]), merge], p + "ctx")
        o = n("Add", [n("MatMul", [ctx, w(p + "wo", d, d)], p + "o0"), w(p + "bo", d, scale=0.02)], p + "o")
        h = n(
            "LayerNormalization",
            [
                n("Add", [x, o], p + "res1"),
                c(p + "g1", np.ones(d, np.float32)),
                c(p + "b1", np.zeros(d, np.float32)),
            ],
            p + "ln1",
            axis=-1,
        )
        f = n("Add", [n("MatMul", [h, w(p + "w1", d, ff)], p + "f0"), w(p + "bf1", ff, scale=0.02)], p + "f1")
        erf = n("Erf", [n("Div", [f, sqrt2], p + "f_div")], p + "f_erf")
        g = n("Mul", [n("Mul", [f, n("Add", [erf, one], p + "f_1p")], p + "f_x"), half], p + "gelu")
        f2 = n("Add", [n("MatMul", [g, w(p + "w2", ff, d)], p + "f2"), w(p + "bf2", d, scale=0.02)], p + "f3")
        x = n(
            "LayerNormalization",
            [
                n("Add", [h, f2], p + "res2"),
                c(p + "g2", np.ones(d, np.float32)),
                c(p + "b2", np.zeros(d, np.float32)),
            ],
            p + "ln2",
            axis=-1,
        )
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", d]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", "S"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", d])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]).SerializeToString()


def lstm_model(hidden: int = 128, inputs: int = 64, seed: int = 1) -> bytes:
    """A bidirectional LSTM layer on x (S, B, inputs) -> Y (S, 2, B, hidden), Y_h, Y_c."""
    rng = np.random.default_rng(seed)
    d = 2
    W = (rng.standard_normal((d, 4 * hidden, inputs)) / np.sqrt(inputs)).astype(np.float32)
    R = (rng.standard_normal((d, 4 * hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    B = (rng.standard_normal((d, 8 * hidden)) * 0.1).astype(np.float32)
    node = helper.make_node(
        "LSTM", ["x", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=hidden, direction="bidirectional"
    )
    graph = helper.make_graph(
        [node],
        "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S", "B", inputs])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, None),
        ],
        [_init("W", W), _init("R", R), _init("B", B)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]).SerializeToString()


def shape_plan(n: int, max_batch: int, max_seq: int, seed: int = 7) -> list[tuple[int, int]]:
    """``n`` (batch, sequence) pairs as a server sees them: sequence lengths growing in waves, batches
    varying, every pair distinct where the ranges allow (ORT #11118's pattern of ever new shapes)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    tries = 0
    while len(out) < n and tries < 100 * n:
        tries += 1
        wave = 1 + len(out) * 3 // max(n, 1)  # the longest sequence grows over the plan
        seq = int(rng.integers(1, max(2, max_seq * wave // 3) + 1))
        batch = int(rng.integers(1, max_batch + 1))
        if (batch, seq) not in seen:
            seen.add((batch, seq))
            out.append((batch, seq))
    return out


@dataclass
class Case:
    """One model with its fixed inputs per shape pair and the single-threaded reference outputs."""

    name: str
    session: onyx.InferenceSession
    feeds: list[dict] = field(default_factory=list)
    refs: list[list[np.ndarray]] = field(default_factory=list)


def make_cases(
    deterministic: bool, pairs: int, *, d: int = 256, ff: int = 1024, hidden: int = 128, max_batch: int = 8,
    max_seq: int = 96, seed: int = 0,
) -> list[Case]:  # fmt: skip
    """The transformer and the LSTM, each with ``pairs`` (batch, seq) feeds and their references."""
    so = onyx.SessionOptions()
    so.use_deterministic_compute = deterministic
    rng = np.random.default_rng(seed)
    cases = [
        Case("transformer", onyx.InferenceSession(transformer_model(d=d, ff=ff), so)),
        Case("lstm", onyx.InferenceSession(lstm_model(hidden=hidden), so)),
    ]
    for batch, seq in shape_plan(pairs, max_batch, max_seq, seed=seed + 7):
        x = rng.standard_normal((batch, seq, d)).astype(np.float32)
        mask = (rng.random((batch, seq)) < 0.9).astype(np.float32)
        mask[:, 0] = 1.0
        cases[0].feeds.append({"x": x, "mask": mask})
        cases[1].feeds.append({"x": rng.standard_normal((seq, batch, 64)).astype(np.float32)})
    for case in cases:  # references: one run at a time, on this thread, nothing else running
        case.refs = [case.session.run(None, f) for f in case.feeds]
    return cases


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def arena_bytes(cases: list[Case]) -> int:
    return sum(c.session._arena.stats()["cached_bytes"] for c in cases)


@dataclass
class SoakResult:
    runs: int
    mismatches: int
    max_diff: float
    samples: list[tuple[int, float, int, int]]  # (runs so far, seconds, RSS bytes, arena cached bytes)
    warm_index: int  # the sample taken when the warm-up ended
    errors: list[str]


def soak(
    cases: list[Case], threads: int, *, seconds: float | None = None, runs_per_thread: int | None = None,
    every: int = 50, deterministic: bool = True, rtol: float = 1e-4, atol: float = 1e-5,
    shrink_every: int = 0,
) -> SoakResult:  # fmt: skip
    """``threads`` threads each running every (case, pair) once (the warm-up: every shape seen), then
    random ones until ``seconds`` pass or ``runs_per_thread`` are done; each result compared with its
    reference (bit for bit when ``deterministic``). ``shrink_every``: every so many runs of a thread
    (0: never) passes a RunOptions asking for the arena to shrink after it (onnxruntime's
    memory.enable_memory_arena_shrinkage); the other runs pass a RunOptions with a generous
    run.timeout_ms then, so that the stoppable path is what runs."""
    jobs = [(ci, k) for ci, c in enumerate(cases) for k in range(len(c.feeds))]
    lock = threading.Lock()
    state = {"runs": 0, "mismatches": 0, "max_diff": 0.0, "warm_threads": 0}
    samples: list[tuple[int, float, int, int]] = []
    errors: list[str] = []
    warm_index = [0]
    t0 = time.perf_counter()
    stop_at = t0 + seconds if seconds is not None else None
    samples.append((0, 0.0, rss_bytes(), arena_bytes(cases)))

    plain = shrink = None
    if shrink_every:
        plain, shrink = onyx.RunOptions(), onyx.RunOptions()
        for ro in (plain, shrink):
            ro.add_run_config_entry("run.timeout_ms", "600000")
        shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def one(ci: int, k: int, ro=None) -> None:
        case = cases[ci]
        got = case.session.run(None, case.feeds[k], ro)
        bad, diff = 0, 0.0
        for g, r in zip(got, case.refs[k]):
            if deterministic:
                if not np.array_equal(g, r):
                    bad += 1
                    diff = max(diff, float(np.max(np.abs(g - r))))
            elif not np.allclose(g, r, rtol=rtol, atol=atol):
                bad += 1
                diff = max(diff, float(np.max(np.abs(g - r))))
        with lock:
            state["runs"] += 1
            state["mismatches"] += bad
            state["max_diff"] = max(state["max_diff"], diff)
            if state["runs"] % every == 0:
                samples.append((state["runs"], time.perf_counter() - t0, rss_bytes(), arena_bytes(cases)))

    def worker(wid: int) -> None:
        rng = np.random.default_rng(1000 + wid)
        try:
            order = rng.permutation(len(jobs))
            for j in order:  # warm-up: every shape of every model once, in this thread's own order
                one(*jobs[j])
            with lock:
                state["warm_threads"] += 1
                if state["warm_threads"] == threads:
                    samples.append((state["runs"], time.perf_counter() - t0, rss_bytes(), arena_bytes(cases)))
                    warm_index[0] = len(samples) - 1
            done = 0
            while True:
                if runs_per_thread is not None and done >= runs_per_thread:
                    break
                if stop_at is not None and time.perf_counter() >= stop_at:
                    break
                ro = None if not shrink_every else shrink if done % shrink_every == 0 else plain
                one(*jobs[int(rng.integers(len(jobs)))], ro)
                done += 1
        except BaseException as e:  # noqa: BLE001 - reported
            with lock:
                errors.append(f"thread {wid}: {type(e).__name__}: {e}")

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    samples.append((state["runs"], time.perf_counter() - t0, rss_bytes(), arena_bytes(cases)))
    return SoakResult(state["runs"], state["mismatches"], state["max_diff"], samples, warm_index[0], errors)


def slope_mib_per_1000_runs(samples: list[tuple[int, float, int, int]]) -> float:
    """Least-squares slope of RSS against runs, MiB per 1000 runs."""
    if len(samples) < 2:
        return 0.0
    x = np.array([s[0] for s in samples], float)
    y = np.array([s[2] for s in samples], float) / (1 << 20)
    if np.ptp(x) == 0:
        return 0.0
    return float(np.polyfit(x, y, 1)[0] * 1000)


def report(res: SoakResult) -> str:
    mib = 1 << 20
    start, warm, end = res.samples[0], res.samples[res.warm_index], res.samples[-1]
    after = res.samples[res.warm_index :]
    peak_after = max(s[2] for s in after)
    lines = [
        f"runs {res.runs} in {end[1]:.0f} s, mismatches {res.mismatches} (max |diff| {res.max_diff:.3g}), "
        f"errors {len(res.errors)}",
        f"RSS start {start[2] / mib:.0f} MiB, after warm-up ({warm[0]} runs) {warm[2] / mib:.0f} MiB, "
        f"end {end[2] / mib:.0f} MiB; peak after warm-up {peak_after / mib:.0f} MiB",
        f"RSS slope after warm-up {slope_mib_per_1000_runs(after):+.2f} MiB per 1000 runs "
        f"(arena caches {warm[3] / mib:.0f} -> {end[3] / mib:.0f} MiB)",
        "curve (runs: RSS MiB / arena MiB): "
        + ", ".join(f"{s[0]}: {s[2] / mib:.0f}/{s[3] / mib:.0f}" for s in _thin(res.samples, 16)),
    ]
    lines += res.errors[:5]
    return "\n".join(lines)


def _thin(samples: list, n: int) -> list:
    if len(samples) <= n:
        return samples
    idx = np.linspace(0, len(samples) - 1, n).round().astype(int)
    return [samples[i] for i in idx]


# -------------------------------------------------------------------------------------------------
# Stop latency


def latency(repeats: int = 5) -> str:
    """Wall time from RunOptions.terminate (set from another thread) to the exception, in an endless
    Loop; and the overshoot past run.timeout_ms in a chain of big products (blocks of BLOCK_MACS)."""
    from onyx.kernels.products import BLOCK_MACS
    from onyx.runtime.cancellation import TIMEOUT_KEY, Terminated

    body = helper.make_graph(
        [helper.make_node("Neg", ["a"], ["b"]), helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, None),
        ],
    )
    g = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
        "loop",
        [
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    s = onyx.InferenceSession(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]).SerializeToString()
    )
    feeds = {"n": np.array(10**12, np.int64), "x": np.zeros(2, np.float32)}
    waits = []
    for _ in range(repeats):
        ro = onyx.RunOptions()
        got: dict = {}

        def run(ro=ro, got=got) -> None:
            try:
                s.run(None, feeds, ro)
            except Terminated:
                got["at"] = time.perf_counter()

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.2)  # let it loop (timing only: nothing is asserted on it)
        ro.terminate = True
        req = time.perf_counter()
        t.join()
        waits.append(got["at"] - req)
    k = 1024
    rows = 4 * BLOCK_MACS // (k * k)
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, k)) / 32).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i - 1}", "w"], [f"h{i}"]) for i in range(6)]
    g = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
        [helper.make_tensor_value_info("h5", TensorProto.FLOAT, [rows, k])],
        [_init("w", w)],
    )
    s2 = onyx.InferenceSession(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]).SerializeToString()
    )
    x = rng.standard_normal((rows, k)).astype(np.float32)
    t0 = time.perf_counter()
    s2.run(None, {"x": x})
    full = time.perf_counter() - t0
    over = []
    for _ in range(repeats):
        ro = onyx.RunOptions()
        timeout = full / 3  # lands inside the chain, at any point of a product
        ro.add_run_config_entry(TIMEOUT_KEY, f"{timeout * 1e3:.1f}")
        t0 = time.perf_counter()
        try:
            s2.run(None, {"x": x}, ro)
        except Terminated:
            pass
        over.append(time.perf_counter() - t0 - timeout)
    return (
        f"terminate -> exception (endless Loop, {repeats} runs): median {np.median(waits) * 1e3:.2f} ms, "
        f"max {max(waits) * 1e3:.2f} ms\n"
        f"run.timeout_ms overshoot (6 products of {rows}x{k} @ {k}x{k}, {4} blocks each, whole chain "
        f"{full * 1e3:.0f} ms): median {np.median(over) * 1e3:.1f} ms, max {max(over) * 1e3:.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=40, help="distinct (batch, sequence) pairs")
    ap.add_argument("--every", type=int, default=50, help="runs between RSS samples")
    ap.add_argument("--no-deterministic", action="store_true", help="compare within float32 tolerance")
    ap.add_argument("--latency", action="store_true", help="measure how fast runs stop instead")
    ap.add_argument("--shrink-every", type=int, default=0, help="arena shrinkage every N runs a thread")
    args = ap.parse_args(argv)
    if args.latency:
        print(latency())
        return 0
    det = not args.no_deterministic
    t0 = time.perf_counter()
    cases = make_cases(det, args.pairs)
    print(
        f"models built, {args.pairs} pairs, references in {time.perf_counter() - t0:.1f} s; "
        f"{args.threads} threads for {args.minutes} min, deterministic={det}",
        flush=True,
    )
    res = soak(
        cases, args.threads, seconds=args.minutes * 60, every=args.every, deterministic=det,
        shrink_every=args.shrink_every,
    )  # fmt: skip
    print(report(res))
    return 1 if res.mismatches or res.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
