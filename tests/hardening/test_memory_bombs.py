"""Memory bombs: a model asking for absurd tensors fails its node with onyx's error, fast, and the
session (and the process) live on (runtime/limits.py, the arena's request bound)."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.errors import Fail, InvalidArgument, OnyxError
from onyx.ir.builder import GraphBuilder
from onyx.kernels import _loader
from onyx.runtime.limits import MAX_TENSOR_BYTES_KEY, default_max_tensor_bytes

HUGE = 1 << 40  # elements: terabytes in any dtype


def _session(model, **config) -> onyx.InferenceSession:
    so = onyx.SessionOptions()
    for key, value in config.items():
        so.add_session_config_entry(key, str(value))
    return onyx.InferenceSession(model, so)


def _shape_fed(op: str, **attrs):
    """``op`` whose size comes from a fed int64 tensor (so nothing is folded at session creation)."""
    b = GraphBuilder(opset=18)
    shape = b.input("shape", np.int64, [None])
    if op == "ConstantOfShape":
        y = b.ConstantOfShape(shape, **attrs)
    elif op == "Expand":
        y = b.Expand(b.const(np.ones((1,), np.float32)), shape)
    elif op == "Tile":
        y = b.Tile(b.const(np.ones((1, 1), np.float32)), shape)
    else:
        raise AssertionError(op)
    b.output(y, "y", np.float32 if op != "ConstantOfShape" else None)
    return b.model()


@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand", "Tile"])
def test_size_from_a_fed_shape(op):
    sess = _session(_shape_fed(op))
    feed = np.array([HUGE, 1024] if op != "Expand" else [HUGE], np.int64)
    if op == "Expand":
        feed = np.array([1 << 24, 1 << 24], np.int64)
    with pytest.raises(OnyxError) as err:
        sess.run(None, {"shape": feed})
    # the node is named (Expand gives a broadcast view: it is the output's copy that is refused)
    assert op in str(err.value) or "output 'y'" in str(err.value)
    small = np.array([2, 3], np.int64)
    assert sess.run(None, {"shape": small})[0].shape == (2, 3)  # the session still works


def test_range_to_an_absurd_length():
    b = GraphBuilder(opset=18)
    limit = b.input("limit", np.int64, [])
    b.output(b.Range(b.const(np.array(0, np.int64)), limit, b.const(np.array(1, np.int64))), "y", np.int64)
    sess = _session(b.model())
    with pytest.raises(OnyxError, match="Range"):
        sess.run(None, {"limit": np.array(HUGE, np.int64)})
    assert sess.run(None, {"limit": np.array(4, np.int64)})[0].tolist() == [0, 1, 2, 3]


def test_resize_to_absurd_scales():
    b = GraphBuilder(opset=18)
    x = b.input("x", np.float32, [1, 1, 4, 4])
    scales = b.input("scales", np.float32, [4])
    b.output(b.Resize(x, b.const(np.array([], np.float32)), scales), "y", np.float32)
    sess = _session(b.model())
    with pytest.raises(OnyxError, match="Resize"):
        sess.run(
            None, {"x": np.ones((1, 1, 4, 4), np.float32), "scales": np.array([1, 1, 1e6, 1e6], np.float32)}
        )
    out = sess.run(
        None, {"x": np.ones((1, 1, 4, 4), np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}
    )
    assert out[0].shape == (1, 1, 8, 8)


def test_broadcast_of_two_long_vectors():
    b = GraphBuilder(opset=18)
    col = b.input("col", np.float32, [None, 1])
    row = b.input("row", np.float32, [1, None])
    b.output(b.Add(col, row), "y", np.float32)
    sess = _session(b.model(), **{MAX_TENSOR_BYTES_KEY: 1 << 20})
    with pytest.raises(Fail, match="Add"):
        sess.run(None, {"col": np.ones((1024, 1), np.float32), "row": np.ones((1, 1024), np.float32)})
    assert sess.run(None, {"col": np.ones((8, 1), np.float32), "row": np.ones((1, 8), np.float32)})[
        0
    ].shape == (
        8,
        8,
    )


@pytest.mark.skipif(not _loader.built("_arena"), reason="the bound lives in the compiled arena")
def test_the_bound_is_a_session_config_entry():
    b = GraphBuilder(opset=18)
    x = b.input("x", np.float32, [None])
    b.output(b.Mul(x, x), "y", np.float32)
    model = b.model()
    two_mib = np.ones(1 << 19, np.float32)
    with pytest.raises(Fail, match="Mul"):
        _session(model, **{MAX_TENSOR_BYTES_KEY: 1 << 20}).run(None, {"x": two_mib})
    np.testing.assert_array_equal(
        _session(model, **{MAX_TENSOR_BYTES_KEY: 0}).run(None, {"x": two_mib})[0], two_mib
    )


@pytest.mark.parametrize("value", ["lots", "-1", "1.5"])
def test_a_bad_bound_is_refused(value):
    b = GraphBuilder(opset=18)
    x = b.input("x", np.float32, [2])
    b.output(b.Relu(x), "y", np.float32)
    with pytest.raises(InvalidArgument, match=MAX_TENSOR_BYTES_KEY):
        _session(b.model(), **{MAX_TENSOR_BYTES_KEY: value})


def test_the_default_bound_follows_the_machine():
    bound = default_max_tensor_bytes()
    assert bound == 0 or 1 << 28 <= bound  # half the machine's memory, where the system says
