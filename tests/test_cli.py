"""The onyx command: info, run (shipped model and given inputs), check, ops, and its errors."""

import numpy as np
import pytest

from onyx.cli import main, shipped_model


def test_info_lists_inputs_outputs_ops(capsys):
    model, _ = shipped_model()
    assert main(["info", model]) == 0
    out = capsys.readouterr().out
    assert "input: tensor(float)[?, 64]" in out
    assert "label: tensor(int64)" in out
    assert "ai.onnx.ml::LinearClassifier" in out
    assert "opsets:" in out and "parameters:" in out


def test_run_with_inputs_saves_outputs(tmp_path, capsys):
    model, samples = shipped_model()
    x = np.load(samples)["x"][:5]
    np.save(tmp_path / "x.npy", x)
    assert (
        main(["run", model, "--input", f"input={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path / "out")])
        == 0
    )
    label = np.load(tmp_path / "out" / "label.npy")
    assert label.shape == (5,) and label.dtype == np.int64


def test_run_never_overwrites_existing_outputs_without_force(tmp_path, capsys):
    model, samples = shipped_model()
    np.save(tmp_path / "x.npy", np.load(samples)["x"][:2])
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "label.npy", np.arange(3))
    args = ["run", model, "--input", f"input={tmp_path / 'x.npy'}", "--output-dir", str(out)]
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(out / "label.npy"), np.arange(3))  # the user's file is intact
    assert main([*args, "--force"]) == 0
    assert np.load(out / "label.npy").shape == (2,)


def test_run_reports_bad_input_name(tmp_path, capsys):
    model, samples = shipped_model()
    np.save(tmp_path / "x.npy", np.load(samples)["x"][:1])
    assert main(["run", model, "--input", f"nope={tmp_path / 'x.npy'}"]) == 2
    err = capsys.readouterr().err
    assert "InvalidArgument" in err and "'nope'" in err


def test_run_reports_wrong_dtype(tmp_path, capsys):
    model, _ = shipped_model()
    np.save(tmp_path / "x.npy", np.zeros((1, 64), np.float64))
    assert main(["run", model, "--input", f"input={tmp_path / 'x.npy'}"]) == 2
    err = capsys.readouterr().err  # onnxruntime's wording, naming the input
    assert "Actual: (tensor(double)) , expected: (tensor(float))" in err and "'input'" in err


@pytest.mark.parametrize("args", [["info", "/no/such/model.onnx"], ["run", "/no/such/model.onnx"]])
def test_missing_model_is_a_clean_error(args, capsys):
    assert main(args) == 2
    assert "NoSuchFile" in capsys.readouterr().err


def test_corrupt_model_is_a_clean_error(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0fgarbage")
    assert main(["info", str(bad)]) == 2
    assert "InvalidProtobuf" in capsys.readouterr().err


def test_check_and_ops(capsys):
    model, _ = shipped_model()
    assert main(["check", model]) == 0
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert "ai.onnx::Conv" in out and "ai.onnx.ml::TreeEnsembleClassifier" in out


def test_every_command_has_help_with_an_example(capsys):
    from onyx.cli import COMMANDS

    for name in COMMANDS:
        with pytest.raises(SystemExit) as exit_:
            main([name.replace("_", "-"), "--help"])
        assert exit_.value.code == 0
        assert "example:\n  onyx " in capsys.readouterr().out, name


def test_debug_shows_the_traceback_instead_of_one_line(capsys):
    from onyx.errors import NoSuchFile

    assert main(["run", "/no/such/model.onnx"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(NoSuchFile):
        main(["--debug", "run", "/no/such/model.onnx"])
    with pytest.raises(NoSuchFile):
        main(["run", "/no/such/model.onnx", "--debug"])
