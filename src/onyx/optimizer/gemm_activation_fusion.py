"""Gemm + activation fusion: ``Act(Gemm(A, B, C))`` -> com.microsoft ``FusedGemm`` (float32), Act
one of Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid."""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, is_op, make_node, run_on_graphs
from onyx.optimizer.conv_activation_fusion import activation_of


def _visit(ctx: Ctx, gemm: Node) -> bool:
    if not is_op(gemm, "Gemm") or ctx.opset < 11 or len(gemm.outputs) != 1:
        return False
    y = gemm.outputs[0]
    if not ctx.single_use(y):
        return False
    b = ctx.const(gemm.inputs[1])
    if (b is None or b.dtype.name != "float32") and ctx.elem(gemm.inputs[0]) != 1:
        return False
    if any(
        a.ref_attr_name or k not in ("alpha", "beta", "transA", "transB") for k, a in gemm.attributes.items()
    ):
        return False
    act_node = y.uses[0][0]
    act = activation_of(ctx, act_node, allow_clip=False)
    if act is None:
        return False
    out = act_node.outputs[0]
    name, params = act
    kw = {"activation": name}
    if params:
        kw["activation_alpha"] = float(params[0])
    if len(params) > 1:
        kw["activation_beta"] = float(params[1])
    new = make_node("FusedGemm", list(gemm.inputs), name=(gemm.name or "gemm") + "_FusedGemm", **kw)
    new.attributes.update(gemm.attributes)
    ctx.replace([gemm, act_node], out, new)
    return True


def gemm_activation_fusion(model: Model) -> bool:
    """Fuse Gemm + activation into FusedGemm; returns whether it changed."""
    return run_on_graphs(model, _visit)
