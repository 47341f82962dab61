"""Conv + BatchNormalization, Conv + Mul/Add, MatMul + Add -> Gemm."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.ir.builder import GraphBuilder
from onyx.optimizer.conv_bn_fusion import fuse_conv_bn
from onyx.optimizer.conv_mul_add_fusion import fuse_conv_mul_add
from onyx.optimizer.matmul_add_gemm import fuse_matmul_add
from tests.optimizer._helpers import check_pass, ops, rand

F32 = np.float32


def _bn_params(b, m, seed=1, dtype=F32):
    r = np.random.default_rng(seed)
    return (
        b.const((r.random(m) + 0.5).astype(dtype)),
        b.const(r.standard_normal(m).astype(dtype)),
        b.const((0.1 * r.standard_normal(m)).astype(dtype)),
        b.const((r.random(m) + 0.5).astype(dtype)),
    )


@pytest.mark.parametrize("opset", [9, 14, 15, 21])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("group", [1, 2])
def test_conv_bn_folds(opset, bias, group):
    def build():
        b = GraphBuilder(opset=opset)
        x = b.input("x", F32, ["N", 4, 5, 5])
        w = b.const(rand(6, 4 // group, 3, 3, seed=2))
        args = [x, w] + ([b.const(rand(6, seed=3))] if bias else [])
        y = b.Conv(*args, pads=[1, 1, 1, 1], group=group)
        b.output(b.BatchNormalization(y, *_bn_params(b, 6), epsilon=1e-3), "y", F32, None)
        return b.model()

    m = check_pass(build, fuse_conv_bn, [{"x": rand(n, 4, 5, 5)} for n in (1, 2)], rtol=1e-5, atol=1e-5)
    assert ops(m) == {"Conv": 1}
    assert m.graph.outputs[0].name == "y"


def test_conv_transpose_bn_folds_with_groups():
    def build():
        b = GraphBuilder(opset=15)
        x = b.input("x", F32, [1, 4, 3, 3])
        y = b.ConvTranspose(
            x, b.const(rand(4, 3, 2, 2, seed=2)), b.const(rand(6, seed=3)), group=2, strides=[2, 2]
        )
        b.output(b.Relu(b.BatchNormalization(y, *_bn_params(b, 6))), "y", F32, None)
        return b.model()

    m = check_pass(build, fuse_conv_bn, {"x": rand(1, 4, 3, 3)}, rtol=1e-5, atol=1e-5)
    assert ops(m) == {"ConvTranspose": 1, "Relu": 1}


def test_conv_bn_is_kept_when_the_conv_output_has_other_readers_or_bn_trains():
    def build():
        b = GraphBuilder(opset=15)
        x = b.input("x", F32, [1, 2, 4, 4])
        y = b.Conv(x, b.const(rand(3, 2, 1, 1)))
        b.output(b.BatchNormalization(y, *_bn_params(b, 3)), "y", F32, None)
        b.output(y, "conv", F32, None)
        return b.model()

    check_pass(build, fuse_conv_bn, {"x": rand(1, 2, 4, 4)}, changed=False)

    b = GraphBuilder(opset=15)
    x = b.input("x", F32, [1, 2, 4, 4])
    y = b.Conv(x, b.input("w", F32, [3, 2, 1, 1]))  # weights are a feed
    b.output(b.BatchNormalization(y, *_bn_params(b, 3)), "y", F32, None)
    assert not fuse_conv_bn(b.model())


def test_conv_bn_float16():
    def build():
        b = GraphBuilder(opset=15)
        x = b.input("x", np.float16, [1, 2, 4, 4])
        y = b.Conv(x, b.const(rand(3, 2, 3, 3, dtype=np.float16)))
        b.output(b.BatchNormalization(y, *_bn_params(b, 3, dtype=np.float16)), "y", np.float16, None)
        return b.model()

    m = check_pass(build, fuse_conv_bn, {"x": rand(1, 2, 4, 4, dtype=np.float16)}, rtol=1e-2, atol=1e-2)
    assert ops(m) == {"Conv": 1}


@pytest.mark.parametrize(
    "op, cshape, fused",
    [
        ("Mul", (3, 1, 1), True),
        ("Mul", (1, 3, 1, 1), True),
        ("Add", (3, 1, 1), True),
        ("Add", (), True),
        ("Mul", (1,), True),
        ("Add", (1, 1, 4), False),
        ("Mul", (2, 3, 1, 1), False),
        ("Mul", (1, 1, 3, 1, 1), False),
    ],
)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_mul_add_folds(op, cshape, fused, bias):
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [2, 2, 4, 4])
        args = [x, b.const(rand(3, 2, 3, 3, seed=4))] + ([b.const(rand(3, seed=5))] if bias else [])
        y = b.Conv(*args, pads=[1, 1, 1, 1])
        c = b.const(rand(*cshape, seed=6) if cshape else np.float32(1.5))
        b.output(b.op(op, c, y) if op == "Add" else b.op(op, y, c), "y", F32, None)
        return b.model()

    m = check_pass(build, fuse_conv_mul_add, {"x": rand(2, 2, 4, 4)}, changed=fused, rtol=1e-5, atol=1e-5)
    assert (op in ops(m)) is not fused


def test_conv_mul_then_add_chain_folds_completely():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [1, 2, 4, 4])
        y = b.Conv(x, b.const(rand(3, 2, 3, 3)))
        y = b.Add(b.Mul(y, b.const(rand(3, 1, 1, seed=7))), b.const(rand(3, 1, 1, seed=8)))
        b.output(b.Relu(y), "y", F32, None)
        return b.model()

    m = check_pass(build, fuse_conv_mul_add, {"x": rand(1, 2, 4, 4)}, rtol=1e-5, atol=1e-5)
    assert ops(m) == {"Conv": 1, "Relu": 1}


@pytest.mark.parametrize(
    "ashape, cshape, fused",
    [
        (["N", 4], (5,), True),
        ([3, 4], (1, 5), True),
        ([3, 4], (3, 5), True),
        ([3, 4], (3, 1), True),
        ([3, 4], (), True),
        (["N", 4], (3, 5), False),
        ([2, 3, 4], (5,), False),
        ([3, 4], (2, 3, 5), False),
    ],
)
def test_matmul_add_becomes_gemm(ashape, cshape, fused):
    def build():
        b = GraphBuilder(opset=13)
        a = b.input("a", F32, ashape)
        y = b.MatMul(a, b.const(rand(4, 5, seed=1)))
        b.output(b.Add(y, b.const(rand(*cshape, seed=2) if cshape else np.float32(2))), "y", F32, None)
        return b.model()

    shape = [3 if d == "N" else d for d in ashape]
    m = check_pass(build, fuse_matmul_add, {"a": rand(*shape)}, changed=fused, rtol=1e-5, atol=1e-5)
    assert ("Gemm" in ops(m)) is fused
    assert m.graph.outputs[0].name == "y"


def test_matmul_add_with_fed_bias_or_old_opset_stays():
    def build(opset, fed):
        b = GraphBuilder(opset=opset)
        a = b.input("a", F32, [3, 4])
        c = b.input("c", F32, [5]) if fed else b.const(rand(5))
        b.output(b.Add(b.MatMul(a, b.const(rand(4, 5))), c), "y", F32, None)
        return b.model()

    assert not fuse_matmul_add(build(13, True))
    assert not fuse_matmul_add(build(6, False))
    assert fuse_matmul_add(build(7, False))


def test_ir3_initializers_listed_as_inputs_are_constants_but_stay_inputs():
    """Before IR 4 an initializer that is also a graph input is a constant (onnxruntime's reading):
    BatchNormalization folds; new initializers are listed as inputs too, as IR 3 requires."""

    def build():
        b = GraphBuilder(opset=9, ir_version=3)
        x = b.input("x", F32, [1, 2, 4, 4])
        w = b.initializer("w", rand(3, 2, 3, 3, seed=9))
        params = _bn_params(b, 3)
        for v in (w, *params):
            b.graph.inputs.append(v)
        b.output(b.BatchNormalization(b.Conv(x, w), *params), "y", F32, None)
        return b.model()

    from onyx.optimizer.dead_code import eliminate_dead_code

    m = check_pass(
        build, lambda m: fuse_conv_bn(m) | eliminate_dead_code(m), {"x": rand(1, 2, 4, 4)}, rtol=1e-5
    )
    assert ops(m) == {"Conv": 1}
    assert [v.name for v in m.graph.inputs] == ["x", "w__opt1", "w_bias__opt2"]
