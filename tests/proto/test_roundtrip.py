"""Load -> save round trips against the onnx package: the node suite, the shipped models, test data, and
a torch export with external data."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onyx
from tests.proto._corpus import node_cases, shipped_models, shipped_tensors, short


def test_node_suite_round_trip():
    cases = node_cases()
    assert len(cases) >= 1884
    failures = []
    for name, data in cases:
        try:
            out = onyx.serialize(onyx.load(data))
        except onyx.OnyxError as e:  # pragma: no cover - reported below
            failures.append(f"{name}: {type(e).__name__}: {e}")
            continue
        original = onnx.ModelProto.FromString(data)
        if onnx.ModelProto.FromString(out) != original:
            failures.append(f"{name}: the re-serialized model differs")
    assert not failures, "\n".join(failures[:50])


def test_node_suite_bytes_are_identical():
    # onnx writes fields in field-number order and so does onyx: canonical input comes back byte for
    # byte, a stronger property than message equality (stable hashes, reproducible files).
    differ = [name for name, data in node_cases() if onyx.serialize(onyx.load(data)) != data]
    assert not differ, differ[:20]


@pytest.mark.parametrize("path", shipped_models(), ids=short)
def test_shipped_model_round_trip(path, tmp_path):
    out = tmp_path / "model.onnx"
    onyx.save(onyx.load(path), out)
    assert onnx.load(str(out)) == onnx.load(path)
    assert out.read_bytes() == open(path, "rb").read()


@pytest.mark.parametrize("path", shipped_tensors(), ids=short)
def test_shipped_test_data(path):
    expected = numpy_helper.to_array(onnx.load_tensor(path))
    got = onyx.load_tensor(path)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if expected.dtype.kind in "fc":
        np.testing.assert_array_equal(got, expected)  # NaN == NaN here
    else:
        assert np.array_equal(got, expected)


def test_shipped_corpus_is_complete():
    assert len(shipped_models()) >= 149
    assert len(shipped_tensors()) >= 300


# ---------------------------------------------------------------------------------------------
# A torch export with external data


class _Net:
    @staticmethod
    def build():
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
                self.bn = torch.nn.BatchNorm2d(8)
                self.fc = torch.nn.Linear(8 * 6 * 6, 10)
                self.emb = torch.nn.Parameter(torch.randn(10, 4))

            def forward(self, x):
                y = torch.relu(self.bn(self.conv(x)))
                return self.fc(y.flatten(1)) @ self.emb

        torch.manual_seed(0)
        net = Net()
        with torch.no_grad():
            for p in net.parameters():
                p.copy_(torch.randn_like(p) * 0.1)
            net.bn.running_mean.copy_(torch.randn(8) * 0.1)
            net.bn.running_var.copy_(torch.rand(8) + 0.5)
        return net.eval()


@pytest.fixture(scope="module")
def torch_external(tmp_path_factory):
    """(folder, model path, input) of a torch export saved with every tensor in 'w.data'."""
    torch = pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("torch_ext")
    net = _Net.build()
    x = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(1))
    exported = folder / "exported.onnx"
    torch.onnx.export(net, (x,), str(exported), dynamo=False, input_names=["x"], output_names=["y"])
    proto = onnx.load(str(exported))
    path = folder / "model.onnx"
    onnx.save(
        proto,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="w.data",
        size_threshold=0,
    )
    exported.unlink()
    assert (folder / "w.data").stat().st_size > 0
    return folder, path, x.numpy()


def test_torch_external_data_round_trip(torch_external, tmp_path):
    folder, path, _ = torch_external
    reference = onnx.load(str(path))  # external data read into the message
    model = onyx.load(path)

    inline = tmp_path / "inline.onnx"
    onyx.save(model, inline)
    assert onnx.load(str(inline)) == reference
    assert not any(
        t.external_data for t in onnx.load(str(inline), load_external_data=False).graph.initializer
    )

    ext = tmp_path / "ext.onnx"
    onyx.save(model, ext, save_as_external_data=True)
    assert (tmp_path / "ext.onnx.data").exists()
    assert onnx.load(str(ext)) == reference
    stripped = onnx.load(str(ext), load_external_data=False)
    for t in stripped.graph.initializer:  # the default size_threshold is 1024 bytes, as in onnx
        big = len(
            onnx.numpy_helper.to_array(
                next(r for r in reference.graph.initializer if r.name == t.name)
            ).tobytes()
        )
        assert (t.data_location == onnx.TensorProto.EXTERNAL) == (big >= 1024), t.name

    every = tmp_path / "every.onnx"
    onyx.save(model, every, save_as_external_data=True, location="w.data", size_threshold=0)
    stripped = onnx.load(str(every), load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in stripped.graph.initializer)
    assert onnx.load(str(every)) == reference


def test_torch_external_data_runs_the_same_in_onnxruntime(torch_external, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    folder, path, x = torch_external
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for kwargs in (
        {},
        {"save_as_external_data": True},
        {"save_as_external_data": True, "location": "weights.bin"},
    ):
        out = tmp_path / f"m{len(kwargs)}.onnx"
        onyx.save(onyx.load(path), out, **kwargs)
        if "location" in kwargs:
            assert os.path.exists(tmp_path / "weights.bin")
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, expected)
