"""Sequence kernels: construction, indexing, insertion, erasure, splitting and joining."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops import registry


def k(op_type, opset=11):
    return registry.lookup(op_type, "", opset).fn


def seq3():
    return [np.array([1], np.int64), np.array([2, 3], np.int64), np.array([4, 5, 6], np.int64)]


def test_construct_and_length():
    s = k("SequenceConstruct")(*seq3())
    assert isinstance(s, list) and len(s) == 3
    n = k("SequenceLength")(s)
    assert n.dtype == np.int64 and n.shape == () and n == 3
    assert k("SequenceLength")([]) == 0


def test_construct_rejects_mixed_types():
    with pytest.raises(InvalidArgument, match="element type"):
        k("SequenceConstruct")(np.zeros(1, np.float32), np.zeros(1, np.int64))


def test_empty_sequence_dtype():
    assert k("SequenceEmpty")() == []
    assert k("SequenceEmpty")(dtype=7) == []
    with pytest.raises(InvalidArgument):
        k("SequenceEmpty")(dtype=999)


@pytest.mark.parametrize("pos,expected", [(0, [1]), (2, [4, 5, 6]), (-1, [4, 5, 6]), (-3, [1])])
def test_at(pos, expected):
    for dt in (np.int32, np.int64):
        assert k("SequenceAt")(seq3(), np.array(pos, dt)).tolist() == expected


@pytest.mark.parametrize("pos", [3, -4])
def test_at_out_of_range(pos):
    with pytest.raises(InvalidArgument, match="out of range"):
        k("SequenceAt")(seq3(), np.array(pos))


def test_at_position_must_be_int_scalar():
    with pytest.raises(InvalidArgument):
        k("SequenceAt")(seq3(), np.array(1.0))
    with pytest.raises(InvalidArgument):
        k("SequenceAt")(seq3(), np.array([0, 1]))


def test_erase_does_not_mutate():
    s = seq3()
    out = k("SequenceErase")(s)
    assert len(s) == 3 and [t.tolist() for t in out] == [[1], [2, 3]]
    out = k("SequenceErase")(s, np.array(-3))
    assert [t.tolist() for t in out] == [[2, 3], [4, 5, 6]]
    out = k("SequenceErase")(s, np.array(1, np.int32))
    assert [t.tolist() for t in out] == [[1], [4, 5, 6]]
    with pytest.raises(InvalidArgument):
        k("SequenceErase")(s, np.array(3))
    with pytest.raises(InvalidArgument):
        k("SequenceErase")([])


def test_insert_positions():
    s = seq3()
    t = np.array([9], np.int64)
    assert [x.tolist() for x in k("SequenceInsert")(s, t)][-1] == [9]
    assert [x.tolist() for x in k("SequenceInsert")(s, t, np.array(0))][0] == [9]
    assert [x.tolist() for x in k("SequenceInsert")(s, t, np.array(3))][-1] == [9]
    assert [x.tolist() for x in k("SequenceInsert")(s, t, np.array(-1))][2] == [9]
    assert len(s) == 3
    assert len(k("SequenceInsert")([], t)) == 1
    with pytest.raises(InvalidArgument):
        k("SequenceInsert")(s, t, np.array(4))
    with pytest.raises(InvalidArgument, match="element type"):
        k("SequenceInsert")(s, np.zeros(1, np.float32))


@pytest.mark.parametrize("opset", [11, 24])
def test_split_to_sequence_default_and_keepdims(opset):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = k("SplitToSequence", opset)
    parts = f(x)
    assert len(parts) == 3 and parts[0].shape == (1, 4)
    parts = f(x, axis=-1, keepdims=0)
    assert len(parts) == 4 and parts[1].shape == (3,) and parts[1].tolist() == [1, 5, 9]


def test_split_to_sequence_scalar_and_list():
    x = np.arange(10)
    parts = k("SplitToSequence")(x, np.array(4))
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    parts = k("SplitToSequence")(x, np.array([3, 0, 7], np.int32))
    assert [p.shape for p in parts] == [(3,), (0,), (7,)]
    # keepdims is ignored when split is given
    parts = k("SplitToSequence")(x.reshape(2, 5), np.array(1), axis=0, keepdims=0)
    assert parts[0].shape == (1, 5)
    with pytest.raises(InvalidArgument, match="sum"):
        k("SplitToSequence")(x, np.array([3, 3]))
    with pytest.raises(InvalidArgument, match="positive"):
        k("SplitToSequence")(x, np.array(0))
    with pytest.raises(InvalidArgument, match="axis"):
        k("SplitToSequence")(x, axis=1)


def test_split_to_sequence_strings_and_empty():
    x = np.array([["a", "b"], ["c", "d"]], dtype=object)
    parts = k("SplitToSequence")(x, axis=1, keepdims=0)
    assert [p.tolist() for p in parts] == [["a", "c"], ["b", "d"]]
    assert k("SplitToSequence")(np.zeros((0, 2))) == []


def test_concat_from_sequence():
    s = [np.ones((2, 3)), np.zeros((1, 3))]
    out = k("ConcatFromSequence")(s, axis=0)
    assert out.shape == (3, 3)
    s = [np.ones((2, 3)), np.zeros((2, 3))]
    assert k("ConcatFromSequence")(s, axis=-1).shape == (2, 6)
    assert k("ConcatFromSequence")(s, axis=2, new_axis=1).shape == (2, 3, 2)
    assert k("ConcatFromSequence")(s, axis=-3, new_axis=1).shape == (2, 2, 3)
    with pytest.raises(InvalidArgument, match="out of range"):
        k("ConcatFromSequence")(s, axis=2)
    with pytest.raises(InvalidArgument, match="empty"):
        k("ConcatFromSequence")([], axis=0)
    with pytest.raises(InvalidArgument, match="cannot join"):
        k("ConcatFromSequence")([np.ones((2, 3)), np.ones((2, 2))], axis=0)


def test_non_sequence_input():
    with pytest.raises(InvalidArgument, match="sequence"):
        k("SequenceLength")(np.zeros(3))
