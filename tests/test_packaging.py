"""Packaging: runtime dependencies are numpy and ml_dtypes only; running a model imports neither onnx
nor protobuf; the shipped model and the `onyx run` main job work."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_runtime_dependencies_are_numpy_and_ml_dtypes_only():
    import re

    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[(.*?)\]", text, re.M | re.S).group(1)
    names = sorted(re.split(r"[<>=!~ ]", d.strip().strip('"'))[0] for d in deps.split(",") if d.strip())
    assert names == ["ml_dtypes", "numpy"]


def test_running_a_model_needs_neither_onnx_nor_protobuf():
    code = (
        "import sys, numpy as np, onyx\n"
        "from onyx.cli import shipped_model\n"
        "m, s = shipped_model()\n"
        "sess = onyx.InferenceSession(m)\n"
        "x = np.load(s)['x']\n"
        "sess.run(None, {sess.get_inputs()[0].name: x})\n"
        "prefixes = ('onnx.', 'google.protobuf', 'onnxruntime')\n"
        "bad = [k for k in sys.modules if k == 'onnx' or k.startswith(prefixes)]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_onyx_run_main_job_prints_accuracy():
    out = subprocess.run(
        [sys.executable, "-m", "onyx.cli", "run"], capture_output=True, text=True, check=True
    )
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("accuracy:"))
    assert float(line.split()[1]) > 0.9
