"""If: run one of two subgraphs depending on a boolean condition."""

from __future__ import annotations

import numpy as np

from onyx.ir.dtypes import DataType
from onyx.ir.model import Graph
from onyx.ops.control._common import body_input, merge_infos, pack, scalar_bool, set_info
from onyx.ops.registry import op, shape_rule


@op("If", since=1)
def if_(cond, *, then_branch, else_branch):
    # Versions 11 to 25 only widen the types the branches may return (sequences from 13, optionals
    # from 16, newer element types later): one kernel serves them all.
    branch = then_branch if scalar_bool(cond, "If: cond") else else_branch
    return pack(branch())


@shape_rule("If")
def _if_shape(ctx) -> None:
    """The branches' outputs merged: equal dims stay, differing dims become fresh symbols, differing
    ranks an unknown rank. With a condition known at load time, the branch that runs."""
    then_g, else_g = ctx.attr("then_branch"), ctx.attr("else_branch")
    if not isinstance(then_g, Graph) or not isinstance(else_g, Graph):
        return
    if len(then_g.outputs) != len(else_g.outputs):
        ctx.fail(f"then_branch returns {len(then_g.outputs)} values, else_branch {len(else_g.outputs)}")
    if len(then_g.outputs) < ctx.num_outputs:
        ctx.fail(f"the node has {ctx.num_outputs} outputs, the branches return {len(then_g.outputs)}")
    elem = ctx.input_elem(0)
    if elem is not None and elem != int(DataType.BOOL):
        ctx.fail(f"cond must be bool, got element type {elem}")
    a = ctx.infer_subgraph(then_g, [])
    b = ctx.infer_subgraph(else_g, [])
    cond = ctx.input_value(0)
    if cond is not None and np.asarray(cond).size == 1 and np.asarray(cond).dtype != object:
        for i, info in enumerate(a if bool(np.asarray(cond).reshape(-1)[0]) else b):
            set_info(ctx, i, body_input(info))
        return
    for i, (x, y) in enumerate(zip(a, b)):
        set_info(ctx, i, merge_infos(ctx, x, y, f"output {i}"))
