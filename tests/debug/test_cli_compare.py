"""``onyx compare``: JSON on stdout, exit 0 on agreement, 1 on divergence, 2 on errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onyx
from onyx.cli import main

from ._models import bert_layer
from .test_compare import X, with_changed_weight


@pytest.fixture
def models(tmp_path):
    a, b = str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")
    onyx.save(bert_layer(), a)
    onyx.save(with_changed_weight(bert_layer(), "w2", (3, 5)), b)
    x = str(tmp_path / "x.npy")
    np.save(x, X)
    return a, b, x


def test_changed_weight_json_names_the_node_and_exits_1(models, capsys):
    a, b, x = models
    assert main(["compare", a, b, "--input", f"x={x}", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)  # exactly one JSON object
    first = doc["first_divergence"]
    assert (first["node"], first["op_type"], first["value"]) == ("mm2_node", "MatMul", "mm2")
    assert first["mismatches"] > 0 and first["max_abs"] > 0 and 0 < first["mismatch_fraction"] <= 1
    assert {"name", "node", "op_type", "max_abs", "max_rel", "mismatches", "cosine"} <= set(doc["values"][0])
    assert doc["values"][0]["agreed"] is False


def test_text_report(models, capsys):
    a, b, x = models
    assert main(["compare", a, b, "-i", f"x={x}", "--top", "3"]) == 1
    out = capsys.readouterr().out
    assert "first divergence: node 'mm2_node' (MatMul)" in out and "inputs that already differ: w2" in out


def test_model_against_onnxruntime_agrees_and_exits_0(models, capsys):
    a, _, x = models
    assert main(["compare", a, "--input", f"x={x}", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["first_divergence"] is None and doc["agreed"] is True and len(doc["values"]) == 19


def test_random_inputs_with_dims_and_seed(models, capsys):
    a, b, _ = models
    assert main(["compare", a, "--against", "reference", "--dim", "batch=3", "--seed", "7", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert next(v for v in doc["values"] if v["name"] == "y")["shape"] == [3, 4, 16]
    assert main(["compare", a, b, "--json"]) == 1  # random inputs still show the changed weight
    assert json.loads(capsys.readouterr().out)["first_divergence"]["node"] == "mm2_node"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "x"], "--input expects NAME=FILE.npy"),
        (["--input", "x=/nonexistent.npy"], "does not exist"),
        (["--dim", "batch"], "--dim expects NAME=VALUE"),
        (["--dim", "batch=two"], "must be an integer"),
        (["--dim", "bacth=2"], "unknown dimension name"),
        (["--against", "onyx"], "give a second model"),
    ],
)
def test_bad_arguments_exit_2(models, capsys, argv, message):
    a, _, _ = models
    assert main(["compare", a, *argv]) == 2
    assert message in capsys.readouterr().err


def test_bad_files_exit_2(models, tmp_path, capsys):
    a, _, x = models
    assert main(["compare", a, str(tmp_path / "missing.onnx")]) == 2
    assert "missing.onnx" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    assert main(["compare", a, str(corrupt)]) == 2
    assert "InvalidProtobuf" in capsys.readouterr().err
    other = str(tmp_path / "other.onnx")
    m = bert_layer()
    m.graph.inputs[0].name = "tokens"
    onyx.save(m, other)
    assert main(["compare", a, other]) == 2
    assert "different inputs" in capsys.readouterr().err
    bad_npy = tmp_path / "bad.npy"
    bad_npy.write_bytes(b"not numpy")
    assert main(["compare", a, "--input", f"x={bad_npy}"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["compare", a, "--input", f"x={x}", "--input", f"nope={x}"]) == 2
    assert "unknown input name" in capsys.readouterr().err
