"""OrtValue, OrtDevice, OrtMemoryInfo, OrtArenaCfg and SparseTensor side by side with onnxruntime's
(the cases of onnxruntime's onnxruntime_test_python.py: testOrtValue*, testSparseTensor*)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

import onyx
from onyx.errors import EPFail, Fail, InvalidArgument


@pytest.fixture
def a():
    return np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("mod", [ort, onyx], ids=["ort", "onyx"])
def test_ortvalue_from_numpy_shares_memory(mod, a):
    v = mod.OrtValue.ortvalue_from_numpy(a)
    assert v.data_ptr() == a.ctypes.data
    assert np.shares_memory(v.numpy(), a)
    v.numpy()[0, 0] = 42.0
    assert a[0, 0] == 42.0
    assert (v.data_type(), v.element_type(), v.device_name(), v.shape()) == (
        "tensor(float)",
        TensorProto.FLOAT,
        "cpu",
        [2, 3],
    )
    assert v.is_tensor() and v.has_value() and not v.is_tensor_sequence() and not v.is_sparse_tensor()
    assert v.tensor_size_in_bytes() == 24


@pytest.mark.parametrize("mod", [ort, onyx], ids=["ort", "onyx"])
def test_ortvalue_accessors_match_for_many_types(mod):
    for dt in (np.float64, np.int8, np.uint16, np.int32, np.int64, np.bool_, np.float16):
        arr = np.zeros((3, 1), dtype=dt)
        got = onyx.OrtValue.ortvalue_from_numpy(arr)
        want = ort.OrtValue.ortvalue_from_numpy(arr)
        assert (got.data_type(), got.element_type(), got.shape()) == (
            want.data_type(),
            want.element_type(),
            want.shape(),
        )


def test_non_contiguous_array_is_copied_as_onnxruntime_does(a):
    t = a.T
    for mod in (ort, onyx):
        v = mod.OrtValue.ortvalue_from_numpy(t)
        assert not np.shares_memory(v.numpy(), t)
        assert v.numpy().flags.c_contiguous
        np.testing.assert_array_equal(v.numpy(), t)


def test_scalar_ortvalue(a):
    v = onyx.OrtValue.ortvalue_from_numpy(np.array(3.0, np.float32))
    w = ort.OrtValue.ortvalue_from_numpy(np.array(3.0, np.float32))
    assert v.shape() == w.shape() == []
    assert v.numpy() == w.numpy() == 3.0


@pytest.mark.parametrize("element_type", [np.int64, TensorProto.INT64, TensorProto.FLOAT16])
def test_ortvalue_from_shape_and_type(element_type):
    got = onyx.OrtValue.ortvalue_from_shape_and_type([2, 2], element_type)
    want = ort.OrtValue.ortvalue_from_shape_and_type([2, 2], element_type)
    assert got.shape() == want.shape() == [2, 2]
    assert got.data_type() == want.data_type()
    assert got.numpy().dtype == want.numpy().dtype


def test_bfloat16_by_onnx_type():
    bits = np.array([0x3F80, 0x4000], np.uint16)  # 1.0 and 2.0 in bfloat16
    got = onyx.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)
    want = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)
    assert got.data_type() == want.data_type() == "tensor(bfloat16)"
    assert got.numpy().astype(np.float32).tolist() == [1.0, 2.0]  # onnxruntime has no numpy view of it
    assert got.data_ptr() == bits.ctypes.data
    with pytest.raises(InvalidArgument, match="size"):
        onyx.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros(3, np.uint32), TensorProto.BFLOAT16)
    with pytest.raises(RuntimeError):
        ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros(3, np.uint32), TensorProto.BFLOAT16)


def test_update_inplace_keeps_the_memory(a):
    for mod in (ort, onyx):
        arr = a.copy()
        v = mod.OrtValue.ortvalue_from_numpy(arr)
        ptr = v.data_ptr()
        v.update_inplace(np.full((2, 3), 7, np.float32))
        assert v.data_ptr() == ptr and (arr == 7).all()
        with pytest.raises(RuntimeError if mod is ort else InvalidArgument):
            v.update_inplace(np.zeros(5, np.float32))
    v = onyx.OrtValue.ortvalue_from_numpy(a)
    with pytest.raises(InvalidArgument, match="float64"):  # onnxruntime copies raw bytes here
        v.update_inplace(np.zeros(6, np.float64))


def test_dlpack_both_ways(a):
    v = onyx.OrtValue.ortvalue_from_numpy(a)
    assert np.shares_memory(np.from_dlpack(v), a)
    assert v.__dlpack_device__() == ort.OrtValue.ortvalue_from_numpy(a).__dlpack_device__()
    w = onyx.OrtValue.from_dlpack(a)
    assert w.data_ptr() == a.ctypes.data
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.int32)
    tv = onyx.OrtValue.from_dlpack(t)
    assert tv.data_ptr() == t.data_ptr() and tv.data_type() == "tensor(int32)"
    assert torch.from_dlpack(tv).data_ptr() == t.data_ptr()
    capsule = onyx.OrtValue.from_dlpack(a.__dlpack__())  # a raw capsule, as onnxruntime accepts
    assert capsule.data_ptr() == a.ctypes.data
    with pytest.raises(InvalidArgument):
        onyx.OrtValue.from_dlpack(object())


def test_bad_arguments(a):
    with pytest.raises(InvalidArgument, match="numpy.ndarray"):
        onyx.OrtValue.ortvalue_from_numpy([1, 2])
    with pytest.raises(EPFail, match="CPU only"):
        onyx.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
    with pytest.raises(RuntimeError):  # onnxruntime's CPU build refuses as well
        ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
    with pytest.raises(InvalidArgument, match="tpu"):
        onyx.OrtValue.ortvalue_from_numpy(a, "tpu", 0)
    with pytest.raises(InvalidArgument, match="negative"):
        onyx.OrtValue.ortvalue_from_shape_and_type([-1, 2], np.float32)
    v = onyx.OrtValue.ortvalue_from_numpy(a)
    with pytest.raises(Fail, match="does not contain SparseTensor"):
        v.as_sparse_tensor()


def test_string_tensor_is_an_onyx_extra():
    v = onyx.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"]))
    assert v.data_type() == "tensor(string)" and v.numpy().tolist() == ["a", "bc"]
    with pytest.raises(Fail, match="string"):
        v.data_ptr()


def test_ortvalue_of_sequence_and_none():
    seq = onyx.OrtValue([np.zeros(2, np.int64)])
    assert seq.is_tensor_sequence() and seq.data_type() == "seq(tensor(int64))"
    with pytest.raises(Fail, match="not a tensor"):
        seq.numpy()
    empty = onyx.OrtValue(None)
    assert not empty.has_value()


def test_ortdevice_and_memory_info():
    for mod in (ort, onyx):
        d = mod.OrtDevice.make("cpu", 0)
        assert (d.device_type(), d.device_id(), d.device_mem_type()) == (0, 0, 0)
    mi = onyx.OrtMemoryInfo("Cpu", onyx.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, onyx.OrtMemType.DEFAULT)
    oi = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    assert (mi.name, mi.device_id, int(mi.mem_type), int(mi.allocator_type)) == (
        oi.name,
        oi.device_id,
        int(oi.mem_type),
        int(oi.allocator_type),
    )
    for enum_name in ("OrtAllocatorType", "OrtMemType", "OrtSparseFormat"):
        ours = {k: int(v) for k, v in getattr(onyx, enum_name).__members__.items()}
        theirs = {k: int(v) for k, v in getattr(ort, enum_name).__members__.items()}
        assert ours == theirs, enum_name


def test_arena_cfg_and_allocator_registration():
    c = onyx.OrtArenaCfg(0, -1, -1, -1)
    o = ort.OrtArenaCfg(0, -1, -1, -1)
    for key in onyx.OrtArenaCfg._KEYS:
        assert getattr(c, key) == getattr(o, key), key
    assert onyx.OrtArenaCfg({"max_mem": 16}).max_mem == 16
    with pytest.raises(InvalidArgument, match="nope"):
        onyx.OrtArenaCfg({"nope": 1})
    mi = onyx.OrtMemoryInfo("Cpu", onyx.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, onyx.OrtMemType.DEFAULT)
    assert onyx.create_and_register_allocator(mi, c) is None
    assert onyx.create_and_register_allocator_v2("CPUExecutionProvider", mi, {}, c) is None
    with pytest.raises(InvalidArgument, match="Unknown Provider"):
        onyx.create_and_register_allocator_v2("CUDAExecutionProvider", mi, {}, c)
    with pytest.raises(EPFail):
        onyx.create_and_register_allocator(onyx.OrtMemoryInfo("Cuda", 1, 0, 0), c)


# -- sparse tensors ----------------------------------------------------------------------------------


def test_sparse_coo_matches_onnxruntime():
    vals = np.array([1, 2, 3], np.float32)
    idx = np.array([1, 5, 7], np.int64)
    got = onyx.SparseTensor.sparse_coo_from_numpy([2, 4], vals, idx, onyx.OrtDevice.make("cpu", 0))
    want = ort.SparseTensor.sparse_coo_from_numpy([2, 4], vals, idx, ort.OrtDevice.make("cpu", 0))
    assert int(got.format()) == int(want.format()) == 1
    assert list(got.dense_shape()) == list(want.dense_shape())
    assert got.data_type() == want.data_type() == "sparse_tensor(float)"
    assert got.device_name() == want.device_name() == "cpu"
    assert np.shares_memory(got.values(), vals) and np.shares_memory(got.as_coo_view().indices(), idx)
    np.testing.assert_array_equal(got.as_coo_view().indices(), want.as_coo_view().indices())
    with pytest.raises(Fail, match="CSR"):
        got.as_csrc_view()
    with pytest.raises(EPFail, match="Cuda"):
        got.to_cuda(onyx.OrtDevice.make("cuda", 0))
    dense = np.zeros(8, np.float32)
    dense[[1, 5, 7]] = vals
    np.testing.assert_array_equal(got.to_dense(), dense.reshape(2, 4))
    coords = onyx.SparseTensor.sparse_coo_from_numpy(
        [2, 4], vals, np.array([[0, 1], [1, 1], [1, 3]], np.int64), onyx.OrtDevice.make("cpu", 0)
    )
    assert coords.as_coo_view().indices().shape == (3, 2)
    np.testing.assert_array_equal(coords.to_dense(), dense.reshape(2, 4))


def test_sparse_csr_matches_onnxruntime():
    vals = np.array([1, 2, 3], np.float32)
    inner, outer = np.array([1, 1, 3], np.int64), np.array([0, 1, 3], np.int64)
    got = onyx.SparseTensor.sparse_csr_from_numpy([2, 4], vals, inner, outer, onyx.OrtDevice.make("cpu", 0))
    want = ort.SparseTensor.sparse_csr_from_numpy([2, 4], vals, inner, outer, ort.OrtDevice.make("cpu", 0))
    assert int(got.format()) == int(want.format()) == 2
    np.testing.assert_array_equal(got.as_csrc_view().inner(), want.as_csrc_view().inner())
    np.testing.assert_array_equal(got.as_csrc_view().outer(), want.as_csrc_view().outer())
    with pytest.raises(Fail, match="COO"):
        got.as_coo_view()
    np.testing.assert_array_equal(got.to_dense(), [[0, 1, 0, 0], [0, 2, 0, 3]])


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda d: onyx.SparseTensor.sparse_coo_from_numpy([2, 4], np.ones(3, np.float32), [1, 5], d),
            "Index",
        ),
        (
            lambda d: onyx.SparseTensor.sparse_coo_from_numpy([2, 4], np.ones(3, np.float32), [1, 5, 70], d),
            "range",
        ),
        (lambda d: onyx.SparseTensor.sparse_coo_from_numpy([4], np.ones((1, 1), np.float32), [1], d), "1-D"),
        (
            lambda d: onyx.SparseTensor.sparse_csr_from_numpy(
                [2, 4], np.ones(3, np.float32), [1, 1, 3], [0, 1], d
            ),
            "rows \\+ 1",
        ),
        (
            lambda d: onyx.SparseTensor.sparse_csr_from_numpy(
                [2, 2, 4], np.ones(3, np.float32), [1, 1, 3], [0, 1, 3], d
            ),
            "2-D",
        ),
        (lambda d: onyx.SparseTensor.sparse_coo_from_numpy([4], np.ones(1, np.float32), [1], "cuda"), "CPU"),
    ],
)
def test_sparse_bad_arguments(make, match):
    with pytest.raises(onyx.OnyxError, match=match):
        make(onyx.OrtDevice.make("cpu", 0))


def test_ortvalue_holding_a_sparse_tensor():
    st = onyx.SparseTensor.sparse_coo_from_numpy([4], np.array([5.0], np.float32), [2], None)
    v = onyx.OrtValue.ort_value_from_sparse_tensor(st)
    assert v.is_sparse_tensor() and not v.is_tensor() and v.data_type() == "sparse_tensor(float)"
    assert v.as_sparse_tensor() is st
    with pytest.raises(Fail, match="Tensors are convertible"):
        v.numpy()


def test_sparse_feed_is_made_dense_for_a_sparse_input():
    from onyx.ir.builder import GraphBuilder
    from onyx.ir.model import Value
    from onyx.ir.types import Shape, SparseTensorType

    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [2, 4])
    y = b.op("Relu", x)
    b.output(y, "y", np.float32, [2, 4])
    model = b.model()
    model.graph.inputs[0].type = SparseTensorType(1, Shape([2, 4]))
    assert isinstance(model.graph.inputs[0], Value)
    sess = onyx.InferenceSession(model)
    st = onyx.SparseTensor.sparse_coo_from_numpy([2, 4], np.array([-1, 2], np.float32), [0, 7], None)
    for feed in (st, onyx.OrtValue.ort_value_from_sparse_tensor(st)):
        np.testing.assert_array_equal(sess.run(None, {"x": feed})[0], [[0, 0, 0, 0], [0, 0, 0, 2]])
