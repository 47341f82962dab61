"""Constant folding and shape-subgraph folding."""

from __future__ import annotations

import numpy as np

from onyx.ir.builder import GraphBuilder
from onyx.ir.model import Function, Node, Value
from onyx.optimizer.constant_folding import fold_constants
from onyx.optimizer.dead_code import eliminate_dead_code
from onyx.optimizer.levels import optimize
from onyx.optimizer.shape_folding import fold_shapes
from tests.optimizer._helpers import check_pass, ops, rand, run


def test_constant_subexpression_becomes_initializer():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", np.float32, [2, 3])
        c = b.Add(b.const(np.full(3, 2.0, np.float32)), b.Constant(value=np.ones(3, np.float32)))
        b.output(b.Mul(x, b.Sqrt(c)), "y", np.float32, [2, 3])
        return b.model()

    m = check_pass(build, fold_constants, {"x": rand(2, 3)})
    assert ops(m) == {"Mul": 1}


def test_folded_graph_output_keeps_its_name_as_a_constant_node():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", np.float32, [3])
        b.output(b.Relu(x), "r", np.float32, [3])
        b.output(b.Neg(b.const(np.arange(3, dtype=np.float32))), "k", np.float32, [3])
        return b.model()

    m = check_pass(build, fold_constants, {"x": rand(3)})
    assert ops(m) == {"Relu": 1, "Constant": 1}
    assert not fold_constants(m)  # the Constant of a graph output is not folded again


def test_random_ops_and_overridable_initializers_are_not_folded():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [2])
    w = b.initializer("w", np.ones(2, np.float32))
    b.graph.inputs.append(w)  # an initializer that a feed may override
    r = b.RandomNormal(shape=[2], seed=1.0)
    b.output(b.Add(r, b.Neg(w)), "y", np.float32, [2])
    b.output(b.Add(x, b.Neg(w)), "z", np.float32, [2])
    m = b.model()
    assert not fold_constants(m)
    assert ops(m)["RandomNormal"] == 1 and ops(m)["Neg"] == 2


def test_huge_outputs_from_small_inputs_are_not_folded():
    def build(n):
        b = GraphBuilder(opset=17)
        x = b.input("x", np.float32, [1])
        big = b.ConstantOfShape(b.const(np.array([n, n], np.int64)), value=np.ones(1, np.float32))
        b.output(b.ReduceSum(b.Add(big, x), keepdims=0), "y", np.float32, [])
        return b.model()

    m = build(2000)  # 4M elements
    assert not fold_constants(m)
    m = check_pass(lambda: build(20), fold_constants, {"x": rand(1)})
    assert "ConstantOfShape" not in ops(m)


def test_folding_inside_subgraph_reading_outer_constants():
    def build():
        b = GraphBuilder(opset=17)
        cond = b.input("cond", np.bool_, [])
        x = b.input("x", np.float32, [3])
        k = b.const(np.full(3, 3.0, np.float32))
        then = b.subgraph("then")
        then.output(then.Mul(x, then.Exp(k)), "t")
        other = b.subgraph("else")
        other.output(other.Sub(x, k), "e")
        b.output(b.If(cond, then_branch=then.graph, else_branch=other.graph), "y", np.float32, [3])
        return b.model()

    feeds = [{"cond": np.array(c), "x": rand(3)} for c in (True, False)]
    m = check_pass(build, fold_constants, feeds)
    assert "Exp" not in ops(m)


def test_folding_in_a_function_body_keeps_constant_nodes():
    def build():
        b = GraphBuilder(opset=17, opsets={"local": 1})
        x = b.input("x", np.float32, [3])
        b.output(b.op("Scale", x, domain="local"), "y", np.float32, [3])
        m = b.model()
        f = Function("local", "Scale")
        f.opset_imports = [("", 17)]
        fx, fy = Value("fx"), Value("fy")
        f.inputs, f.outputs = [fx], [fy]
        c1, c2, c = Value("c1"), Value("c2"), Value("c")
        f.graph.append_node(Node("Constant", [], [c1], {"value": _tensor_attr(np.float32(2))}))
        f.graph.append_node(Node("Constant", [], [c2], {"value": _tensor_attr(np.float32(3))}))
        f.graph.append_node(Node("Mul", [c1, c2], [c]))
        f.graph.append_node(Node("Mul", [fx, c], [fy]))
        m.functions.append(f)
        return m

    m = check_pass(build, lambda m: fold_constants(m) | eliminate_dead_code(m), {"x": rand(3)})
    assert ops(m) == {"Scale": 1, "Constant": 1, "Mul": 1}


def _tensor_attr(a):
    from onyx.ir.builder import make_attr

    return make_attr("value", np.asarray(a))


def _shape_model(static: bool):
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [2 if static else "N", 3, 4])
    s = b.Shape(x)
    d0 = b.Unsqueeze(b.Gather(s, b.const(np.int64(0))), b.const(np.array([0], np.int64)))
    d12 = b.Mul(b.Gather(s, b.const(np.int64(1))), b.Gather(s, b.const(np.int64(2))))
    shape = b.Concat(d0, b.Unsqueeze(d12, b.const(np.array([0], np.int64))), axis=0)
    b.output(b.Reshape(x, shape), "y", np.float32, [2 if static else "N", 12])
    return b.model()


def test_shape_subgraph_of_static_shape_folds_away():
    m = check_pass(lambda: _shape_model(True), fold_shapes, {"x": rand(2, 3, 4)})
    assert ops(m) == {"Reshape": 1}


def test_shape_subgraph_with_symbolic_batch_keeps_only_what_depends_on_it():
    feeds = [{"x": rand(n, 3, 4)} for n in (1, 5)]
    m = check_pass(lambda: _shape_model(False), fold_shapes, feeds)
    c = ops(m)
    assert c["Mul"] == 0 and c["Shape"] == 1 and c["Gather"] == 1


def test_optimize_infers_types_first_for_the_passes():
    """Cast elimination needs the Shape output's type, which only the inference stage gives it."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N", 3])
    s = b.Shape(x)
    b.output(b.Cast(s, to=7), "y", np.int64, [2])
    m = b.model()
    assert s.type is None
    optimize(m, 1)
    assert s.type is not None and s.type.elem_type == 7 and list(s.type.shape.dims) == [2]
    assert ops(m) == {"Shape": 1}
    np.testing.assert_array_equal(run(m, {"x": rand(5, 3)})[0], [5, 3])
