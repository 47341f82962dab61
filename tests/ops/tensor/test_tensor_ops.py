"""Tensor-manipulation kernels beyond the node suite: old opset versions, other dtypes, negative and
int32 indices, empty tensors, views instead of copies, and bad input raising onyx errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

from onyx.errors import InvalidArgument

from ._util import assert_same, check, run

I64 = np.int64
rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)


def a(*v, dtype=I64):
    return np.array(v, dtype=dtype)


# --- Concat / Constant / ConstantOfShape ----------------------------------------------------------


def test_concat_versions():
    (y,) = run("Concat", [X, X], 1)  # opset 1: axis defaults to 1
    assert_same(y, np.concatenate([X, X], axis=1))
    check("Concat", [X, X[:, :, :2]], 11, axis=-1)
    (y,) = run("Concat", [np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32)], 13, axis=0)
    assert y.shape == (2, 3)
    with pytest.raises(InvalidArgument):
        run("Concat", [X, X[:, :2, :2]], 13, axis=0)


@pytest.mark.parametrize(
    "attrs,expected",
    [
        ({"value_float": 2.5}, np.array(2.5, np.float32)),
        ({"value_floats": [1.0, 2.0]}, np.array([1.0, 2.0], np.float32)),
        ({"value_int": 3}, np.array(3, I64)),
        ({"value_ints": [3, 4]}, np.array([3, 4], I64)),
        ({"value_string": "hi"}, np.array("hi", dtype=object)),
        ({"value_strings": ["a", "b"]}, np.array(["a", "b"], dtype=object)),
        ({"value": helper.make_tensor("v", TensorProto.INT32, [2], [5, 6])}, np.array([5, 6], np.int32)),
    ],
)
def test_constant_forms(attrs, expected):
    (y,) = run("Constant", [], 13, **attrs)
    assert_same(y, expected)


def test_constant_sparse_and_old_version():
    sp = helper.make_sparse_tensor(
        helper.make_tensor("v", TensorProto.FLOAT, [2], [1.0, 2.0]),
        helper.make_tensor("i", TensorProto.INT64, [2], [1, 3]),
        [2, 2],
    )
    (y,) = run("Constant", [], 11, sparse_value=sp)
    assert_same(y, np.array([[0, 1], [0, 2]], np.float32))
    (y,) = run("Constant", [], 1, value=helper.make_tensor("v", TensorProto.FLOAT, [1], [7.0]))
    assert_same(y, np.array([7.0], np.float32))


def test_constant_of_shape():
    check("ConstantOfShape", [a(2, 3)], 9)
    check("ConstantOfShape", [a(2, 0)], 20, value=helper.make_tensor("v", TensorProto.INT32, [1], [7]))
    (y,) = run(
        "ConstantOfShape", [np.zeros(0, I64)], 9, value=helper.make_tensor("v", TensorProto.INT64, [1], [7])
    )
    assert_same(y, np.array(7, I64))


# --- DepthToSpace / SpaceToDepth ------------------------------------------------------------------


def test_depth_space_versions_and_round_trip():
    x = rng.standard_normal((2, 8, 3, 5)).astype(np.float32)
    check("DepthToSpace", [x], 1, blocksize=2)
    check("DepthToSpace", [x], 13, blocksize=2, mode="CRD")
    y = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    check("SpaceToDepth", [y], 1, blocksize=2)
    for mode in ("DCR", "CRD"):
        (d,) = run("SpaceToDepth", [y], 28, blocksize=2, mode=mode)
        (back,) = run("DepthToSpace", [d], 13, blocksize=2, mode=mode)
        np.testing.assert_array_equal(back, y)
    with pytest.raises(InvalidArgument):
        run("DepthToSpace", [x], 13, blocksize=3)


# --- Expand / EyeLike / Flatten -------------------------------------------------------------------


def test_expand():
    check("Expand", [np.arange(3, dtype=np.float32).reshape(3, 1), a(2, 1, 4)], 13)
    check("Expand", [X, a(1, 1)], 13)  # the target may be smaller than the input
    with pytest.raises(InvalidArgument):
        run("Expand", [X, a(5, 4)], 13)


def test_eye_like():
    check("EyeLike", [np.zeros((3, 5), np.float32)], 9, k=2)
    check("EyeLike", [np.zeros((4, 3), np.int32)], 22, k=-1, dtype=TensorProto.DOUBLE)
    (y,) = run("EyeLike", [np.zeros((2, 2), np.int32)], 9, k=5)
    assert not y.any()


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis):
    check("Flatten", [X], 13, axis=axis)
    (y,) = run("Flatten", [X], 13, axis=axis)
    assert np.shares_memory(y, X)


# --- Gather family --------------------------------------------------------------------------------


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_gather(idx_dtype):
    check("Gather", [X, np.array([[0, -1], [1, 0]], idx_dtype)], 13, axis=1)
    check("Gather", [X, np.array([-4, 3], idx_dtype)], 1, axis=-1)
    (y,) = run("Gather", [X, np.array(-1, idx_dtype)], 13, axis=1)
    assert y.shape == (2, 4) and np.shares_memory(y, X)
    (y,) = run("Gather", [X, np.zeros((0, 2), idx_dtype)], 13, axis=2)
    assert y.shape == (2, 3, 0, 2)
    with pytest.raises(InvalidArgument):
        run("Gather", [X, np.array([3], idx_dtype)], 13, axis=1)
    with pytest.raises(InvalidArgument):
        run("Gather", [X, np.array(-4, idx_dtype)], 13, axis=1)


def test_gather_strings_and_bfloat16():
    s = np.array(["a", "b", "c"], dtype=object)
    (y,) = run("Gather", [s, a(2, 0)], 13)
    assert y.tolist() == ["c", "a"]
    b = X.astype(ml_dtypes.bfloat16)
    (y,) = run("Gather", [b, a(1)], 13, axis=2)
    assert y.dtype == b.dtype


def test_gather_elements():
    idx = np.array([[[0, -1], [2, 1]]], np.int32)
    (y,) = run("GatherElements", [X, idx], 11, axis=-1)
    assert_same(y, np.array([[[X[0, 0, 0], X[0, 0, 3]], [X[0, 1, 2], X[0, 1, 1]]]]))
    (y,) = run("GatherElements", [X, np.array([[[1]], [[0]]], I64)], 13, axis=0)
    assert_same(y, np.array([[[X[1, 0, 0]]], [[X[0, 0, 0]]]]))
    check("GatherElements", [X, rng.integers(-2, 2, (2, 3, 4))], 13, axis=0)
    with pytest.raises(InvalidArgument):
        run("GatherElements", [X, np.array([[[4]]], I64)], 13, axis=2)


def test_gather_nd():
    check("GatherND", [X, np.array([[0, 1], [1, -1]], I64)], 11)
    check("GatherND", [X, np.array([[1], [0]], np.int32)], 12, batch_dims=1)
    check("GatherND", [X, np.array([[[2, 3]], [[0, 0]]], I64)], 13, batch_dims=1)
    with pytest.raises(InvalidArgument):
        run("GatherND", [X, np.array([[2, 0]], I64)], 13)


# --- Identity / NonZero / OneHot ------------------------------------------------------------------


def test_identity_and_sequences():
    from onyx.ops.registry import lookup

    fn = lookup("Identity", "", 16).fn
    seq = [X, X]
    out = fn(seq)
    assert out == seq and out is not seq
    assert fn(None) is None
    assert fn(X) is X


def test_non_zero():
    check("NonZero", [np.array([[1, 0], [0, 3]], np.int32)], 13)
    check("NonZero", [np.array([True, False, True])], 9)
    (y,) = run("NonZero", [np.array(5.0, np.float32)], 13)
    assert y.shape == (0, 1) and y.dtype == I64  # the spec's shape for a scalar input
    (y,) = run("NonZero", [np.array([0.5, 0], ml_dtypes.bfloat16)], 13)
    assert y.tolist() == [[0]]


def test_one_hot():
    vals = np.array([0, 5], np.float32)
    check("OneHot", [a(0, -1, 2, 7), np.array(3, I64), vals], 11)
    (y,) = run("OneHot", [np.array([[1, 0]], np.int32), np.array([4.0], np.float32), vals], 9, axis=0)
    assert_same(y, np.moveaxis(np.eye(4, dtype=np.float32)[[[1, 0]]] * 5, -1, 0))
    (y,) = run(
        "OneHot",
        [np.array([1.7, -1.0], np.float32), np.array(3, I64), np.array(["n", "y"], dtype=object)],
        11,
    )
    assert y.tolist() == [["n", "y", "n"], ["n", "n", "y"]]


# --- Pad ------------------------------------------------------------------------------------------


def test_pad_old_versions():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = run("Pad", [x], 1, paddings=[1, 0, 0, 2], value=9.0)
    assert_same(y, np.pad(x, [(1, 0), (0, 2)], constant_values=9.0))
    check("Pad", [x], 2, pads=[0, 1, 1, 1], mode="reflect")
    check("Pad", [x], 2, pads=[1, 1, 1, 1], mode="edge")


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes_and_axes(mode):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    check("Pad", [x, a(1, 2, 2, 1)], 19, mode=mode)
    check("Pad", [x, a(2, 1), None, a(-1)], 19, mode=mode)
    (y,) = run("Pad", [x, a(-1, 1, 0, -2)], 19, mode=mode)
    assert_same(y, np.pad(x[1:, :2], [(0, 0), (1, 0)], mode=mode))


def test_pad_constant_value_and_types():
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    check("Pad", [x, a(1, 1, 1, 1), np.array(3.5, np.float32)], 11)
    s = np.array([["a", "b"]], dtype=object)
    (y,) = run("Pad", [s, a(0, 1, 0, 0)], 18)
    assert y.tolist() == [["", "a", "b"]]
    b = x.astype(ml_dtypes.bfloat16)
    (y,) = run("Pad", [b, a(0, 1, 0, 1)], 18, mode="reflect")
    assert y.dtype == b.dtype and y.shape == (2, 4)
    with pytest.raises(InvalidArgument):
        run("Pad", [x, a(1, 1)], 18)


# --- Range / Reshape / ReverseSequence ------------------------------------------------------------


@pytest.mark.parametrize(
    "start,limit,delta",
    [(3, 9, 3), (10, 4, -2), (0, 0, 1), (1, 10, -1), (-5, 5, 3)],
)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.int16])
def test_range(start, limit, delta, dtype):
    got = run("Range", [np.array(start, dtype), np.array(limit, dtype), np.array(delta, dtype)], 11)[0]
    exp = np.arange(start, limit, delta).astype(dtype)
    assert_same(got, exp)


def test_range_float16_stash():
    args = [np.array(v, np.float16) for v in (2000.0, 2010.0, 1.0)]
    (y,) = run("Range", args, 27)
    assert y.dtype == np.float16 and y.shape == (10,)
    (y,) = run("Range", [np.array(0.5, np.float32), np.array(2.0, np.float32), np.array(0.5, np.float32)], 27)
    assert_same(y, np.array([0.5, 1.0, 1.5], np.float32))


def test_reshape_versions():
    (y,) = run("Reshape", [X], 1, shape=[4, -1])
    assert y.shape == (4, 6) and np.shares_memory(y, X)
    check("Reshape", [X, a(0, -1)], 5)
    check("Reshape", [X, a(-1, 0, 2)], 13)
    (y,) = run("Reshape", [np.zeros((0, 3), np.float32), a(3, 0)], 14, allowzero=1)
    assert y.shape == (3, 0)
    for bad in (a(-1, -1), a(5, -1), a(7)):
        with pytest.raises(InvalidArgument):
            run("Reshape", [X, bad], 14)
    with pytest.raises(InvalidArgument):
        run("Reshape", [X, a(0, -1)], 14, allowzero=1)


def test_reverse_sequence():
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    check("ReverseSequence", [x, a(4, 2, 1)], 10)
    x2 = np.ascontiguousarray(x.transpose(1, 0, 2))
    check("ReverseSequence", [x2, a(1, 3, 0)], 10, batch_axis=0, time_axis=1)


# --- Scatter family -------------------------------------------------------------------------------


def test_scatter_and_scatter_elements():
    data = np.zeros((3, 3), np.float32)
    idx = np.array([[1, 0, 2], [0, 2, 1]], I64)
    upd = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = run("Scatter", [data, idx, upd], 9)
    assert_same(y, np.array([[3, 1, 0], [0, 0, 5], [0, 4, 2]], np.float32))
    check("ScatterElements", [data, idx, upd], 11, axis=0)
    check("ScatterElements", [data, np.array([[-1, 0]], np.int32), upd[:1, :2]], 13, axis=1)
    assert not data.any()  # inputs untouched


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_elements_reductions(reduction):
    data = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    idx = np.array([[1, 1], [0, 0]], I64)  # duplicates
    upd = np.array([[2.0, 3.0], [0.5, -4.0]], np.float32)
    check("ScatterElements", [data, idx, upd], 18, axis=1, reduction=reduction)
    got = run(
        "ScatterElements",
        [data.astype(ml_dtypes.bfloat16), idx, upd.astype(ml_dtypes.bfloat16)],
        18,
        axis=1,
        reduction=reduction,
    )[0]
    exp = run("ScatterElements", [data, idx, upd], 18, axis=1, reduction=reduction)[0]
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(got.astype(np.float32), exp, rtol=1e-2)


def test_scatter_elements_16_rejects_max():
    with pytest.raises(InvalidArgument):
        run("ScatterElements", [np.zeros(3, np.float32), a(0), np.ones(1, np.float32)], 16, reduction="max")
    with pytest.raises(InvalidArgument):
        run("ScatterElements", [np.zeros(3, np.float32), a(3), np.ones(1, np.float32)], 16)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    data = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    idx = (
        np.array([[0, 1], [1, -1], [0, 1]], I64) if reduction != "none" else np.array([[0, 1], [1, -1]], I64)
    )
    upd = np.arange(idx.shape[0] * 4, dtype=np.int32).reshape(idx.shape[0], 4) - 3
    got = run("ScatterND", [data, idx, upd], 18, reduction=reduction)[0]
    exp = data.copy()
    for i, (p, q) in enumerate(idx.tolist()):
        cur = exp[p, q]
        exp[p, q] = {
            "none": lambda c, u: u,
            "add": np.add,
            "mul": np.multiply,
            "max": np.maximum,
            "min": np.minimum,
        }[reduction](cur, upd[i])
    assert_same(got, exp)
    if reduction == "none":
        check("ScatterND", [data, idx, upd], 11)


def test_tensor_scatter():
    cache = np.zeros((2, 3, 5, 2), np.float32)
    upd = np.ones((2, 3, 2, 2), np.float32)
    (y,) = run("TensorScatter", [cache, upd, a(1, 3)], 24)
    assert y[0, :, 1:3].all() and y[1, :, 3:5].all() and y.sum() == upd.sum()
    (y,) = run("TensorScatter", [cache, upd, a(4, 0)], 24, mode="circular")
    assert y[0, :, 4].all() and y[0, :, 0].all() and y[1, :, 0:2].all()
    (y,) = run("TensorScatter", [cache, upd], 24)
    assert y[:, :, 0:2].all() and not y[:, :, 2:].any()
    with pytest.raises(InvalidArgument):
        run("TensorScatter", [cache, upd, a(4, 0)], 24)


# --- Shape / Size / Slice -------------------------------------------------------------------------


@pytest.mark.parametrize("start,end", [(0, None), (1, None), (-1, None), (0, -1), (5, None), (-9, 2), (2, 1)])
def test_shape(start, end):
    attrs = {"start": start} | ({} if end is None else {"end": end})
    check("Shape", [X], 15, **attrs)
    check("Shape", [X], 1)
    check("Size", [X], 13)


@pytest.mark.parametrize(
    "starts,ends,axes,steps",
    [
        ([0, 1], [2, -1], None, None),
        ([-1], [-100], [2], [-1]),
        ([10], [-10], [-1], [-2]),
        ([2, 0], [0, 2**62], [1, 2], [-1, 3]),
        ([-(2**62)], [2**62], [0], [1]),
        ([3], [1], [2], [1]),
    ],
)
def test_slice(starts, ends, axes, steps):
    inputs = [
        X,
        a(*starts),
        a(*ends),
        None if axes is None else a(*axes),
        None if steps is None else a(*steps),
    ]
    if steps is None and axes is None:
        inputs = inputs[:3]
    elif steps is None:
        inputs = inputs[:4]
    (y,) = check("Slice", inputs, 13)
    assert np.shares_memory(y, X) or y.size == 0


def test_slice_v1_and_errors():
    check("Slice", [X], 1, starts=[1, 0], ends=[2, -1], axes=[0, 2])
    check("Slice", [X], 1, starts=[0], ends=[1])
    with pytest.raises(InvalidArgument):
        run("Slice", [X, a(0), a(1), a(0), a(0)], 13)
    with pytest.raises(InvalidArgument):
        run("Slice", [X, a(0, 0), a(1, 1), a(0, 0)], 13)


# --- Split / Squeeze / Unsqueeze ------------------------------------------------------------------


def test_split_versions():
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    outs = run("Split", [x], 1, n_outputs=3, axis=1)
    assert [o.shape for o in outs] == [(2, 2)] * 3
    outs = run("Split", [x, a(1, 5)], 1, n_outputs=2, axis=1)
    assert [o.shape for o in outs] == [(2, 1), (2, 5)]
    check("Split", [x], 2, n_outputs=2, axis=1, split=[4, 2])
    check("Split", [x, a(1, 1)], 13, n_outputs=2)
    check("Split", [x], 13, n_outputs=2, axis=-1)
    outs = run("Split", [x], 18, n_outputs=4, axis=1, num_outputs=4)
    assert [o.shape[1] for o in outs] == [2, 2, 2, 0]
    outs = check("Split", [np.arange(7, dtype=np.float32)], 18, n_outputs=3, num_outputs=3)
    assert [o.shape[0] for o in outs] == [3, 3, 1] and all(
        np.shares_memory(o, outs[0].base) for o in outs[:1]
    )
    with pytest.raises(InvalidArgument):
        run("Split", [x], 13, n_outputs=4, axis=1)
    with pytest.raises(InvalidArgument):
        run("Split", [x], 18, n_outputs=2, axis=1)


def test_squeeze_unsqueeze():
    x = np.zeros((1, 3, 1, 2), np.float32)
    check("Squeeze", [x], 1)
    check("Squeeze", [x], 11, axes=[-2])
    check("Squeeze", [x, a(0, 2)], 13)
    check("Squeeze", [x], 13)
    (y,) = run("Squeeze", [x, np.zeros(0, I64)], 13)  # empty axes: squeeze every size-1 dim
    assert y.shape == (3, 2) and np.shares_memory(y, x)
    with pytest.raises(InvalidArgument):
        run("Squeeze", [x, a(1)], 13)
    check("Unsqueeze", [X], 1, axes=[0, 4])
    check("Unsqueeze", [X], 11, axes=[-1])
    check("Unsqueeze", [X, a(-1, 0)], 13)
    (y,) = run("Unsqueeze", [np.array(3.0, np.float32), a(0)], 13)
    assert y.shape == (1,)
    with pytest.raises(InvalidArgument):
        run("Unsqueeze", [X, a(1, 1)], 13)


# --- Tile / TopK / Transpose / Trilu --------------------------------------------------------------


def test_tile():
    check("Tile", [X, a(2, 1, 3)], 6)
    (y,) = run("Tile", [X, np.array(3, I64), np.array(1, I64)], 1)
    assert_same(y, np.tile(X, (1, 3, 1)))
    (y,) = run("Tile", [X, a(1, 0, 1)], 13)
    assert y.shape == (2, 0, 4)
    with pytest.raises(InvalidArgument):
        run("Tile", [X, a(2, 2)], 13)


def test_top_k_ties_and_versions():
    x = np.array([[3, 1, 3, 2, 1, 3]], np.float32)
    v, i = run("TopK", [x, a(4)], 11, n_outputs=2)
    assert v.tolist() == [[3, 3, 3, 2]] and i.tolist() == [[0, 2, 5, 3]] and i.dtype == I64
    v, i = run("TopK", [x, a(3)], 11, n_outputs=2, largest=0)
    assert v.tolist() == [[1, 1, 2]] and i.tolist() == [[1, 4, 3]]
    v, i = run("TopK", [x], 1, n_outputs=2, k=2)
    assert i.tolist() == [[0, 2]]
    v, i = run("TopK", [x.T.copy(), a(2)], 10, n_outputs=2, axis=0)
    assert i.tolist() == [[0], [2]]
    u = np.array([2**63 + 5, 1, 2**63 + 5, 0], np.uint64)
    v, i = run("TopK", [u, a(2)], 11, n_outputs=2)
    assert i.tolist() == [0, 2]
    b = np.array([0.5, 2.0, 2.0], ml_dtypes.bfloat16)
    v, i = run("TopK", [b, a(2)], 11, n_outputs=2)
    assert v.dtype == b.dtype and i.tolist() == [1, 2]
    v, i = run("TopK", [x, a(0)], 11, n_outputs=2)
    assert v.shape == (1, 0)
    with pytest.raises(InvalidArgument):
        run("TopK", [x, a(7)], 11, n_outputs=2)


def test_top_k_matches_reference_random():
    y = rng.integers(0, 5, (3, 40)).astype(np.float32)
    for largest in (0, 1):
        check("TopK", [y, a(7)], 11, n_outputs=2, largest=largest)


def test_transpose():
    check("Transpose", [X], 1)
    check("Transpose", [X], 13, perm=[1, 0, 2])
    (y,) = run("Transpose", [X], 13, perm=[2, 0, 1])
    assert np.shares_memory(y, X)
    with pytest.raises(InvalidArgument):
        run("Transpose", [X], 13, perm=[0, 0, 1])


@pytest.mark.parametrize("k", [None, -1, 0, 2, 10])
@pytest.mark.parametrize("upper", [0, 1])
def test_trilu(k, upper):
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    check("Trilu", [x] if k is None else [x, np.array(k, I64)], 14, upper=upper)
    (y,) = run("Trilu", [np.ones((3, 3), bool), np.array(0, I64)], 14, upper=upper)
    assert y.dtype == bool and y.sum() == 6


# --- Unique / CenterCropPad -----------------------------------------------------------------------


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique(sorted_, axis):
    x = np.array([[2, 1, 2], [0, 3, 0], [2, 1, 2]], np.float32)
    attrs = {"sorted": sorted_} | ({} if axis is None else {"axis": axis})
    if sorted_:
        check("Unique", [x], 11, n_outputs=4, **attrs)
        return
    y, idx, inv, cnt = run("Unique", [x], 11, n_outputs=4, **attrs)
    if axis is None:
        assert y.tolist() == [2, 1, 0, 3] and idx.tolist() == [0, 1, 3, 4]
        assert inv.tolist() == [0, 1, 0, 2, 3, 2, 0, 1, 0] and cnt.tolist() == [4, 2, 2, 1]
    elif axis == 0:
        assert y.tolist() == [[2, 1, 2], [0, 3, 0]] and idx.tolist() == [0, 1]
        assert inv.tolist() == [0, 1, 0] and cnt.tolist() == [2, 1]
    else:
        assert y.tolist() == [[2, 1], [0, 3], [2, 1]] and inv.tolist() == [0, 1, 0] and cnt.tolist() == [2, 1]


def test_unique_strings_and_unsorted_order():
    s = np.array(["b", "a", "b", "c"], dtype=object)
    y, idx, inv, cnt = run("Unique", [s], 11, n_outputs=4, sorted=0)
    assert y.tolist() == ["b", "a", "c"] and idx.tolist() == [0, 1, 3]
    assert inv.tolist() == [0, 1, 0, 2] and cnt.tolist() == [2, 1, 1]
    s2 = np.array([["b", "a"], ["a", "a"], ["b", "a"]], dtype=object)
    y, idx, inv, cnt = run("Unique", [s2], 11, n_outputs=4, axis=0)
    assert y.tolist() == [["a", "a"], ["b", "a"]] and inv.tolist() == [1, 0, 1] and cnt.tolist() == [1, 2]
    y, *_ = run("Unique", [np.zeros((0,), np.int64)], 11, n_outputs=4)
    assert y.shape == (0,)


def test_center_crop_pad():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    check("CenterCropPad", [x, a(3, 8)], 18)
    check("CenterCropPad", [x, a(2)], 18, axes=[-1])
    (y,) = run("CenterCropPad", [x, a(2, 3)], 18)
    assert np.shares_memory(y, x)


# --- Compress -------------------------------------------------------------------------------------


def test_compress():
    cond = np.array([True, False, True])
    check("Compress", [X, cond], 11, axis=1)
    check("Compress", [X, cond], 9)
    check("Compress", [X, cond[:2]], 11, axis=-3)
    with pytest.raises(InvalidArgument):
        run("Compress", [X, np.array([1, 0, 0, 1, 1], bool)], 11, axis=1)


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_top_k_partial_selection_matches_full_sort(largest, dtype):
    from onyx.ops.tensor.top_k import _sorted_order

    x = rng.integers(0, 20, (5, 300)).astype(dtype)  # many ties around the k-th value
    for axis, k in ((1, 9), (1, 1), (0, 5)):
        v, i = run("TopK", [x, a(k)], 11, n_outputs=2, axis=axis, largest=largest)
        full = np.take(_sorted_order(x, axis, bool(largest)), np.arange(k), axis=axis)
        assert_same(i, full.astype(I64))
        assert_same(v, np.take_along_axis(x, full, axis=axis))
    xf = rng.standard_normal((3, 200)).astype(np.float32)
    xf[1, 5] = np.nan  # NaNs fall back to the full sort
    check("TopK", [xf[[0, 2]], a(10)], 11, n_outputs=2, largest=largest)
    v, i = run("TopK", [xf, a(10)], 11, n_outputs=2, largest=largest)
    assert i.shape == (3, 10)


def test_scalars_come_back_as_arrays():
    from onyx.ops.registry import lookup

    s = np.array(2.5, np.float32)
    for to in (TensorProto.BOOL, TensorProto.FLOAT8E4M3FN, TensorProto.INT32, TensorProto.STRING):
        (y,) = run("Cast", [s], 21, to=to)
        assert isinstance(y, np.ndarray) and y.shape == ()
    (y,) = run("Gather", [np.arange(5, dtype=I64), np.array(-2, I64)], 13)
    assert isinstance(y, np.ndarray) and y.shape == () and y == 3
    for op in ("ReduceSum", "ReduceMax", "ReduceLogSumExp", "ReduceL2", "ReduceMean", "ReduceProd"):
        y = lookup(op, "", 18).fn(np.arange(3, dtype=np.float32), keepdims=0)
        assert isinstance(y, np.ndarray) and y.shape == ()
