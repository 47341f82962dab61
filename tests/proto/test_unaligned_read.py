"""Unaligned weights of a model loaded from a path are read from the file into aligned arrays; the values
are those of the mapping, and a file replaced since the load is never read (the mapping is used)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onyx


def model_with_unaligned_weights(path):
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((n, 3)).astype(np.float32), f"w{n}") for n in range(1, 9)
    ]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w1"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        initializer=inits,
    )
    onnx.save(helper.make_model(graph), str(path))
    return {t.name: numpy_helper.to_array(t) for t in inits}


def test_values_match_and_arrays_are_aligned(tmp_path):
    p = tmp_path / "m.onnx"
    want = model_with_unaligned_weights(p)
    m = onyx.load(p)
    unaligned = 0
    for name, v in m.graph.initializers.items():
        raw = np.frombuffer(v.const.raw, np.uint8)
        unaligned += raw.ctypes.data % 4 != 0
        arr = v.const.numpy()
        assert arr.flags.aligned
        np.testing.assert_array_equal(arr, want[name])
    assert unaligned  # the case under test happened


def test_file_replaced_after_load_is_not_read(tmp_path):
    p = tmp_path / "m.onnx"
    want = model_with_unaligned_weights(p)
    m = onyx.load(p)
    other = tmp_path / "other.onnx"
    model_with_unaligned_weights(other)
    data = bytearray(other.read_bytes())
    other.write_bytes(bytes(b ^ 0x55 for b in data))  # same size, different bytes
    other.replace(p)  # the path now names another file; the mapping still holds the old one
    for name, v in m.graph.initializers.items():
        np.testing.assert_array_equal(v.const.numpy(), want[name])
