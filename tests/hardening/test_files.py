"""Files a model names: external data must be a regular file that keeps its size while mapped, the
model file too must be a regular file, and saving external data over the files a loaded model still maps
leaves that model's weights intact (a new file is renamed in; the old one is never truncated)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.errors import InvalidArgument, InvalidGraph, InvalidProtobuf, OnyxError
from onyx.proto import external_data
from tests.hardening.test_hostile_files import _varint  # one hand-written protobuf encoder for the tests

W = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _external(name: str, location: str, offset: int = 0, length: int = W.nbytes) -> TensorProto:
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(W.shape))
    t.data_location = TensorProto.EXTERNAL
    for k, v in {"location": location, "offset": str(offset), "length": str(length)}.items():
        t.external_data.add(key=k, value=v)
    return t


def _matmul_model(weights: list[TensorProto]) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_external_data_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "w.data")  # opening it for reading would wait for a writer forever
    (tmp_path / "model.onnx").write_bytes(_matmul_model([_external("W", "w.data")]))
    with pytest.raises(InvalidGraph, match="not a regular file"):
        onyx.load(tmp_path / "model.onnx")
    with pytest.raises(InvalidGraph, match="not a regular file"):
        onyx.InferenceSession(str(tmp_path / "model.onnx"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_swapped_in_after_the_check_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "w.data")
    with pytest.raises(InvalidGraph, match="not a regular file"):
        external_data._map(str(tmp_path / "w.data"))  # opened non-blocking, refused on its descriptor


def test_external_data_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "w.data").mkdir()
    (tmp_path / "model.onnx").write_bytes(_matmul_model([_external("W", "w.data")]))
    with pytest.raises(InvalidGraph, match="not a regular file"):
        onyx.load(tmp_path / "model.onnx")


def test_external_data_symlinked_to_a_device_is_refused(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    (tmp_path / "w.data").symlink_to("/dev/zero")  # outside the folder, and not a regular file
    (tmp_path / "model.onnx").write_bytes(_matmul_model([_external("W", "w.data")]))
    with pytest.raises(InvalidGraph):
        onyx.load(tmp_path / "model.onnx")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_model_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "model.onnx")
    with pytest.raises(InvalidArgument, match="not a regular file"):
        onyx.load(tmp_path / "model.onnx")
    with pytest.raises(OnyxError):
        onyx.InferenceSession(str(tmp_path / "model.onnx"))


def test_external_data_file_that_grows_while_mapped_is_refused(tmp_path):
    (tmp_path / "w.data").write_bytes(W.tobytes() * 2)
    first, second = _external("A", "w.data"), _external("B", "w.data", offset=W.nbytes)
    base, cache = str(tmp_path), {}
    from onyx.proto.decode import Ctx, decode_tensor

    def tensor(proto: TensorProto):
        data = proto.SerializeToString()
        t = decode_tensor(Ctx(memoryview(data), external_data.mark_base_dir(base), data), (0, len(data)))
        return t

    assert bytes(external_data.read_external(tensor(first), base, cache)) == W.tobytes()
    with open(tmp_path / "w.data", "ab") as fh:  # another process appends while the load maps it
        fh.write(b"\0" * 64)
    with pytest.raises(InvalidGraph, match="changed size"):
        external_data.read_external(tensor(second), base, cache)


def _save_external(model: onyx.Model, path) -> None:
    onyx.save(model, path, save_as_external_data=True, location="w.data", size_threshold=0)


def test_saving_over_mapped_external_data_keeps_the_loaded_model_intact(tmp_path):
    path = tmp_path / "model.onnx"
    (tmp_path / "w.data").write_bytes(W.tobytes())
    path.write_bytes(_matmul_model([_external("W", "w.data")]))
    old = onyx.load(path)  # W is a view of the mapped w.data
    old_session = onyx.InferenceSession(str(path))
    inode = os.stat(tmp_path / "w.data").st_ino

    new = onyx.load(path)
    new.graph.initializers["W"].const = onyx.Tensor.from_numpy(-2 * W, "W")
    _save_external(new, path)  # over the same model file and the same w.data

    assert os.stat(tmp_path / "w.data").st_ino != inode  # a new file renamed in, not rewritten in place
    np.testing.assert_array_equal(old.graph.initializers["W"].const.numpy(), W)
    np.testing.assert_allclose(old_session.run(None, {"X": X})[0], X @ W, rtol=1e-6)
    reloaded = onyx.load(path)
    np.testing.assert_array_equal(reloaded.graph.initializers["W"].const.numpy(), -2 * W)
    new_session = onyx.InferenceSession(str(path))
    np.testing.assert_allclose(new_session.run(None, {"X": X})[0], X @ (-2 * W), rtol=1e-6)


def test_resaving_a_loaded_model_onto_its_own_external_data(tmp_path):
    """The writer reads the old mapping while it writes: into a temporary file, never the mapped one."""
    path = tmp_path / "model.onnx"
    (tmp_path / "w.data").write_bytes(W.tobytes())
    path.write_bytes(_matmul_model([_external("W", "w.data")]))
    model = onyx.load(path)
    _save_external(model, path)
    np.testing.assert_array_equal(model.graph.initializers["W"].const.numpy(), W)
    np.testing.assert_array_equal(onyx.load(path).graph.initializers["W"].const.numpy(), W)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "w.data"]  # no temporary left


@pytest.mark.parametrize(
    "data",
    [
        b"\x3a" + _varint(1 << 40) + b"abc",  # graph: a length far past the buffer
        b"\x3a" + _varint((1 << 64) - 1),  # a length of 2**64 - 1
        b"\x3a\x05\x0a\x10ab",  # a nested field longer than the message holding it
        b"\x08" + b"\xff" * 11 + b"\x01",  # a varint of 12 bytes
        b"\x08\xff\xff",  # a varint cut by the end of the buffer
    ],
    ids=["length-past-end", "length-2**64", "nested-longer-than-parent", "varint-12-bytes", "varint-cut"],
)
def test_lying_length_fields_are_invalid_protobuf_at_an_offset(data):
    with pytest.raises(InvalidProtobuf, match="offset"):
        onyx.load_from_string(data)
