"""What a user can get wrong gives onyx's own errors, and never a partial output file."""

from __future__ import annotations

import numpy as np
import pytest

import onyx.quantization as yq
from onyx.errors import InvalidArgument, InvalidProtobuf, NoSuchFile, OnyxError

from ._models import ListReader, batches, cnn_model


@pytest.fixture()
def model(tmp_path):
    return cnn_model(tmp_path / "cnn.onnx")


def _static(model, out, **kw):
    reader = kw.pop("reader", None) or ListReader(batches())
    yq.quantize_static(model, out, reader, **kw)


def test_missing_model_file(tmp_path):
    out = tmp_path / "out.onnx"
    with pytest.raises(NoSuchFile):
        yq.quantize_dynamic(tmp_path / "nope.onnx", out)
    with pytest.raises(NoSuchFile):
        _static(tmp_path / "nope.onnx", out)
    assert not out.exists()


def test_corrupt_model_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff garbage")
    with pytest.raises(InvalidProtobuf):
        yq.quantize_dynamic(bad, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def test_output_folder_missing(model, tmp_path):
    with pytest.raises(NoSuchFile):
        yq.quantize_dynamic(model, tmp_path / "no" / "out.onnx")
    with pytest.raises(InvalidArgument):
        yq.quantize_dynamic(model, tmp_path)  # a directory


def test_reader_with_wrong_input_names(model, tmp_path):
    out = tmp_path / "out.onnx"
    reader = ListReader([{"image": np.zeros((1, 1, 8, 8), np.float32)}])
    with pytest.raises(InvalidArgument, match="'image'.*inputs are 'x'"):
        _static(model, out, reader=reader)
    with pytest.raises(InvalidArgument, match="expected a dict"):
        _static(model, out, reader=ListReader([[np.zeros((1, 1, 8, 8), np.float32)]]))
    assert not out.exists()


class _Nothing:
    def get_next(self):
        return None


def test_reader_errors(model, tmp_path):
    out = tmp_path / "out.onnx"
    with pytest.raises(InvalidArgument, match="calibration_data_reader"):
        yq.quantize_static(model, out, None)
    with pytest.raises(InvalidArgument, match="no batch"):
        _static(model, out, reader=_Nothing())
    with pytest.raises(OnyxError):
        _static(model, out, reader=ListReader([{"x": np.zeros((1, 3, 8, 8), np.float32)}]))  # wrong shape
    assert not out.exists()


def test_unknown_op_types_and_nodes(model, tmp_path):
    out = tmp_path / "out.onnx"
    with pytest.raises(InvalidArgument, match="'NotAnOp'"):
        _static(model, out, op_types_to_quantize=["Conv", "NotAnOp"])
    with pytest.raises(InvalidArgument, match="'Softmax'"):
        yq.quantize_dynamic(model, out, op_types_to_quantize=["Softmax"])
    with pytest.raises(InvalidArgument, match="'conv9'"):
        _static(model, out, nodes_to_quantize=["conv1", "conv9"])
    with pytest.raises(InvalidArgument, match="'ghost'"):
        yq.quantize_dynamic(model, out, nodes_to_exclude=["ghost"])
    with pytest.raises(InvalidArgument, match="'nothere'"):
        _static(model, out, extra_options={"TensorQuantOverrides": {"nothere": [{"symmetric": True}]}})
    with pytest.raises(InvalidArgument, match="'Typo'"):
        _static(model, out, extra_options={"Typo": True})
    assert not out.exists()


def test_bad_type_and_format_combinations(model, tmp_path):
    out = tmp_path / "out.onnx"
    with pytest.raises(InvalidArgument, match="QOperator"):
        _static(model, out, quant_format=yq.QuantFormat.QOperator, activation_type=yq.QuantType.QUInt16)
    with pytest.raises(InvalidArgument, match="QUInt8"):
        _static(model, out, activation_type=yq.QuantType.QInt8, weight_type=yq.QuantType.QUInt8)
    with pytest.raises(InvalidArgument, match="not a QuantType"):
        _static(model, out, activation_type="int8")
    with pytest.raises(InvalidArgument, match="QuantFormat"):
        _static(model, out, quant_format="QDQQ")
    with pytest.raises(InvalidArgument, match="dynamic"):
        yq.quantize_dynamic(model, out, weight_type=yq.QuantType.QInt16)
    with pytest.raises(InvalidArgument, match="Distribution"):  # float8 needs Distribution calibration
        _static(
            model, out, activation_type=yq.QuantType.QFLOAT8E4M3FN, weight_type=yq.QuantType.QFLOAT8E4M3FN
        )
    with pytest.raises(InvalidArgument, match="StaticQuantConfig"):
        yq.quantize(model, out, {"per_channel": True})
    with pytest.raises(InvalidArgument):
        yq.quantize_dynamic(object(), out)
    assert not out.exists()


def test_failure_keeps_an_existing_output_intact(model, tmp_path):
    out = tmp_path / "out.onnx"
    out.write_bytes(b"previous")
    with pytest.raises(InvalidArgument):
        _static(model, out, reader=ListReader([{"wrong": np.zeros(1, np.float32)}]))
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cnn.onnx", "out.onnx"]
