"""Symbolic dims: arithmetic, printing and parsing back."""

import numpy as np
import pytest

from onyx.ir.symbolic import Sym, parse_dim

batch, seq = Sym.named("batch"), Sym.named("seq")


def test_arithmetic_normalises():
    assert str(batch * seq) == "batch*seq"
    assert str(2 * seq) == "2*seq"
    assert str(seq + 1) == "seq+1"
    assert str(seq - seq + 3) == "3" and (seq - seq + 3) == 3
    assert (2 * seq) // 2 == seq
    assert (batch * seq) // seq == batch
    assert batch * seq == seq * batch and hash(batch * seq) == hash(seq * batch)


def test_object_arrays_do_shape_arithmetic():
    shape = np.array([batch, seq, 64], dtype=object)
    assert list(np.prod(shape[:2], keepdims=True)) == [batch * seq]
    assert list(shape * 2) == [2 * batch, 2 * seq, 128]


@pytest.mark.parametrize("text", ["batch", "2*seq", "batch*seq", "seq+1", "2*batch*seq-3"])
def test_parse_round_trips(text):
    assert str(parse_dim(text)) == text


def test_parse_keeps_foreign_names_opaque():
    d = parse_dim("Sequence Length(1)")
    assert isinstance(d, Sym) and str(d) == "Sequence Length(1)"


def test_sym_is_not_an_index():
    with pytest.raises((TypeError, IndexError)):
        np.zeros(3)[batch]
