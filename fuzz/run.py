"""A fuzzing campaign: ``python -m fuzz.run --seconds 3600 [--corpus fuzz/corpus] [--jobs 1]``.

Seeds the corpus (fuzz/corpus.py), then runs the atheris target in a child process, restarted after
each finding (libFuzzer saves the input that crashed, hung or ran out of memory, then exits), keeps the
corpus it grows, and prints the findings: every input that raised something other than onyx's own errors,
hung past ``--timeout`` or went past ``--rss-limit-mb``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def campaign(
    seconds: int,
    corpus: Path,
    findings: Path,
    timeout: int,
    rss_limit_mb: int,
    runs: int | None = None,
    jobs: int = 1,
) -> dict:
    """Run libFuzzer for ``seconds`` (or ``runs`` executions) in ``jobs`` processes sharing the corpus (each
    reloads what the others add); return executions (summed) and finding files."""
    from fuzz.corpus import write_corpus

    write_corpus(corpus)
    findings.mkdir(parents=True, exist_ok=True)
    before = set(_finding_files(findings))
    t0 = time.monotonic()
    per_job_runs = None if runs is None else -(-runs // jobs)
    results: list[dict] = [{} for _ in range(jobs)]

    def job(i: int) -> None:
        log_path = findings / ("campaign.log" if i == 0 else f"campaign-{i}.log")
        results[i] = _job(t0, seconds, corpus, findings, timeout, rss_limit_mb, per_job_runs, log_path)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    new = sorted(set(_finding_files(findings)) - before)
    return {
        "executions": sum(r["executions"] for r in results),
        "seconds": time.monotonic() - t0,
        "findings": new,
        "log": "\n".join(r["log"] for r in results),
        "returncode": max(r["returncode"] for r in results),
    }


def _job(
    t0: float, seconds: int, corpus: Path, findings: Path, timeout: int, rss_limit_mb: int, runs: int | None,
    log_path: Path,
) -> dict:  # fmt: skip
    """One libFuzzer process, restarted after each finding (corpus kept) until time or runs are used up."""
    base = [
        sys.executable,
        "-m",
        "fuzz.target",
        str(corpus),
        f"-timeout={timeout}",
        f"-rss_limit_mb={rss_limit_mb}",
        f"-artifact_prefix={findings}/",
        "-max_len=262144",
        "-print_final_stats=1",
    ]
    executions, logs, returncode = 0, [], 0
    while True:
        left = seconds - (time.monotonic() - t0)
        if left < 1 or (runs is not None and executions >= runs):
            break
        cmd = [*base, f"-max_total_time={int(left)}"]
        if runs is not None:
            cmd.append(f"-runs={runs - executions}")
        start = log_path.stat().st_size if log_path.exists() else 0
        with open(log_path, "ab") as fh:
            proc = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        with open(log_path, "rb") as fh:
            fh.seek(start)
            log = fh.read().decode("utf-8", "replace")
        logs.append(_without_instrumenting(log)[-6000:])
        returncode = proc.returncode
        done = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
        executions += int(done[-1]) if done else 0
        if proc.returncode == 0 or not done and proc.returncode not in (1, 70, 71, 72):
            break  # finished its time or runs (or could not start: nothing to restart)
    return {"executions": executions, "log": "\n".join(logs), "returncode": returncode}


def _finding_files(folder: Path) -> list[Path]:
    """libFuzzer's findings: crash-*, timeout-*, oom-*, leak-* (its slow-unit-* reports, inputs past 10 s
    but under the hang limit, are not findings: :func:`slow_units` lists them)."""
    prefixes = ("crash-", "timeout-", "oom-", "leak-")
    return [p for p in folder.iterdir() if p.name.startswith(prefixes)]


def slow_units(folder: Path) -> list[Path]:
    """The inputs libFuzzer reported as slow (past -report_slow_units, 10 s): worth a look, not findings."""
    return sorted(p for p in folder.iterdir() if p.name.startswith("slow-unit-"))


def _without_instrumenting(log: str) -> str:
    return "\n".join(line for line in log.splitlines() if not line.startswith("INFO: Instrumenting"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--corpus", type=Path, default=HERE / "corpus")
    ap.add_argument("--findings", type=Path, default=HERE / "findings")
    ap.add_argument(
        "--timeout",
        type=int,
        default=60,
        help="wall-clock seconds before an input counts as a hang (a loaded machine stalls)",
    )
    ap.add_argument("--rss-limit-mb", type=int, default=4096)
    ap.add_argument("--jobs", type=int, default=1, help="libFuzzer processes sharing the corpus")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    result = campaign(
        args.seconds, args.corpus, args.findings, args.timeout, args.rss_limit_mb, args.runs, args.jobs
    )
    print(
        f"{result['executions']:,} executions in {result['seconds']:.0f} s; "
        f"{len(result['findings'])} findings in {args.findings}"
    )
    for path in result["findings"]:
        print(f"  {path.name}")
    slow = slow_units(args.findings)
    if slow:
        print(
            f"{len(slow)} slow units (over 10 s, under the {args.timeout} s hang limit): "
            + ", ".join(p.name for p in slow)
        )
    if result["findings"]:
        print(result["log"][-4000:])
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
