"""A classifier trained here keeps its accuracy under static int8; report() ranks the noise per tensor."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("skl2onnx")
from skl2onnx import to_onnx  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402

import onyx  # noqa: E402
import onyx.quantization as yq  # noqa: E402

from ._models import ListReader, batches, cnn_model  # noqa: E402


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    X, y = load_digits(return_X_y=True)
    X = (X / 16).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier((64,), max_iter=60, random_state=0).fit(X[:1200], y[:1200])
    path = tmp_path_factory.mktemp("digits") / "mlp.onnx"
    path.write_bytes(to_onnx(clf, X[:1], options={"zipmap": False}, target_opset=17).SerializeToString())
    return str(path), X, y


def _accuracy(path, X, y):
    label = onyx.InferenceSession(path).run(["label"], {"X": X})[0]
    return float((label == y).mean())


@pytest.mark.parametrize(
    "fmt,per_channel", [("QDQ", False), ("QDQ", True), ("QOperator", False), ("QOperator", True)]
)
def test_static_int8_keeps_accuracy(digits, tmp_path, fmt, per_channel):
    path, X, y = digits
    calib = ListReader([{"X": X[i : i + 100]} for i in range(0, 1200, 100)])
    out = str(tmp_path / "q.onnx")
    yq.quantize_static(
        path,
        out,
        calib,
        quant_format=yq.QuantFormat[fmt],
        per_channel=per_channel,
        activation_type=yq.QuantType.QUInt8,
    )
    test_x, test_y = X[1200:], y[1200:]
    base = _accuracy(path, test_x, test_y)
    assert base > 0.85
    assert _accuracy(out, test_x, test_y) >= base - 0.01


def test_report_qdq_worst_first(tmp_path):
    model = cnn_model(tmp_path / "cnn.onnx", dyadic=False)
    data = batches(whole=False)
    out = tmp_path / "q.onnx"
    yq.quantize_static(model, out, ListReader(data), activation_type=yq.QuantType.QUInt8)
    rows = yq.report(model, out, ListReader(data))
    names = {r.name for r in rows}
    assert {"r1", "p1", "r2", "g", "m", "y"} <= names
    sqnr = [r.sqnr_db for r in rows]
    assert sqnr == sorted(sqnr)
    assert all(np.isfinite(s) and 15 < s < 60 for s in sqnr)  # 8-bit: about 6 dB per bit at best
    by_name = {r.name: r for r in rows}
    assert by_name["g"].quantized_name == "g_DequantizeLinear_Output"
    assert by_name["y"].quantized_name == "y"
    # the SQNR is what its definition says, on the same feeds
    fo = onyx.InferenceSession(str(model)).run(None, data[0])[0].astype(np.float64)
    qo = onyx.InferenceSession(str(out)).run(None, data[0])[0].astype(np.float64)
    one = yq.report(model, out, data[0])
    want = 10 * np.log10(np.sum(fo**2) / np.sum((fo - qo) ** 2))
    assert {r.name: r for r in one}["y"].sqnr_db == pytest.approx(want, rel=1e-9)


def test_report_qoperator_dequantizes_renamed_tensors(tmp_path):
    model = cnn_model(tmp_path / "cnn.onnx", dyadic=False)
    data = batches(whole=False)
    out = tmp_path / "q.onnx"
    yq.quantize_static(
        model,
        out,
        ListReader(data),
        quant_format=yq.QuantFormat.QOperator,
        activation_type=yq.QuantType.QUInt8,
        op_types_to_quantize=["Conv", "MatMul", "Relu", "MaxPool", "Reshape"],
    )
    rows = {r.name: r for r in yq.report(model, out, data)}
    # Relu folded into QLinearConv: the conv's quantized output stands for the Relu's output
    assert rows["r1"].quantized_name == "c1_quantized"
    assert "c1" not in rows
    assert rows["p1"].quantized_name == "p1_quantized"
    assert all(r.sqnr_db > 15 for r in rows.values())


def test_dynamic_report_and_preprocess(tmp_path):
    model = cnn_model(tmp_path / "cnn.onnx", dyadic=False)
    pre = tmp_path / "pre.onnx"
    yq.quant_pre_process(model, pre)
    m = onyx.load(pre)
    assert ("onnx.quant.pre_process", "onnxruntime.quant") in m.metadata_props
    feeds = batches(1, whole=False)[0]
    np.testing.assert_allclose(
        onyx.InferenceSession(str(pre)).run(None, feeds)[0],
        onyx.InferenceSession(model).run(None, feeds)[0],
        rtol=1e-5,
        atol=1e-5,
    )
    out = tmp_path / "d.onnx"
    yq.quantize_dynamic(pre, out)
    rows = yq.report(pre, out, [feeds])
    assert rows and all(r.sqnr_db > 20 for r in rows)
