"""onyx.install_as_onnxruntime() and the ONYX_AS_ONNXRUNTIME .pth opt-in. Everything that replaces
``onnxruntime`` runs in a subprocess, so this process keeps the real onnxruntime (the oracle)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import onnxruntime
import pytest

import onyx
from onyx import shim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(code: str, env: dict | None = None) -> str:
    run_env = {k: v for k, v in os.environ.items() if k != shim.ENV}
    run_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=run_env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_never_shadows_a_real_onnxruntime_in_process():
    assert shim.real_onnxruntime_installed()
    assert onyx.install_as_onnxruntime() is False
    assert sys.modules["onnxruntime"] is onnxruntime and onnxruntime.__name__ == "onnxruntime"


def test_force_serves_onnxruntime_and_its_submodules():
    out = _python(
        """
        import sys, onyx
        assert onyx.install_as_onnxruntime(force=True) is True
        assert onyx.install_as_onnxruntime(force=True) is True  # twice is fine
        import onnxruntime, onnxruntime.capi
        import onnxruntime.backend, onnxruntime.datasets
        from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, NoSuchFile
        from onnxruntime.capi._pybind_state import OrtValueVector
        from onnxruntime.capi.onnxruntime_inference_collection import InferenceSession, IOBinding, OrtValue
        assert onnxruntime is onyx and Fail is onyx.errors.Fail and InferenceSession is onyx.InferenceSession
        assert onnxruntime.backend is onyx.backend and onnxruntime.datasets is onyx.datasets
        try:
            import onyx.quantization
        except ImportError:
            pass
        else:  # served lazily, as onnxruntime.quantization
            import onnxruntime.quantization
            assert onnxruntime.quantization is onyx.quantization
        import numpy as np
        s = onnxruntime.InferenceSession(onnxruntime.datasets.get_example("mul_1.onnx"))
        y = s.run(None, {"X": np.ones((3, 2), np.float32)})[0]
        assert y.tolist() == [[1, 2], [3, 4], [5, 6]]
        files = [str(getattr(m, "__file__", "")) for m in list(sys.modules.values())]
        native = [f for f in files if "site-packages/onnxruntime" in f]
        print(onnxruntime.__name__, len(native))
        """
    )
    assert out == "onyx 0"


def test_installs_where_no_onnxruntime_is_found():
    out = _python(
        """
        import importlib.abc, sys

        class Hide(importlib.abc.MetaPathFinder):  # as if onnxruntime were not installed
            def find_spec(self, name, path=None, target=None):
                if name == "onnxruntime":
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Hide())
        import onyx
        from onyx import shim
        assert not shim.real_onnxruntime_installed()
        print(onyx.install_as_onnxruntime())
        import onnxruntime
        print(onnxruntime.__name__)
        shim.uninstall_from_process()
        print("onnxruntime" in sys.modules)
        """
    )
    assert out.split() == ["True", "onyx", "False"]


def test_pth_opt_in(tmp_path):
    assert shim.main(["install", "--dir", str(tmp_path)]) == 0
    pth = tmp_path / shim.PTH_NAME
    assert pth.read_text() == shim.PTH_LINE
    code = f"""
        import site; site.addsitedir({str(tmp_path)!r})
        import sys; print("onyx" in sys.modules, end=" ")
        import onnxruntime; print(onnxruntime.__name__)
        """
    assert _python(code) == "False onnxruntime"  # unset: start-up imports nothing
    assert _python(code, {shim.ENV: "1"}) == "True onnxruntime"  # a real one is installed: left alone
    assert _python(code, {shim.ENV: "force"}) == "True onyx"
    assert shim.main(["status", "--dir", str(tmp_path)]) == 0
    assert shim.main(["uninstall", "--dir", str(tmp_path)]) == 0
    assert not pth.exists()
    assert shim.main(["uninstall", "--dir", str(tmp_path)]) == 0


def test_python_dash_m_onyx_shim(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "onyx.shim", "install", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and shim.PTH_NAME in done.stdout
    assert (tmp_path / shim.PTH_NAME).exists()


def test_a_third_party_library_runs_on_onyx():
    """onnxscript's eager mode imports onnxruntime, builds an InferenceSession per op and catches
    onnxruntime.capi.onnxruntime_pybind11_state's errors: with onyx installed, onyx serves all of it."""
    pytest.importorskip("onnxscript")
    out = _python(
        """
        import onyx
        onyx.install_as_onnxruntime(force=True)
        runs = []
        real_run = onyx.InferenceSession.run

        def counting_run(self, *args, **kwargs):
            runs.append(1)
            return real_run(self, *args, **kwargs)

        onyx.InferenceSession.run = counting_run
        import numpy as np
        from onnxscript import opset18 as op

        x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
        got = op.Relu(op.MatMul(x, x))
        want = np.maximum(x @ x, 0)
        assert np.allclose(np.asarray(got.value), want), (got, want)
        try:
            op.Reshape(np.ones(4, np.float32), np.array([3], np.int64))  # onnxscript catches onyx's error
        except Exception as e:
            kind = type(e).__name__
        import onnxruntime
        print(onnxruntime.__name__, len(runs) >= 2, kind)
        """
    )
    assert out == "onyx True EagerModeError"
