"""Dynamic quantization fusions (what onnxruntime.quantization.quantize_dynamic writes, fused as
onnxruntime does):

``Mul(Cast<float>(MatMulInteger(A, B, a_zp, b_zp)), Mul(a_scale, b_scale))`` -> com.microsoft
``MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp)``; when A, a_scale and a_zp are the three
outputs of one ``DynamicQuantizeLinear(x)``, ``DynamicQuantizeMatMul(x, B, b_scale, b_zp)`` instead; a
following ``Add`` of a constant float vector of B's column count becomes its bias. B and b_scale are
constants. Exact: the fused kernels compute float(int32 sum) * (a_scale * b_scale) (+ bias), the same
float operations in the same order."""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import Ctx, attr, is_op, make_node, prod, run_on_graphs


def _scales(ctx: Ctx, mul: Node, cast_out: Value) -> tuple[Value, Value] | None:
    """(a_scale, b_scale) of ``Mul(cast_out, Mul(a_scale, b_scale))`` (either order), b_scale constant."""
    other = mul.inputs[1] if mul.inputs[0] is cast_out else mul.inputs[0]
    sm = prod(other, "Mul")
    if sm is None or len(other.uses) != 1 or ctx.is_output(other):
        return None
    for a_s, b_s in ((sm.inputs[0], sm.inputs[1]), (sm.inputs[1], sm.inputs[0])):
        c = ctx.const(b_s)
        if c is not None and c.dtype == np.float32 and c.ndim <= 1 and ctx.const(a_s) is None:
            return a_s, b_s
    return None


def _visit(ctx: Ctx, mmi: Node) -> bool:
    if not is_op(mmi, "MatMulInteger") or len(mmi.outputs) != 1:
        return False
    y = mmi.outputs[0]
    if not ctx.single_use(y):
        return False
    cast = y.uses[0][0]
    if not is_op(cast, "Cast") or attr(cast, "to", 0) != 1 or not ctx.single_use(cast.outputs[0]):
        return False
    cast_out = cast.outputs[0]
    mul = cast_out.uses[0][0]
    if not is_op(mul, "Mul") or len(mul.inputs) != 2:
        return False
    scales = _scales(ctx, mul, cast_out)
    b = ctx.const(mmi.inputs[1])
    if scales is None or b is None or b.ndim != 2:
        return False
    a_scale, b_scale = scales
    n = b.shape[1]
    bs = ctx.const(b_scale)
    if bs.size not in (1, n):
        return False
    ins = list(mmi.inputs) + [None] * (4 - len(mmi.inputs))
    a, bq, a_zp, b_zp = ins
    group = [mmi, cast, mul, prod(mul.inputs[1] if mul.inputs[0] is cast_out else mul.inputs[0], "Mul")]
    out = mul.outputs[0]
    bias = None
    if ctx.single_use(out):
        add = out.uses[0][0]
        if is_op(add, "Add") and len(add.inputs) == 2:
            other = add.inputs[1] if add.inputs[0] is out else add.inputs[0]
            c = ctx.const(other)
            if c is not None and c.dtype == np.float32 and c.shape == (n,):
                bias = other
                group.append(add)
                out = add.outputs[0]
    name = mmi.name or "matmul_integer"
    dql = prod(a, "DynamicQuantizeLinear")
    if (
        dql is not None
        and a_zp is not None
        and dql.outputs[1] is a_scale
        and len(dql.outputs) > 2
        and dql.outputs[2] is a_zp
    ):
        new = make_node(
            "DynamicQuantizeMatMul", [dql.inputs[0], bq, b_scale, b_zp, bias], name=name + "_DQMatMul"
        )
    else:
        new = make_node(
            "MatMulIntegerToFloat",
            [a, bq, a_scale, b_scale, a_zp, b_zp, bias],
            name=name + "_MatMulIntegerToFloat",
        )
    ctx.replace(group, out, new)
    return True


def dynamic_quantize_matmul_fusion(model: Model) -> bool:
    """Fuse quantize_dynamic's MatMulInteger groups; returns whether it changed the model."""
    return run_on_graphs(model, _visit)
