"""A short fuzzing run of the whole pipeline (fuzz/target.py under libFuzzer, in a child process so a
crash or a hang is caught): a dozen quick seeds and the kept regression cases, then mutations. Any input
that raises something other than onyx's own errors, hangs or blows the memory limit fails the test."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: executions, seeds included: ~7 s of fuzzing on one core after ~15 s of start-up (instrumentation)
RUNS = 1000

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None, reason="atheris (the fuzzer, test extra) is not installed"
)


def test_short_fuzz_run_finds_nothing(tmp_path):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from fuzz.corpus import write_quick_corpus

    corpus, findings = tmp_path / "corpus", tmp_path / "findings"
    findings.mkdir()
    write_quick_corpus(corpus)
    cmd = [
        sys.executable, "-m", "fuzz.target", str(corpus), f"-runs={RUNS}", "-seed=1",
        "-timeout=30", "-rss_limit_mb=3072", f"-artifact_prefix={findings}/", "-print_final_stats=1",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    lines = (proc.stdout + proc.stderr).splitlines()
    log = "\n".join(line for line in lines if not line.startswith("INFO: Instrumenting"))
    found = sorted(p.name for p in findings.iterdir())
    assert proc.returncode == 0 and not found, f"found {found} (exit {proc.returncode}):\n{log[-5000:]}"
    assert f"stat::number_of_executed_units: {RUNS}" in log
