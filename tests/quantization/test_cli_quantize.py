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


def test_float8_writes_onnxruntimes_model(setup):
    """--activation-type and --weight-type QFLOAT8E4M3FN, --method Distribution: the initializers
    onnxruntime's quantize_static writes from the same batches (float8's std-based scales are coarse on
    this small model: the comparison is with onnxruntime's own float8 result, not with the float model)."""
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import CalibrationMethod, QuantType, quantize_static

    from ._models import ListReader

    model, calib, tmp = setup
    out, want = tmp / "q.onnx", tmp / "ort.onnx"
    f8 = ["--activation-type", "QFLOAT8E4M3FN", "--weight-type", "QFLOAT8E4M3FN"]
    assert main(["quantize", model, str(out), "--mode", "static", "--method", "Distribution", *f8,
                 "--calibration", str(calib)]) == 0  # fmt: skip
    quantize_static(
        model, str(want), ListReader(batches(3, whole=False)), activation_type=QuantType.QFLOAT8E4M3FN,
        weight_type=QuantType.QFLOAT8E4M3FN, calibrate_method=CalibrationMethod.Distribution,
    )  # fmt: skip

    def values(path):
        return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}

    got, ref = values(out), values(want)
    assert got.keys() == ref.keys()
    for name in ref:
        assert got[name].dtype == ref[name].dtype, name
        if name.endswith("_scale") and got[name].dtype == np.float32:
            # an activation's histogram statistics: float32 sums in another order, about one ulp apart
            np.testing.assert_array_max_ulp(got[name], ref[name], maxulp=2)
        else:  # weights, biases and zero points: the same bytes
            assert got[name].tobytes() == ref[name].tobytes(), name


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


def test_int4_mode_quantizes_embedding_tables(tmp_path):
    """--op-types MatMul,Gather: the table becomes a GatherBlockQuantized, the MatMul a MatMulNBits, and
    onnxruntime runs the result close to the float model."""
    from onnx import TensorProto, helper, numpy_helper

    import onyx

    rng = np.random.default_rng(3)
    table = numpy_helper.from_array(rng.standard_normal((50, 64)).astype(np.float32), "table")
    w = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 32])],
        [table, w],
    )
    model = tmp_path / "m.onnx"
    model.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    out = tmp_path / "q4.onnx"
    args = ["--mode", "int4", "--block-size", "32", "--symmetric", "--op-types", "MatMul,Gather"]
    assert main(["quantize", str(model), str(out), *args]) == 0
    ops = {n.op_type for n in onyx.load(str(out)).graph.nodes}
    assert {"GatherBlockQuantized", "MatMulNBits"} <= ops and not {"Gather", "MatMul"} & ops
    feeds = {"ids": rng.integers(0, 50, (2, 5))}
    y = ort.InferenceSession(str(out)).run(None, feeds)[0]
    ref = ort.InferenceSession(str(model)).run(None, feeds)[0]
    assert np.abs(y - ref).max() < 0.2 * np.abs(ref).max()  # 4-bit blocks: a few steps of 1/8 per weight


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
