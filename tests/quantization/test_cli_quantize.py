"""``onyx quantize``: the modes, the calibration folder, the report, and its errors."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from onyx.cli import main

from ._models import batches, cnn_model


@pytest.fixture()
def setup(tmp_path):
    model = cnn_model(tmp_path / "cnn.onnx", dyadic=False)
    calib = tmp_path / "calib"
    calib.mkdir()
    for i, feeds in enumerate(batches(3, whole=False)):
        np.savez(calib / f"b{i}.npz", **feeds)
    return model, calib, tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["--mode", "dynamic"],
        ["--mode", "static", "--per-channel"],
        ["--mode", "static", "--format", "qoperator"],
        ["--mode", "static", "--method", "Percentile"],
    ],
)
def test_modes_write_models_that_run(setup, args, capsys):
    model, calib, tmp = setup
    out = tmp / "q.onnx"
    assert main(["quantize", model, str(out), *args, "--calibration", str(calib)]) == 0
    assert "written" in capsys.readouterr().out
    feeds = batches(1, whole=False)[0]
    y = ort.InferenceSession(str(out)).run(None, feeds)[0]
    ref = ort.InferenceSession(model).run(None, feeds)[0]
    assert np.abs(y - ref).max() < 0.1 * np.abs(ref).max()


def test_report_prints_worst_first(setup, capsys):
    model, calib, tmp = setup
    assert (
        main(
            [
                "quantize",
                model,
                str(tmp / "q.onnx"),
                "--mode",
                "static",
                "--calibration",
                str(calib),
                "--report",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("tensor"))) + 1 :]
    values = [float(x.split()[-1]) for x in table]
    assert len(values) >= 5 and values == sorted(values)


def test_int4_mode(setup, capsys):
    pytest.importorskip("onyx.quantization.matmul_nbits_quantizer")
    model, _, tmp = setup
    out = tmp / "q4.onnx"
    assert main(["quantize", model, str(out), "--mode", "int4", "--block-size", "16"]) == 0
    assert out.exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--mode", "static"], "needs --calibration"),
        (["--mode", "dynamic", "--report"], "--report needs --calibration"),
        (["--mode", "static", "--calibration", "/nonexistent/dir"], "does not exist"),
    ],
)
def test_errors_are_one_line(setup, args, message, capsys):
    model, _, tmp = setup
    assert main(["quantize", model, str(tmp / "q.onnx"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp / "q.onnx").exists()


def test_bad_calibration_files(setup, capsys):
    model, calib, tmp = setup
    empty = tmp / "empty"
    empty.mkdir()
    assert (
        main(["quantize", model, str(tmp / "q.onnx"), "--mode", "static", "--calibration", str(empty)]) == 2
    )
    assert "no .npz" in capsys.readouterr().err
    (calib / "b9.npz").write_bytes(b"not a zip")
    assert (
        main(["quantize", model, str(tmp / "q.onnx"), "--mode", "static", "--calibration", str(calib)]) == 2
    )
    assert "b9.npz" in capsys.readouterr().err
    np.savez(calib / "b9.npz", image=np.zeros((1, 1, 8, 8), np.float32))
    assert (
        main(["quantize", model, str(tmp / "q.onnx"), "--mode", "static", "--calibration", str(calib)]) == 2
    )
    assert "'image'" in capsys.readouterr().err
    assert main(["quantize", str(tmp / "none.onnx"), str(tmp / "q.onnx")]) == 2
    assert not (tmp / "q.onnx").exists()
