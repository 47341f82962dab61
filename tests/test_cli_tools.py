"""onyx profile, optimize and bench on small models: their tables, the trace in onnxruntime's event format,
optimized files that compute what the original did, the ratio against onnxruntime, and bad input."""

from __future__ import annotations

import json
import os
import re
import sys

import numpy as np
import onnxruntime as ort
import pytest

import onyx
from onyx.cli import main
from onyx.ir.builder import GraphBuilder

X = np.random.default_rng(1).standard_normal((2, 4, 16)).astype(np.float32)


def _gelu_mlp(path) -> str:
    """MatMul + Add + Gelu (erf form) + Identity + MatMul: basic removes the Identity, extended fuses Gelu."""
    rng = np.random.default_rng(0)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["batch", 4, 16])
    w1 = b.initializer("w1", rng.standard_normal((16, 32)).astype(np.float32) * 0.3)
    b1 = b.initializer("b1", rng.standard_normal(32).astype(np.float32) * 0.1)
    w2 = b.initializer("w2", rng.standard_normal((32, 8)).astype(np.float32) * 0.3)
    c = lambda v, n: b.initializer(n, np.array(v, np.float32))  # noqa: E731
    fc1 = b.op("Add", b.op("MatMul", x, w1, name="mm1"), b1, name="fc1")
    erf = b.op("Erf", b.op("Div", fc1, c(np.sqrt(2.0), "sqrt2"), name="div"), name="erf")
    one = b.op("Add", erf, c(1.0, "one"), name="add_one")
    gelu = b.op("Mul", b.op("Mul", fc1, one, name="mul"), c(0.5, "half"), name="gelu")
    same = b.op("Identity", gelu, name="identity")
    b.output(b.op("MatMul", same, w2, name="mm2"), "y")
    onyx.save(b.model(), str(path))
    return str(path)


@pytest.fixture
def model(tmp_path):
    return _gelu_mlp(tmp_path / "mlp.onnx")


def _ort_trace(model_path, tmp_path, x):
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "ort")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    s.run(None, {"x": x})
    return json.loads(open(s.end_profiling()).read())


# -- profile -----------------------------------------------------------------------------------------------
def test_profile_prints_tables_and_writes_ort_format_trace(model, tmp_path, capsys):
    np.save(tmp_path / "x.npy", X)
    trace = tmp_path / "trace.json"
    args = [
        "profile",
        model,
        "--runs",
        "3",
        "-i",
        f"x={tmp_path / 'x.npy'}",
        "-o",
        str(trace),
        "--level",
        "disabled",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "op type" in out and "share" in out and "calls" in out and "mean us" in out
    assert "top 9 nodes" in out and "mm1" in out and "[2,4,16] [16,32]" in out  # input shapes of mm1
    events = json.loads(trace.read_text())
    nodes = [e for e in events if e["cat"] == "Node"]
    assert len(nodes) == 3 * 9 and sum(e["name"] == "model_run" for e in events) == 3
    ours = {e["name"]: e for e in nodes}
    theirs = {e["name"]: e for e in _ort_trace(model, tmp_path, X) if e["cat"] == "Node"}
    assert set(ours) == set(theirs)  # the same "<node>_kernel_time" names
    for name, e in theirs.items():
        mine = ours[name]
        assert set(mine) == set(e)  # cat, pid, tid, dur, ts, ph, name, args
        assert mine["ph"] == "X" and isinstance(mine["ts"], int) and isinstance(mine["dur"], int)
        keys = {"op_name", "provider", "node_index", "input_type_shape", "output_type_shape"}
        keys |= {"activation_size", "parameter_size", "output_size"}
        assert keys <= set(e["args"]) and keys <= set(mine["args"])
        for k in ("op_name", "node_index", "output_type_shape", "output_size"):
            assert mine["args"][k] == e["args"][k], (name, k)
    # onnxruntime lists the non-weight inputs as we do (weights it prepacks are left out of its list)
    assert (
        ours["erf_kernel_time"]["args"]["input_type_shape"]
        == theirs["erf_kernel_time"]["args"]["input_type_shape"]
    )
    assert ours["mm1_kernel_time"]["args"]["input_type_shape"] == [{"float": [2, 4, 16]}, {"float": [16, 32]}]
    assert ours["mm1_kernel_time"]["args"]["parameter_size"] == str(16 * 32 * 4)


def test_profile_leaves_warmup_runs_out_of_the_trace(model, tmp_path, capsys):
    for warmup in (0, 2):
        trace = tmp_path / f"t{warmup}.json"
        assert main(["profile", model, "--runs", "2", "--warmup", str(warmup), "-o", str(trace)]) == 0
        events = json.loads(trace.read_text())
        runs = [e for e in events if e["name"] == "model_run"]
        assert len(runs) == 2
        first = min(r["ts"] for r in runs)
        assert all(e["ts"] >= first for e in events)
    assert "calls" in capsys.readouterr().out


def test_profile_random_inputs_with_named_dims(model, capsys):
    assert main(["profile", model, "--runs", "2", "--dim", "batch=3"]) == 0
    assert "[3,4,16]" in capsys.readouterr().out  # batch=3, the rest as declared


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--input", "nope=x.npy"], "does not exist"),
        (["--input", "noequals"], "NAME=FILE"),
        (["--dim", "batch"], "NAME=V"),
        (["--dim", "seq=2"], "symbolic dims are ['batch']"),
        (["--runs", "0"], "at least 1"),
        (["--warmup", "-1"], "at least 0"),
        (["--level", "turbo"], "unknown level"),
        (["-o", "/no/such/folder/trace.json"], "does not exist"),
    ],
)
def test_profile_bad_input(model, extra, message, capsys):
    assert main(["profile", model, *extra]) == 2
    assert message in capsys.readouterr().err


def test_profile_bad_input_name_and_dtype(model, tmp_path, capsys):
    np.save(tmp_path / "x.npy", X)
    assert main(["profile", model, "-i", f"wrong={tmp_path / 'x.npy'}"]) == 2
    assert "wrong" in capsys.readouterr().err
    np.save(tmp_path / "x64.npy", X.astype(np.float64))
    assert main(["profile", model, "-i", f"x={tmp_path / 'x64.npy'}"]) == 2
    assert "tensor(double)" in capsys.readouterr().err
    assert main(["profile", str(tmp_path / "missing.onnx")]) == 2
    assert "NoSuchFile" in capsys.readouterr().err
    assert main(["profile", model, "-o", str(tmp_path)]) == 2  # a folder, not a file
    assert "is a folder" in capsys.readouterr().err


# -- optimize ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["basic", "extended", "all"])
def test_optimize_saves_a_model_that_computes_the_same(model, tmp_path, level, capsys):
    out_path = tmp_path / f"mlp.{level}.onnx"
    before = open(model, "rb").read()
    assert main(["optimize", model, str(out_path), "--level", level]) == 0
    out = capsys.readouterr().out
    assert f"level {level}" in out and "9 nodes ->" in out and "saved:" in out
    assert "eliminate_identity" in out  # the per-pass table names each pass run
    assert open(model, "rb").read() == before  # the input is untouched
    optimized = onyx.load(str(out_path))
    assert len(optimized.graph.nodes) < 9
    if level != "basic":
        assert "BiasGelu" in [n.op_type for n in optimized.graph.nodes], "extended fuses Add + erf Gelu"
    plain = onyx.SessionOptions()
    plain.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]
    got = onyx.InferenceSession(str(out_path), plain).run(None, {"x": X})[0]
    # two GEMMs of 16 and 32 terms in float32, summed in another order: a few eps of the magnitudes
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if level == "basic":  # standard ops only: onnxruntime runs it too
        theirs = ort.InferenceSession(str(out_path), providers=["CPUExecutionProvider"]).run(None, {"x": X})[
            0
        ]
        np.testing.assert_allclose(theirs, expected, rtol=1e-5, atol=1e-5)


def test_optimize_per_pass_counts_add_up(model, tmp_path, capsys):
    assert main(["optimize", model, str(tmp_path / "o.onnx"), "--level", "extended"]) == 0
    lines = capsys.readouterr().out.splitlines()
    before, after = (
        int(w) for w in re.match(r"level extended \(2\): (\d+) nodes -> (\d+) nodes", lines[0]).groups()
    )
    table = lines[2 : lines.index(next(line for line in lines if line.startswith("(")))]
    assert [line.split()[0] for line in table] == ["eliminate_identity", "gelu_fusion", "bias_gelu_fusion"]
    assert sum(int(line.split()[-1]) for line in table) == before - after


def test_optimize_bad_input(model, tmp_path, capsys):
    assert main(["optimize", model, model]) == 2  # never over its input
    assert "is the input model" in capsys.readouterr().err
    os.symlink(model, tmp_path / "link.onnx")
    assert main(["optimize", model, str(tmp_path / "link.onnx")]) == 2
    assert "is the input model" in capsys.readouterr().err
    assert main(["optimize", model, str(tmp_path / "o.onnx"), "--level", "max"]) == 2
    assert "unknown level 'max'" in capsys.readouterr().err
    assert main(["optimize", str(tmp_path / "missing.onnx"), str(tmp_path / "o.onnx")]) == 2
    assert "NoSuchFile" in capsys.readouterr().err
    assert main(["optimize", model, str(tmp_path / "no" / "o.onnx")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "corrupt.onnx").write_bytes(b"\x0a\xff\xff\xff")
    assert main(["optimize", str(tmp_path / "corrupt.onnx"), str(tmp_path / "o.onnx")]) == 2
    assert "InvalidProtobuf" in capsys.readouterr().err
    assert not (tmp_path / "o.onnx").exists()


# -- bench -------------------------------------------------------------------------------------------------
def test_bench_against_onnxruntime_prints_latencies_and_ratio(model, capsys):
    args = ["bench", model, "--runs", "4", "--warmup", "1", "--batch", "3", "--threads", "1"]
    assert main([*args, "--against", "onnxruntime"]) == 0
    out = capsys.readouterr().out
    for word in ("session ms", "p50 ms", "p90 ms", "p99 ms", "mean ms", "rows/s", "onyx", "onnxruntime"):
        assert word in out
    assert "4 runs of 3 row(s)" in out
    assert "ratio onyx/onnxruntime:" in out


def test_bench_alone_and_with_given_input(model, tmp_path, capsys):
    np.save(tmp_path / "x.npy", X)
    assert main(["bench", model, "--runs", "2", "--warmup", "0", "-i", f"x={tmp_path / 'x.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "2 runs of 2 row(s)" in out and "ratio" not in out and "onnxruntime" not in out


def test_bench_bad_input(model, tmp_path, capsys, monkeypatch):
    assert main(["bench", model, "--runs", "0"]) == 2
    assert "--runs must be >= 1" in capsys.readouterr().err
    assert main(["bench", str(tmp_path / "missing.onnx")]) == 2
    assert "NoSuchFile" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: only known peers
        main(["bench", model, "--against", "tensorrt"])
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    assert main(["bench", model, "--runs", "1", "--against", "onnxruntime"]) == 2
    assert "needs the onnxruntime package" in capsys.readouterr().err


# -- help --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["view", "profile", "optimize", "bench"])
def test_help_has_an_example(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"onyx {command} model.onnx" in out
