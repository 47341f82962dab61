"""The session's stages, check -> infer shapes -> optimize -> plan: the session's copy of the model
carries the inferred types, the caller's model is untouched, passes keep the types right, and the
session reports its outputs as onnxruntime does."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.ir.model import Node, Value
from onyx.ir.types import TensorType
from onyx.optimizer._pattern import Ctx, make_node

F = np.float32


def _dims(v: Value) -> list | None:
    t = v.type
    return list(t.shape.dims) if isinstance(t, TensorType) and t.shape is not None else None


def _mlp(out_shape=None):
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["N", 4])
    h = b.Relu(b.MatMul(x, b.initializer("w", np.ones((4, 3), F))))
    b.output(b.Add(h, b.initializer("c", np.ones(3, F))), "y", F, out_shape)
    return b.model()


def test_the_session_model_carries_inferred_types_and_the_callers_model_does_not():
    m = _mlp()
    hidden = [v for n in m.graph.nodes for v in n.outputs if v.name != "y"]
    assert all(v.type is None for v in hidden)
    s = onyx.InferenceSession(m, providers=["CPUExecutionProvider"])
    assert all(v.type is None for v in hidden)  # the session worked on a clone
    typed = {v.name: v for n in s._model.graph.nodes for v in n.outputs}
    assert typed  # (Gemm fusion may have merged the nodes; whatever is left is typed)
    for v in typed.values():
        assert isinstance(v.type, TensorType) and v.type.elem_type == 1 and _dims(v) == ["N", 3], v


@pytest.mark.parametrize("level", [0, 1, 99])
def test_outputs_are_reported_as_onnxruntime_reports_them(level):
    """Declared dims stay as declared, inference fills what the model leaves out, a known size
    replaces a symbol, a size that depends on data is None (measured with onnxruntime 1.2x)."""
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["B", 2])
    b.output(b.Relu(x), "y", F, ["N", 2])
    b.output(b.Neg(x), "z", F, [None, None])
    b.output(b.NonZero(x), "w", np.int64, None)
    b.output(b.Shape(x), "s", None, None)
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel(level)
    got = [(o.name, o.type, o.shape) for o in onyx.InferenceSession(b.model(), so).get_outputs()]
    assert got == [
        ("y", "tensor(float)", ["N", 2]),
        ("z", "tensor(float)", ["B", 2]),
        ("w", "tensor(int64)", [2, None]),
        ("s", "tensor(int64)", [2]),
    ]


def test_a_known_size_replaces_a_declared_symbol_in_the_reported_output():
    b = GraphBuilder(opset=17)
    x = b.input("x", F, [3, 2])
    b.output(b.Relu(x), "y", F, ["N", 2])
    assert onyx.InferenceSession(b.model()).get_outputs()[0].shape == [3, 2]


def test_a_fusion_types_the_values_its_new_nodes_make():
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["N", 4])
    y = b.Exp(x)
    b.output(b.Abs(y), "z", F, ["N", 4])
    m = onyx.infer_shapes(b.model())
    z = m.graph.outputs[0]
    t = Value("t")
    neg = Node("Neg", [x], [t])
    relu = make_node("Relu", [t], domain="")
    Ctx(m, m.graph).replace([y.producer, z.producer], z, [neg, relu])
    assert [n.op_type for n in m.graph.nodes] == ["Neg", "Relu"]
    assert t.type.elem_type == 1 and _dims(t) == ["N", 4]
    assert _dims(z) == ["N", 4]
    x0 = np.array([[-1, 2, -3, 4]], F)
    np.testing.assert_array_equal(onyx.InferenceSession(m).run(None, {"x": x0})[0], np.maximum(-x0, 0))


def test_optimize_folds_shape_arithmetic_from_the_values_inference_left():
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["N", 3, 4])
    shape = b.Shape(x)
    tail = b.Slice(shape, b.const(np.array([1], np.int64)), b.const(np.array([3], np.int64)))
    b.output(b.Reshape(x, b.Concat(b.const(np.array([-1], np.int64)), tail, axis=0)), "y", F, None)
    m = onyx.infer_shapes(b.model())
    assert tail.inferred_value.tolist() == [3, 4]  # the stage keeps what it computed
    onyx.optimize(m, 1, infer=False)
    assert [n.op_type for n in m.graph.nodes] == ["Reshape"]
    x0 = np.arange(24, dtype=F).reshape(2, 3, 4)
    np.testing.assert_array_equal(onyx.InferenceSession(m).run(None, {"x": x0})[0], x0)


def test_a_crashing_shape_rule_leaves_values_as_declared_and_strict_names_the_node(monkeypatch):
    from onyx.ops import registry

    def broken(ctx):
        raise ZeroDivisionError("bug in a rule")

    monkeypatch.setitem(registry._shape_rules, ("", "Relu"), broken)
    m = _mlp(["N", 3])
    s = onyx.InferenceSession(m)  # not strict: the session is built, Relu's output stays untyped
    np.testing.assert_array_equal(s.run(None, {"x": np.ones((2, 4), F)})[0], np.full((2, 3), 5, F))
    with pytest.raises(onyx.Fail, match="Relu.*shape rule failed: ZeroDivisionError"):
        onyx.infer_shapes(_mlp(), strict=True)
