"""MatMul scale and transpose fusion into com.microsoft ``FusedMatMul`` (float32):

* ``MatMul(A, B) * c`` or ``/ c`` (c a scalar constant), and ``MatMul(A * c, B)`` -> alpha;
* ``MatMul(Transpose(A), B)`` with a perm that swaps the last two axes -> transA (transB alike), or
  moves the first axis to the second-to-last place -> transBatchA (with the swap: both).

Only when there is something to fold; an existing FusedMatMul takes more folds.
"""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import MS, Ctx, attr, is_op, make_node, prod, run_on_graphs, split_const


def _perm_kind(perm: list[int]) -> tuple[int, int] | None:
    """(transBatch, trans) for a Transpose perm FusedMatMul can absorb, else None."""
    r = len(perm)
    if r < 2:
        return None
    ident = list(range(r))
    swap = ident[:-2] + [r - 1, r - 2]
    if perm == swap:
        return 0, 1
    if r >= 3:
        batch = list(range(1, r - 1)) + [0, r - 1]
        if perm == batch:
            return 1, 0
        if perm == list(range(1, r - 1)) + [r - 1, 0]:
            return 1, 1
    return None


def _scalar_of(ctx: Ctx, node: Node, v: Value) -> float | None:
    """c when node is Mul(v, c) / Mul(c, v) / Div(v, c) with c a float scalar constant."""
    sc = split_const(ctx, node)
    if sc is None or sc[0] is not v or sc[1].size != 1 or sc[1].dtype.kind != "f":
        return None
    if not ctx.no_broadcast(sc[1], v):
        return None
    c = float(sc[1].reshape(-1)[0])
    if is_op(node, "Mul"):
        return c
    if is_op(node, "Div") and node.inputs[0] is v and c != 0.0:
        return 1.0 / c
    return None


def _visit(ctx: Ctx, mm: Node) -> bool:
    fused = is_op(mm, "FusedMatMul", domain=MS)
    if not (is_op(mm, "MatMul") or fused) or len(mm.inputs) != 2:
        return False
    try:
        alpha = float(attr(mm, "alpha", 1.0))
        ta, tb = int(attr(mm, "transA", 0)), int(attr(mm, "transB", 0))
        tba, tbb = int(attr(mm, "transBatchA", 0)), int(attr(mm, "transBatchB", 0))
    except LookupError:
        return False
    a, b = mm.inputs
    if ctx.elem(a) != 1 or ctx.elem(b) != 1:
        return False
    nodes: list[Node] = []
    changed = False
    # scale of the inputs
    for k in (0, 1):
        v = a if k == 0 else b
        p = prod(v, "Mul", "Div")
        if p is None or not ctx.single_use(v):
            continue
        for cand in p.inputs:
            if cand is None or ctx.const(cand) is not None:
                continue
            c = _scalar_of(ctx, p, cand)
            if c is not None:
                alpha *= c
                nodes.append(p)
                if k == 0:
                    a = cand
                else:
                    b = cand
                changed = True
                break
    # transposes of the inputs
    for k in (0, 1):
        v = a if k == 0 else b
        t = prod(v, "Transpose")
        if t is None or not ctx.single_use(v):
            continue
        try:
            perm = attr(t, "perm")
        except LookupError:
            continue
        if perm is None:
            continue
        kind = _perm_kind(list(perm))
        if kind is None:
            continue
        if k == 0 and (ta or tba):
            continue
        if k == 1 and (tb or tbb):
            continue
        if k == 0:
            tba, ta, a = kind[0], kind[1], t.inputs[0]
        else:
            tbb, tb, b = kind[0], kind[1], t.inputs[0]
        nodes.append(t)
        changed = True
    out = mm.outputs[0]
    last = mm
    if ctx.single_use(out):
        m = out.uses[0][0]
        if is_op(m, "Mul", "Div"):
            c = _scalar_of(ctx, m, out)
            if c is not None:
                alpha *= c
                last = m
                changed = True
    if not changed:
        return False
    if tba or tbb:  # onnxruntime: transBatch needs both operands of one rank >= 3
        ra, rb = ctx.rank(a), ctx.rank(b)
        if ra is None or ra != rb or ra < 3:
            return False
    group = [*nodes, mm] + ([last] if last is not mm else [])
    res = last.outputs[0]
    if not ctx.private(group, res):
        return False
    new = make_node(
        "FusedMatMul", [a, b], name=(mm.name or "matmul") + ("" if fused else "_FusedMatMul"),
        alpha=float(alpha), transA=ta, transB=tb, transBatchA=tba, transBatchB=tbb,
    )  # fmt: skip
    ctx.replace(group, res, new)
    return True


def matmul_fusion(model: Model) -> bool:
    """Fold scalar scales and transposes into FusedMatMul; returns whether it changed."""
    return run_on_graphs(model, _visit)
