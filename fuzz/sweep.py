"""A sweep: the structure-aware mutator alone, uninstrumented, ``python -m fuzz.sweep --seconds 600``.

Complements libFuzzer (fuzz/run.py): no coverage feedback, but every input is a well-formed model with one
to four changes (fuzz/mutate.py) of a corpus file, two to four times as many executions per second, and
it found most of the findings so far. Each worker is a child process under a memory limit (``ulimit -v``)
with a watchdog (faulthandler) per input; an input that raises something other than onyx's errors, hangs
or kills the worker is saved to ``fuzz/findings/sweep-*`` and the worker restarted.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import random
import resource
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(corpus: Path, findings: Path, seed: int, seconds: float, hang_s: int) -> int:
    """Mutate and exercise until ``seconds`` pass; the input in flight is kept in ``current`` so that the
    parent can save it when this process dies. Returns the number of executions."""
    from fuzz.mutate import mutate_bytes
    from fuzz.pipeline import exercise

    warnings.simplefilter("ignore")
    files = sorted(corpus.iterdir())
    rng = random.Random(seed)
    current = findings / f"current-{seed}"
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        try:
            data = rng.choice(files).read_bytes()
        except OSError:
            continue  # libFuzzer reduced it away meanwhile
        for _ in range(rng.choice([1, 1, 2])):
            data = mutate_bytes(data, rng.randrange(1 << 30)) or data
        current.write_bytes(data)
        n += 1
        faulthandler.dump_traceback_later(hang_s, exit=True)
        try:
            exercise(data)
        except Exception:  # noqa: BLE001 - anything but OnyxError escaping is the finding
            path = findings / f"sweep-crash-{seed}-{n}"
            path.write_bytes(data)
            print(f"FINDING {path.name}\n{traceback.format_exc(limit=-6)}", flush=True)
        faulthandler.cancel_dump_traceback_later()
    current.unlink(missing_ok=True)
    print(f"executions: {n}", flush=True)
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--corpus", type=Path, default=HERE / "corpus")
    ap.add_argument("--findings", type=Path, default=HERE / "findings")
    ap.add_argument("--hang-seconds", type=int, default=60)
    ap.add_argument("--memory-gb", type=float, default=8, help="the worker's address-space limit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.findings.mkdir(parents=True, exist_ok=True)
    if args.worker:
        limit = int(args.memory_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        worker(args.corpus, args.findings, args.seed, args.seconds, args.hang_seconds)
        return 0
    if not args.corpus.exists():
        from fuzz.corpus import write_corpus

        write_corpus(args.corpus)
    end, seed, total, found = time.monotonic() + args.seconds, args.seed, 0, 0
    log = args.findings / "sweep.log"
    while (left := end - time.monotonic()) > 1:
        cmd = [sys.executable, "-m", "fuzz.sweep", "--worker", "--seconds", str(left), "--seed", str(seed),
               "--corpus", str(args.corpus), "--findings", str(args.findings),
               "--hang-seconds", str(args.hang_seconds), "--memory-gb", str(args.memory_gb)]  # fmt: skip
        proc = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True, env=os.environ)
        with open(log, "a") as fh:
            fh.write(proc.stdout + proc.stderr)
        found += proc.stdout.count("FINDING ")
        done = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("executions:")]
        total += sum(int(x) for x in done)
        current = args.findings / f"current-{seed}"
        if proc.returncode != 0 and current.exists():  # a hang (watchdog), a crash or the memory limit
            kind = "hang" if "Timeout" in proc.stderr else f"died-{proc.returncode}"
            current.rename(args.findings / f"sweep-{kind}-{seed}")
            found += 1
            print(f"FINDING sweep-{kind}-{seed}\n{proc.stderr[-3000:]}")
        seed += 1
    print(
        f"sweep: {total:,} executions (inputs died with their worker not counted); {found} findings "
        f"in {args.findings}"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
