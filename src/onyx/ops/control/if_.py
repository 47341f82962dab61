"""If: run one of two subgraphs depending on a boolean condition."""

from __future__ import annotations

from onyx.ops.control._common import pack, scalar_bool
from onyx.ops.registry import op


@op("If", since=1)
def if_(cond, *, then_branch, else_branch):
    # Versions 11 to 25 only widen the types the branches may return (sequences from 13, optionals
    # from 16, newer element types later): one kernel serves them all.
    branch = then_branch if scalar_bool(cond, "If: cond") else else_branch
    return pack(branch())
