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


def _in_mapping(arr) -> bool:
    import mmap

    base = arr.base
    while isinstance(base, np.ndarray | memoryview):
        base = base.obj if isinstance(base, memoryview) else base.base
    return isinstance(base, mmap.mmap)


def test_big_unaligned_weights_land_in_prefaulted_arrays(tmp_path, monkeypatch):
    # from PREFAULT_MIN_BYTES, the aligned copy is one populated anonymous mapping (no fault per page)
    import mmap

    from onyx.ir import tensor as T

    monkeypatch.setattr(T, "PREFAULT_MIN_BYTES", 16)
    p = tmp_path / "m.onnx"
    want = model_with_unaligned_weights(p)
    m = onyx.load(p)
    mapped = 0
    for name, v in m.graph.initializers.items():
        arr = v.const.numpy()
        np.testing.assert_array_equal(arr, want[name])
        mapped += arr.nbytes >= 16 and _in_mapping(arr)
    assert mapped or not hasattr(mmap, "MAP_POPULATE")


def test_prefaulted_empty():
    import mmap

    from onyx.ir.tensor import PREFAULT_MIN_BYTES, prefaulted_empty

    big = prefaulted_empty((3, PREFAULT_MIN_BYTES // 4), np.float32)
    assert big.shape == (3, PREFAULT_MIN_BYTES // 4) and big.dtype == np.float32 and big.flags.writeable
    assert big.flags.c_contiguous and big.flags.aligned
    big[...] = 1.5
    assert float(big.sum()) == 1.5 * big.size
    if hasattr(mmap, "MAP_POPULATE"):
        assert _in_mapping(big)
    small = prefaulted_empty((4, 5), np.float64)
    assert small.shape == (4, 5) and not _in_mapping(small)
    objects = prefaulted_empty((PREFAULT_MIN_BYTES,), object)  # never in a raw mapping
    assert objects.dtype == object and not _in_mapping(objects)
