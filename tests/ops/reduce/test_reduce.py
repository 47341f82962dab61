"""Reduce* and ArgMax/ArgMin beyond the node suite: attribute vs input axes, keepdims, noop, empty
sets, integer/bool/low-precision dtypes, errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from tests.ops.tensor._util import assert_same, check, run

I64 = np.int64
rng = np.random.default_rng(1)
X = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
X[0, 1, 2] = -1.5

REDUCE = [
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
]
MOVED = {op: (13 if op == "ReduceSum" else 18) for op in REDUCE}


def data_for(op):
    return np.abs(X) if op == "ReduceLogSum" else X


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [None, [1], [-1, 0], [0, 1, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_attribute_axes(op, axes, keepdims):
    attrs = {"keepdims": keepdims} | ({} if axes is None else {"axes": axes})
    check(op, [data_for(op)], 11, **attrs)
    check(op, [data_for(op)], 1, **attrs)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [None, [2], [-1, 0]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_input_axes(op, axes, keepdims):
    inputs = [data_for(op)] + ([] if axes is None else [np.array(axes, I64)])
    check(op, inputs, MOVED[op], keepdims=keepdims)
    check(op, inputs, 20, keepdims=keepdims)


NOOP = {
    "ReduceL1": np.abs,
    "ReduceL2": np.abs,
    "ReduceLogSum": np.log,
    "ReduceLogSumExp": lambda x: x,
    "ReduceMax": lambda x: x,
    "ReduceMean": lambda x: x,
    "ReduceMin": lambda x: x,
    "ReduceProd": lambda x: x,
    "ReduceSum": lambda x: x,
    "ReduceSumSquare": np.square,
}


@pytest.mark.parametrize("op", REDUCE)
def test_noop_with_empty_axes_applies_only_the_elementwise_part(op):
    x = data_for(op)
    (y,) = run(op, [x, np.zeros(0, I64)], MOVED[op], noop_with_empty_axes=1)
    assert_same(y, NOOP[op](x).astype(np.float32))
    (y,) = run(op, [x], MOVED[op], noop_with_empty_axes=1)
    assert y.shape == x.shape
    (y,) = run(op, [x, np.zeros(0, I64)], MOVED[op])  # empty axes without noop: reduce all
    assert y.shape == (1, 1, 1)


EMPTY = {
    "ReduceL1": 0.0,
    "ReduceL2": 0.0,
    "ReduceLogSum": -np.inf,
    "ReduceLogSumExp": -np.inf,
    "ReduceMax": -np.inf,
    "ReduceMin": np.inf,
    "ReduceProd": 1.0,
    "ReduceSum": 0.0,
    "ReduceSumSquare": 0.0,
}


@pytest.mark.parametrize("op", sorted(EMPTY))
def test_empty_set_gives_identity(op):
    x = np.zeros((2, 0, 3), np.float32)
    (y,) = run(op, [x, np.array([1], I64)], MOVED[op], keepdims=0)
    assert y.shape == (2, 3) and y.dtype == np.float32
    assert (y == EMPTY[op]).all()
    (y,) = run(op, [x], 11, axes=[0])
    assert y.shape == (1, 0, 3)


def test_empty_max_min_for_ints_and_bools():
    x = np.zeros((0, 2), np.int32)
    (y,) = run("ReduceMax", [x, np.array([0], I64)], 18)
    assert y.tolist() == [[np.iinfo(np.int32).min] * 2]
    (y,) = run("ReduceMin", [x.astype(np.uint8), np.array([0], I64)], 18)
    assert y.tolist() == [[255, 255]] and y.dtype == np.uint8
    (y,) = run("ReduceMax", [np.zeros((0,), bool)], 20)
    assert y.tolist() == [False]
    (y,) = run("ReduceMin", [np.zeros((0,), bool)], 20)
    assert y.tolist() == [True]


def test_bool_max_min():
    b = np.array([[True, False], [False, False]])
    (y,) = run("ReduceMax", [b, np.array([1], I64)], 20, keepdims=0)
    assert y.tolist() == [True, False] and y.dtype == bool
    (y,) = run("ReduceMin", [b], 20, keepdims=0)
    assert y.shape == () and y.dtype == bool and not y


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
@pytest.mark.parametrize(
    "op", ["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1"]
)
def test_integer_types_keep_their_type(op, dtype):
    x = rng.integers(0, 5, (3, 4)).astype(dtype)
    if op == "ReduceSumSquare":  # the reference evaluator promotes int32 to int64 here
        (y,) = run(op, [x], 11, axes=[1])
        assert_same(y, np.sum(x * x, axis=1, keepdims=True, dtype=dtype))
    else:
        check(op, [x], 11, axes=[1])


def test_integer_mean_truncates():
    (y,) = run("ReduceMean", [np.array([[1, 2], [4, 4], [-1, -2]], np.int32), np.array([1], I64)], 18)
    assert y.dtype == np.int32 and y.ravel().tolist() == [1, 4, -1]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("op", REDUCE)
def test_low_precision_floats(op, dtype):
    x = data_for(op).astype(dtype)
    (y,) = run(op, [x, np.array([-1], I64)], MOVED[op])
    (ref,) = run(op, [x.astype(np.float32), np.array([-1], I64)], MOVED[op])
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-2, atol=1e-2)


def test_log_sum_exp_is_stable():
    x = np.array([[1000.0, 1000.0], [-1000.0, -np.inf]], np.float32)
    (y,) = run("ReduceLogSumExp", [x, np.array([1], I64)], 18, keepdims=0)
    np.testing.assert_allclose(y, [1000 + np.log(2), -1000], rtol=1e-6)
    (y,) = run("ReduceLogSumExp", [np.full((1, 2), -np.inf, np.float32)], 18)
    assert y.ravel().tolist() == [-np.inf]


def test_scalar_input_and_bad_axes():
    s = np.array(3.0, np.float32)
    (y,) = run("ReduceSum", [s], 13)
    assert y.shape == () and y == 3.0
    with pytest.raises(InvalidArgument):
        run("ReduceSum", [X, np.array([3], I64)], 13)
    with pytest.raises(InvalidArgument):
        run("ReduceMax", [X, np.array([1, -2], I64)], 18)
    with pytest.raises(InvalidArgument):
        run("ReduceMean", [X], 11, axes=[5])


# --- ArgMax / ArgMin ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_arg_versions(op, axis, keepdims):
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)  # plenty of ties
    check(op, [x], 11, axis=axis, keepdims=keepdims)
    check(op, [x], 1, axis=axis % 3, keepdims=keepdims)
    for last in (0, 1):
        check(op, [x], 13, axis=axis, keepdims=keepdims, select_last_index=last)


def test_arg_select_last_index_and_dtypes():
    x = np.array([[1, 3, 3, 0, 0]], np.int32)
    assert run("ArgMax", [x], 13, axis=1, select_last_index=1)[0].tolist() == [[2]]
    assert run("ArgMax", [x], 13, axis=1)[0].tolist() == [[1]]
    assert run("ArgMin", [x], 12, axis=1, select_last_index=1, keepdims=0)[0].tolist() == [4]
    b = x.astype(ml_dtypes.bfloat16)
    (y,) = run("ArgMax", [b], 13, axis=1)
    assert y.dtype == I64 and y.tolist() == [[1]]
    u = np.array([2**64 - 1, 0, 2**63], np.uint64)
    assert run("ArgMax", [u], 13)[0].tolist() == [0]
    with pytest.raises(InvalidArgument):
        run("ArgMax", [np.zeros((2, 0), np.float32)], 13, axis=1)
    with pytest.raises(InvalidArgument):
        run("ArgMin", [x], 13, axis=2)
