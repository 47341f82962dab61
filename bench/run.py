"""Benchmark onyx against onnxruntime and onnx's reference evaluator, side by side, interleaved.

    python -m bench.run                         # the whole set, 3 rounds
    python -m bench.run resnet bert --rounds 5 --batches 1
    python -m bench.run --no-ref                # skip onnx.reference (slow on big models)
    python -m bench.run --no-ref --baseline /tmp/old   # also onyx from another checkout (its src/),
                                                # e.g. `git worktree add /tmp/old HEAD~5`: a change's cost

Every measurement is a fresh process (bench/_worker.py): import, session creation, a warm-up run, then
timed runs. Before the rounds, each model runs once in onyx untimed, so that the compiled tasks it
needs (and the baseline's) are warm, as they are on any machine after a model's first run.
Rounds interleave runtimes and models so that machine noise hits all of them alike.
Reported: median latency, median session creation time (import included) and peak RSS, and ratios.
Results go to bench/results/latest.json and a markdown table on stdout (``--markdown FILE`` writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ("onyx", "ort", "ref")
#: the source tree of the "base" runtime (onyx from another checkout), set by --baseline
BASELINE: list[Path] = []


def measure(runtime: str, model: Path, feeds: Path, seconds: float, timeout: float, threads: int) -> dict:
    worker = "onyx" if runtime == "base" else runtime
    cmd = [sys.executable, "-m", "bench._worker", worker, str(model), str(feeds), "--seconds", str(seconds)]
    if threads:
        cmd += ["--threads", str(threads)]
    env = dict(os.environ)
    # onyx from this checkout's src/ (or the baseline's), whatever copy is installed
    src = BASELINE[0] / "src" if runtime == "base" else ROOT / "src"
    env["PYTHONPATH"] = os.pathsep.join([str(src), str(ROOT), env.get("PYTHONPATH", "")])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if out.returncode != 0:
        return {"error": _exception_line(out.stderr or out.stdout)}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _exception_line(text: str) -> str:
    """The ``SomeError: message`` line of a traceback (messages can run over several lines, so the
    last line alone may be a fragment), else its last line."""
    lines = text.strip().splitlines() or ["?"]
    found = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", ln)]
    return (found[-1] if found else lines[-1]).strip()[:200]


def summarize(samples: list[dict]) -> dict:
    ok = [s for s in samples if "error" not in s]
    if not ok:
        return {"error": samples[-1].get("error", "?") if samples else "not run"}
    lat = [x for s in ok for x in s["latencies_s"]]
    return {
        "latency_ms": statistics.median(lat) * 1e3,
        "create_s": statistics.median(s["create_s"] for s in ok),
        "peak_rss_mb": statistics.median(s["peak_rss_mb"] for s in ok),
        "runs": len(lat),
    }


def table(results: dict) -> str:
    lines = [
        "| model | batch | onyx ms | ort ms | ref ms | onyx/ort | ref/onyx | create onyx/ort s "
        "| RSS onyx/ort MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    if any("base" in r for r in results.values()):
        lines[0] += " base ms | onyx/base | base create, RSS |"
        lines[1] += "---|---|---|"
    for key, r in results.items():
        name, batch = key.rsplit("@", 1)

        def cell(rt: str, field: str, fmt: str, r: dict = r, key: str = key) -> str:
            x = r.get(rt, {})
            if field in x:
                return format(x[field], fmt)
            if "error" not in x:
                return "—"
            notes.append(f"{len(notes) + 1}. {key} {rt}: {x['error']}")
            return f"fails ({len(notes)})"

        o, t, f = r.get("onyx", {}), r.get("ort", {}), r.get("ref", {})
        ratio = (
            f"{o['latency_ms'] / t['latency_ms']:.2f}x" if "latency_ms" in o and "latency_ms" in t else "—"
        )
        vs_ref = (
            f"{f['latency_ms'] / o['latency_ms']:.1f}x" if "latency_ms" in o and "latency_ms" in f else "—"
        )
        create = f"{o['create_s']:.2f} / {t['create_s']:.2f}" if "create_s" in o and "create_s" in t else "—"
        rss = (
            f"{o['peak_rss_mb']:.0f} / {t['peak_rss_mb']:.0f}"
            if "peak_rss_mb" in o and "peak_rss_mb" in t
            else "—"
        )
        row = (
            f"| {name} | {batch} | {cell('onyx', 'latency_ms', '.2f')} | "
            f"{cell('ort', 'latency_ms', '.2f')} | {cell('ref', 'latency_ms', '.1f')} | "
            f"{ratio} | {vs_ref} | {create} | {rss} |"
        )
        if "base" in r:
            b = r["base"]
            both = "latency_ms" in o and "latency_ms" in b
            vs_base = f"{o['latency_ms'] / b['latency_ms']:.3f}x" if both else "—"
            base_extra = f" {b['create_s']:.2f} s, {b['peak_rss_mb']:.0f} MB |" if "create_s" in b else " — |"
            row += f" {cell('base', 'latency_ms', '.2f')} | {vs_base} |" + base_extra
        lines.append(row)
    if notes:
        lines += ["", "Failures:", ""] + notes
    return "\n".join(lines)


def geomean(xs: list[float]) -> float:
    return float(np.exp(np.mean(np.log(xs)))) if xs else float("nan")


def _byte_compile_onyx() -> None:
    """Write onyx's .pyc files, as ``pip install .`` does (onnxruntime's come from its wheel): an
    editable install under PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module from source
    at every import, ~0.15 s of session creation that no installed copy pays."""
    import compileall

    for root in [ROOT, *BASELINE]:
        compileall.compile_dir(str(root / "src" / "onyx"), quiet=1)


def main(argv: list[str]) -> int:
    from bench.models import BENCH_MODELS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="substrings of model names (default: all)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, nargs="*", default=None)
    ap.add_argument("--seconds", type=float, default=2.0, help="timed-run budget per measurement")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--no-ref", action="store_true")
    ap.add_argument("--variant", default=None, help="torch exporter: torchscript (default) or dynamo")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--baseline", default=None, help="another onyx checkout, measured as the runtime 'base'")
    args = ap.parse_args(argv[1:])

    runtimes = [r for r in RUNTIMES if not (args.no_ref and r == "ref")]
    if args.baseline:
        BASELINE[:] = [Path(args.baseline).resolve()]
        runtimes.append("base")
    _byte_compile_onyx()
    jobs = []
    tmp = Path(tempfile.mkdtemp(prefix="onyx-bench-"))
    for name, m in BENCH_MODELS.items():
        if args.names and not any(p in name for p in args.names):
            continue
        for batch in m.batches:
            if args.batches and batch not in args.batches:
                continue
            try:
                path, feeds = m.build(batch, args.variant if m.kind == "torch" else None)
            except Exception as e:  # noqa: BLE001 - an export failure is reported, not fatal
                print(f"skip {name}@{batch}: {e}", file=sys.stderr)
                continue
            fpath = tmp / f"{name}_{batch}.npz"
            np.savez(fpath, **feeds)
            jobs.append((f"{name}@{batch}", Path(path), fpath))
    for rt in ("onyx", "base"):
        if rt in runtimes:
            for _key, path, fpath in jobs:  # one untimed run each: caches warm, as after any first run
                measure(rt, path, fpath, 0.0, args.timeout, args.threads)
    samples: dict[str, dict[str, list]] = {k: {r: [] for r in runtimes} for k, _, _ in jobs}
    rng = random.Random(0)
    for rnd in range(args.rounds):
        order = [(k, p, f, rt) for k, p, f in jobs for rt in runtimes]
        rng.shuffle(order)
        for key, path, fpath, rt in order:
            if rt == "ref" and any("error" in s for s in samples[key]["ref"]):
                continue  # a reference run that timed out once is not retried
            t = time.perf_counter()
            s = measure(rt, path, fpath, args.seconds, args.timeout, args.threads)
            samples[key][rt].append(s)
            took = time.perf_counter() - t
            med = statistics.median(s["latencies_s"]) * 1e3 if "latencies_s" in s else float("nan")
            print(
                f"round {rnd + 1} {key:40s} {rt:5s} {med:10.2f} ms  ({took:.1f} s) {s.get('error', '')}",
                file=sys.stderr,
            )
    results = {k: {rt: summarize(v) for rt, v in per.items()} for k, per in samples.items()}
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "latest.json").write_text(json.dumps(results, indent=1))
    md = table(results)
    ratios = [
        r["onyx"]["latency_ms"] / r["ort"]["latency_ms"]
        for r in results.values()
        if "latency_ms" in r.get("onyx", {}) and "latency_ms" in r.get("ort", {})
    ]
    md += f"\n\nGeometric mean onyx/onnxruntime latency over {len(ratios)} rows: {geomean(ratios):.2f}x\n"
    vs_base = [
        r["onyx"]["latency_ms"] / r["base"]["latency_ms"]
        for r in results.values()
        if "latency_ms" in r.get("onyx", {}) and "latency_ms" in r.get("base", {})
    ]
    if vs_base:
        md += f"Geometric mean onyx/base latency over {len(vs_base)} rows: {geomean(vs_base):.3f}x\n"
    print(md)
    if args.markdown:
        Path(args.markdown).write_text(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
