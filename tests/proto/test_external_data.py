"""External data: locations that leave the model's folder are refused, bad offsets are refused, missing
files are NoSuchFile, lazy references, saving over the loaded file, and files onnx/onnxruntime accept."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

W = np.arange(12, dtype=np.float32).reshape(3, 4) / 7


def matmul_model(weight_location: str | None = "w.data", offset: int = 0, length: int | None = None):
    """Y = X @ W with W stored externally at ``weight_location`` (or inline when None)."""
    if weight_location is None:
        w = numpy_helper.from_array(W, "W")
    else:
        w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=list(W.shape))
        w.data_location = TensorProto.EXTERNAL
        entries = {"location": weight_location, "offset": str(offset)}
        entries["length"] = str(W.nbytes if length is None else length)
        for k, v in entries.items():
            w.external_data.add(key=k, value=v)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def write_model(
    folder, proto, data: bytes | None = None, data_name: str = "w.data", name: str = "model.onnx"
):
    path = folder / name
    path.write_bytes(proto.SerializeToString())
    if data is not None:
        (folder / data_name).write_bytes(data)
    return path


def test_external_data_loads(tmp_path):
    path = write_model(tmp_path, matmul_model(), W.tobytes())
    m = onyx.load(path)
    np.testing.assert_array_equal(m.graph.initializers["W"].const.numpy(), W)


def test_absolute_location_is_refused(tmp_path):
    outside = tmp_path / "outside.data"
    outside.write_bytes(W.tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    path = write_model(folder, matmul_model(str(outside)))
    with pytest.raises(onyx.OnyxError, match="'W'.*absolute"):
        onyx.load(path)


@pytest.mark.parametrize("location", ["../outside.data", "sub/../../outside.data", "..\\outside.data"])
def test_dotdot_location_is_refused(tmp_path, location):
    (tmp_path / "outside.data").write_bytes(W.tobytes())
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    path = write_model(folder, matmul_model(location))
    with pytest.raises(onyx.OnyxError, match="'W'"):
        onyx.load(path)


def test_symlink_out_of_the_folder_is_refused(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(W.tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(secret, folder / "w.data")
    path = write_model(folder, matmul_model("w.data"))
    with pytest.raises(onyx.OnyxError, match="'W'.*symlink"):
        onyx.load(path)


def test_symlinked_folder_out_of_the_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "w.data").write_bytes(W.tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(elsewhere, folder / "sub")
    path = write_model(folder, matmul_model("sub/w.data"))
    with pytest.raises(onyx.OnyxError, match="'W'"):
        onyx.load(path)


def test_symlink_inside_the_folder_is_fine(tmp_path):
    (tmp_path / "real.data").write_bytes(W.tobytes())
    os.symlink(tmp_path / "real.data", tmp_path / "w.data")
    m = onyx.load(write_model(tmp_path, matmul_model("w.data")))
    np.testing.assert_array_equal(m.graph.initializers["W"].const.numpy(), W)


@pytest.mark.parametrize(
    ("offset", "length"),
    [(W.nbytes + 1, W.nbytes), (8, W.nbytes), (0, W.nbytes + 4), (2**40, 4), (0, 2**40)],
    ids=["offset-past-end", "offset-plus-length", "length-past-end", "huge-offset", "huge-length"],
)
def test_offset_or_length_past_the_end_is_refused(tmp_path, offset, length):
    path = write_model(tmp_path, matmul_model("w.data", offset, length), W.tobytes())
    with pytest.raises(onyx.OnyxError, match="'W'.*past the end"):
        onyx.load(path)


def test_negative_offset_is_refused(tmp_path):
    path = write_model(tmp_path, matmul_model("w.data", -4), W.tobytes())
    with pytest.raises(onyx.OnyxError):
        onyx.load(path)


def test_missing_file_is_no_such_file(tmp_path):
    path = write_model(tmp_path, matmul_model("w.data"))
    with pytest.raises(onyx.NoSuchFile, match="'W'"):
        onyx.load(path)


def test_external_data_from_bytes_needs_a_folder(tmp_path):
    proto = matmul_model("w.data")
    (tmp_path / "w.data").write_bytes(W.tobytes())
    with pytest.raises(onyx.OnyxError, match="'W'"):
        onyx.load(proto.SerializeToString())
    m = onyx.load(proto.SerializeToString(), base_dir=str(tmp_path))
    np.testing.assert_array_equal(m.graph.initializers["W"].const.numpy(), W)


def test_lazy_reference_is_kept_and_read_on_use(tmp_path):
    path = write_model(tmp_path, matmul_model("w.data"))  # the data file does not exist yet
    m = onyx.load(path, load_external_data=False)
    t = m.graph.initializers["W"].const
    assert t.is_external()
    assert t.external.location == "w.data"
    (tmp_path / "w.data").write_bytes(W.tobytes())
    np.testing.assert_array_equal(t.numpy(), W)
    # the reference is written back as is
    out = onnx.ModelProto.FromString(onyx.serialize(onyx.load(path, load_external_data=False)))
    assert out.graph.initializer[0] == onnx.load(str(path), load_external_data=False).graph.initializer[0]


def test_lazy_reference_is_checked_when_read(tmp_path):
    (tmp_path / "outside.data").write_bytes(W.tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    path = write_model(folder, matmul_model("../outside.data"))
    m = onyx.load(path, load_external_data=False)
    with pytest.raises(onyx.OnyxError, match="'W'"):
        m.graph.initializers["W"].const.numpy()


def test_lazy_model_saved_elsewhere_with_external_data(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    path = write_model(src, matmul_model("w.data"), W.tobytes())
    m = onyx.load(path, load_external_data=False)
    dst = tmp_path / "dst"
    dst.mkdir()
    onyx.save(m, dst / "copy.onnx", save_as_external_data=True, size_threshold=0)
    assert (dst / "copy.onnx.data").exists()
    np.testing.assert_array_equal(
        numpy_helper.to_array(onnx.load(str(dst / "copy.onnx")).graph.initializer[0]), W
    )


def _folder_state(folder):
    return {p: (folder / p).read_bytes() for p in sorted(os.listdir(folder))}


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
def test_save_over_the_loaded_file(tmp_path, external):
    proto = matmul_model("w.data" if external else None)
    path = write_model(tmp_path, proto, W.tobytes() if external else None)
    (tmp_path / "notes.txt").write_text("the user's own file")
    (tmp_path / "model.onnx.bak").write_bytes(b"\x00" * 100)
    before = _folder_state(tmp_path)
    m = onyx.load(path)  # memory-maps model.onnx (and w.data)
    if external:
        onyx.save(m, path, save_as_external_data=True, location="w.data", size_threshold=0)
    else:
        onyx.save(m, path)
    after = _folder_state(tmp_path)
    assert set(after) == set(before)  # no temporary files left behind, nothing removed
    assert after["notes.txt"] == before["notes.txt"]
    assert after["model.onnx.bak"] == before["model.onnx.bak"]
    assert onnx.load(str(path)) == onnx.load_from_string(
        onyx.serialize(onyx.load(path))
    )  # still readable, by both
    np.testing.assert_array_equal(numpy_helper.to_array(onnx.load(str(path)).graph.initializer[0]), W)
    # the model loaded before the save still reads its (old, still mapped) data
    np.testing.assert_array_equal(m.graph.initializers["W"].const.numpy(), W)


def test_save_as_external_data_default_and_explicit_location(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    path = write_model(tmp_path, matmul_model(None))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    m = onyx.load(path)
    cases = [("a.onnx", {}, "a.onnx.data"), ("b.onnx", {"location": "weights.bin"}, "weights.bin")]
    for name, kwargs, data_name in cases:
        out = tmp_path / name
        onyx.save(m, out, save_as_external_data=True, size_threshold=0, **kwargs)
        assert (tmp_path / data_name).stat().st_size >= W.nbytes
        stripped = onnx.load(str(out), load_external_data=False)
        entries = {e.key: e.value for e in stripped.graph.initializer[0].external_data}
        assert entries["location"] == data_name
        np.testing.assert_array_equal(numpy_helper.to_array(onnx.load(str(out)).graph.initializer[0]), W)
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(onyx.load(out).graph.initializers["W"].const.numpy(), W)


@pytest.mark.parametrize("location", ["/tmp/evil.data", "../evil.data", "sub/evil.data", "x.onnx"])
def test_save_refuses_locations_outside_the_folder(tmp_path, location):
    m = onyx.load(write_model(tmp_path, matmul_model(None)))
    with pytest.raises(onyx.InvalidArgument):
        onyx.save(m, tmp_path / "x.onnx", save_as_external_data=True, location=location)
    assert not os.path.exists("/tmp/evil.data")
    assert not (tmp_path / "x.onnx").exists()
