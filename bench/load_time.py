"""How long loading a big model takes, and how much memory it costs: onyx.load against onnx.load.

    python bench/load_time.py                       # BERT-base (~440 MB), 7 rounds, updates bench/README.md
    python bench/load_time.py --rounds 3 --no-readme
    python bench/load_time.py --path other.onnx

The model is BertModel(BertConfig()) with random weights, exported by ``bench/make_big_model.py`` into
``bench/.cache/bert_base.onnx`` (git-ignored) on first use. Every measurement is a fresh process that
imports its library, reads VmRSS from /proc/self/status, times one ``load(path)``, and reads VmRSS and
VmHWM again while still holding the model. Rounds interleave the loaders (alternating which goes first)
after one unmeasured warm-up load each, so both read the file from the page cache. Reported: medians of
the wall time and of the RSS increase (after - before) and of the peak increase (VmHWM - before).

``onyx+read`` also reads every initializer once after loading (a checksum over the float32 view of each
weight): onyx maps the file and converts lazily, so this is what a first inference pays on top of load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATH = ROOT / "bench" / ".cache" / "bert_base.onnx"
README = ROOT / "bench" / "README.md"
LOADERS = ("onyx", "onnx", "onyx+read")
SECTION = "## Loading"


# ---------------------------------------------------------------------------------------------
# The child: one load in a fresh process


def _status(key: str) -> int:
    """A /proc/self/status field in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as fh:
        m = re.search(rf"^{key}:\s+(\d+) kB", fh.read(), re.M)
    return int(m.group(1)) * 1024 if m else 0


def child(loader: str, path: str) -> dict:
    if loader == "onnx":
        import onnx

        load = onnx.load
    else:
        import numpy as np

        import onyx

        load = onyx.load
    rss0 = _status("VmRSS")
    t0 = time.perf_counter()
    model = load(path)
    seconds = time.perf_counter() - t0
    checksum = 0.0
    if loader == "onyx+read":
        t1 = time.perf_counter()
        for v in model.graph.initializers.values():
            arr = v.const.numpy()
            if arr.dtype == np.float32:
                checksum += float(arr.sum(dtype=np.float64))
        read_s = time.perf_counter() - t1
        seconds += read_s
    rss1 = _status("VmRSS")
    hwm = _status("VmHWM")
    assert model is not None
    return {
        "loader": loader,
        "seconds": seconds,
        "rss_increase": rss1 - rss0,
        "peak_increase": max(0, hwm - rss0),
        "checksum": checksum,
    }


# ---------------------------------------------------------------------------------------------
# The parent: build the model, run interleaved rounds, report


def ensure_model(path: Path) -> None:
    if path.exists():
        return
    maker = ROOT / "bench" / "make_big_model.py"
    print(f"exporting BERT-base to {path} (once; takes a minute) ...", flush=True)
    if maker.exists():
        subprocess.run([sys.executable, str(maker), str(path)], check=True, cwd=ROOT)
    else:  # pragma: no cover - the shared script normally exists
        _export_bert(path)


def _export_bert(path: Path) -> None:
    import warnings

    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig()).eval()
    ids = torch.randint(0, model.config.vocab_size, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (ids, mask), str(path), dynamo=False, input_names=["input_ids", "attention_mask"]
        )


def run_child(loader: str, path: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", loader, "--path", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{loader} child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(path: Path, rounds: int, loaders: tuple[str, ...]) -> dict[str, list[dict]]:
    for loader in loaders:  # warm-up: page cache, .pyc files
        run_child(loader, path)
    samples: dict[str, list[dict]] = {loader: [] for loader in loaders}
    for r in range(rounds):
        order = loaders if r % 2 == 0 else tuple(reversed(loaders))
        for loader in order:
            s = run_child(loader, path)
            samples[loader].append(s)
            print(
                f"round {r + 1}/{rounds} {loader:10s} {s['seconds'] * 1e3:8.1f} ms  "
                f"rss +{s['rss_increase'] / 2**20:7.1f} MiB  peak +{s['peak_increase'] / 2**20:7.1f} MiB",
                flush=True,
            )
    return samples


def summarize(samples: dict[str, list[dict]]) -> dict[str, dict]:
    out = {}
    for loader, ss in samples.items():
        secs = [s["seconds"] for s in ss]
        out[loader] = {
            "median_s": statistics.median(secs),
            "min_s": min(secs),
            "max_s": max(secs),
            "rss_mib": statistics.median(s["rss_increase"] for s in ss) / 2**20,
            "peak_mib": statistics.median(s["peak_increase"] for s in ss) / 2**20,
            "n": len(ss),
        }
    return out


def table(summary: dict[str, dict], path: Path, rounds: int, command: str) -> str:
    size_mb = path.stat().st_size / 2**20
    import numpy
    import onnx

    base = summary["onnx"]["median_s"]
    lines = [
        SECTION,
        "",
        "`onyx.load(path)` against `onnx.load(path)` on BERT-base (`BertModel(BertConfig())`, random",
        f"weights, TorchScript export, one {size_mb:.0f} MiB file, weights inline). Each sample is a fresh",
        "process (library imported before timing); VmRSS/VmHWM from /proc/self/status around the load,",
        f"while the model is still held. Medians of {rounds} interleaved rounds after a warm-up load each",
        "(file in page cache).",
        "",
        "`onyx+read` also converts and sums every weight once after loading. onyx maps the file and converts",
        "lazily, so that is what the first use of the weights costs: the mapped pages count in RSS (shared",
        "with the page cache), plus one aligned copy of each weight whose raw_data is not 4-byte aligned in",
        "the file (protobuf does not align it; numpy/BLAS want it aligned).",
        "",
        "| loader | median | min .. max | vs onnx.load | RSS increase | peak RSS increase |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for loader, s in summary.items():
        lines.append(
            f"| {loader} | {s['median_s'] * 1e3:.0f} ms "
            f"| {s['min_s'] * 1e3:.0f} .. {s['max_s'] * 1e3:.0f} ms "
            f"| {s['median_s'] / base:.3f}x | {s['rss_mib']:.1f} MiB | {s['peak_mib']:.1f} MiB |"
        )
    ratio = base / summary["onyx"]["median_s"]
    lines += [
        "",
        f"onnx.load takes {ratio:.1f}x as long as onyx.load; onyx's RSS increase is "
        f"{summary['onyx']['rss_mib'] / size_mb * 100:.1f}% of the file size.",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {numpy.__version__}, onnx {onnx.__version__}. Reproduce:",
        "",
        "    " + command,
        "",
    ]
    return "\n".join(lines)


def update_readme(section: str, readme: Path = README) -> None:
    """Replace this script's section of bench/README.md (from its heading to the next '## '), or append it."""
    text = readme.read_text() if readme.exists() else "# Benchmarks\n\n"
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == SECTION)
    except StopIteration:
        new = text.rstrip("\n") + "\n\n" + section
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        rest = "\n".join(lines[end:])
        new = "\n".join(lines[:start]) + ("\n" if start else "") + section + ("\n" + rest if rest else "")
    readme.write_text(new.rstrip("\n") + "\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", type=Path, default=DEFAULT_PATH, help=f"model file (default {DEFAULT_PATH})")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-readme", action="store_true", help="print the table only")
    ap.add_argument("--child", choices=LOADERS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv[1:])
    if args.child:
        print(json.dumps(child(args.child, str(args.path))))
        return 0
    ensure_model(args.path)
    samples = measure(args.path, args.rounds, LOADERS)
    summary = summarize(samples)
    command = "python bench/load_time.py" + (f" --rounds {args.rounds}" if args.rounds != 7 else "")
    if args.path != DEFAULT_PATH:
        command += f" --path {args.path}"
    section = table(summary, args.path, args.rounds, command)
    print()
    print(section)
    if not args.no_readme:
        update_readme(section)
        print(f"updated {README.relative_to(ROOT)}")
    onyx_s, onnx_s = summary["onyx"]["median_s"], summary["onnx"]["median_s"]
    ok = onyx_s <= onnx_s / 2 and summary["onyx"]["rss_mib"] < args.path.stat().st_size / 2**20 / 4
    verdict = "met" if ok else "MISSED"
    print(f"target (onyx <= half of onnx's time, RSS increase far below the file size): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
