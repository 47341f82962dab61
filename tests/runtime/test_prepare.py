"""A kernel's per-node state is declared once, ``@op(..., prepare=f)``, and built once per node when the
plan is built: never at run time, never once per run."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.ops import binding, registry

DOMAIN = "test.h4.prepare"
calls = {"prepare": 0, "plain": 0}


def _prepare_affine(*, scale=1.0, offset=0.0):
    calls["prepare"] += 1
    if scale == 0:
        raise ValueError("scale must not be 0")
    table = np.float32(scale), np.float32(offset)  # the "derived state"

    def run(x):
        return x * table[0] + table[1]

    return run


def affine(x, *, scale=1.0, offset=0.0):
    calls["plain"] += 1
    if scale == 0:
        raise ValueError("scale must not be 0")
    return x * np.float32(scale) + np.float32(offset)


registry.register("Affine", affine, domain=DOMAIN, replace=True, prepare=_prepare_affine)


def _model(op_type: str = "Affine", nodes: int = 2, **attrs):
    b = GraphBuilder(opset=17, opsets={DOMAIN: 1})
    y = b.input("x", np.float32, [3])
    for _ in range(nodes):
        y = b.op(op_type, y, domain=DOMAIN, **attrs)
    b.output(y, "y", np.float32, [3])
    return b.model()


@pytest.fixture(autouse=True)
def _reset():
    for k in calls:
        calls[k] = 0


def test_declared_prepare_is_stored_on_the_kernel():
    k = registry.lookup("Affine", DOMAIN, 1)
    assert k.prepare is _prepare_affine


def test_prepare_runs_once_per_node_when_the_plan_is_built():
    s = onyx.InferenceSession(_model(scale=2.0))
    assert calls == {"prepare": 2, "plain": 0}
    x = np.array([1, 2, 3], np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], x * 4)
    assert calls["prepare"] == 2 and calls["plain"] == 0


def test_prepare_gets_the_defaults_of_attributes_the_node_leaves_out():
    node = _model(nodes=1, offset=1.0).graph.nodes[0]
    run = binding.bind(node, 1).prepared()
    np.testing.assert_array_equal(run(np.ones(3, np.float32)), [2, 2, 2])  # scale=1.0 by default


def test_a_prepare_that_raises_leaves_the_error_to_the_run_with_its_node():
    s = onyx.InferenceSession(_model(nodes=1, scale=0.0))
    assert calls["prepare"] == 1
    with pytest.raises(onyx.Fail, match="Affine node .*scale must not be 0"):
        s.run(None, {"x": np.ones(3, np.float32)})
    assert calls["plain"] == 1


def test_no_kernel_sets_prepare_after_its_definition():
    """``fn.prepare = f`` is no longer read: every kernel with per-node state declares it on ``@op``."""
    late = [
        f"{k.fn.__module__}.{k.fn.__qualname__}"
        for ks in registry.registered().values()
        for k in ks
        if getattr(k.fn, "prepare", None) is not None and k.prepare is None
    ]
    assert late == []


def test_conv_and_fused_conv_declare_their_prepare():
    assert registry.lookup("Conv", "", 17).prepare is not None
    assert registry.lookup("FusedConv", "com.microsoft", 1).prepare is not None


# -- prepare sees the node's constant inputs ------------------------------------------------------
seen: dict = {}


def _prepare_scale(*, _constants):
    seen["constants"] = _constants
    w = _constants[1]
    if w is None:
        return None  # a fed W: the plain kernel runs
    double = w * 2  # "derived once from the weight"

    def run(x, w_run):
        assert w_run is w  # the same frozen array on every run
        return x * double

    return run


def scale(x, w):
    return x * w * 2


registry.register("Scale", scale, domain=DOMAIN, replace=True, prepare=_prepare_scale)


def _scale_model(ir_version: int | None = None):
    b = GraphBuilder(opset=17, opsets={DOMAIN: 1})
    x = b.input("x", np.float32, [3])
    w = b.initializer("w", np.array([1, 2, 3], np.float32))
    b.output(b.op("Scale", x, w, domain=DOMAIN), "y", np.float32, [3])
    m = b.model()
    if ir_version is not None:
        m.ir_version = ir_version
    return m


def test_prepare_gets_the_constant_inputs_as_frozen_arrays():
    s = onyx.InferenceSession(_scale_model())
    x, w = seen["constants"]
    assert x is None and isinstance(w, np.ndarray) and not w.flags.writeable
    np.testing.assert_array_equal(w, [1, 2, 3])
    np.testing.assert_array_equal(s.run(None, {"x": np.ones(3, np.float32)})[0], [2, 4, 6])
    assert registry.lookup("Scale", DOMAIN, 1).prepare_wants_constants
    assert not registry.lookup("Affine", DOMAIN, 1).prepare_wants_constants


def test_an_initializer_a_feed_may_override_is_not_a_constant():
    m = _scale_model()
    w = m.graph.initializers["w"]
    m.graph.inputs.append(w)  # IR >= 4: an initializer listed among the inputs can be fed
    s = onyx.InferenceSession(m)
    assert seen["constants"] == (None, None)
    got = s.run(None, {"x": np.ones(3, np.float32), "w": np.full(3, 5, np.float32)})[0]
    np.testing.assert_array_equal(got, [10, 10, 10])
