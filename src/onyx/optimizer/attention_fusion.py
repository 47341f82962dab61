"""Multi-head attention fusion for BERT-, GPT-2- and ViT-style exports (TorchScript and dynamo).

Matched from the Softmax outwards, on structure:

    Q4 = Transpose(Reshape(Q3, [B, S, N, H]), [0, 2, 1, 3])        (V4 alike from V3)
    Kt = K4 transposed on its last two axes, K4 from K3 alike; as Transpose [0, 2, 3, 1] of the
         Reshape, Transpose [0, 1, 3, 2] of K4, the dynamo Reshape/Transpose([0, 2, 1])/Reshape
         trick, or a FusedMatMul with transB
    scores = MatMul(Q4 [* c], Kt [* c]) [* c | / c]   (or FusedMatMul with alpha)
    P = Softmax(scores [+ M], axis=-1) [then Where(IsNaN(P), 0, P)]
    O = Reshape(Transpose(MatMul(P, V4), [0, 2, 1, 3]), [B, S, D])

becomes com.microsoft ``Attention(X, Wqkv, bqkv, attention_bias=M)`` when Q3, K3 and V3 are
``X @ Wi + bi`` of one X with constant weights (or GPT-2's Conv1D: one Gemm over X's rows, then
Split), else ``MultiHeadAttention(Q3, K3, V3, attention_bias=M)`` (with the three biases as
``bias`` when each of Q3, K3, V3 adds one), with ``num_heads=N`` and ``scale`` the product of the
constant scales. onnxruntime wants M as (B or 1, N or 1, S, T): when shape inference cannot show
that, M goes through ``Expand(M, [1, 1, S, T])`` (S, T read from the kept inputs' shapes).

Shape arithmetic that read the removed intermediates (``Gather(Shape(Q4), 2)``...) is rewired to
the kept inputs (or becomes a constant for N and H). The ``Where(IsNaN(P), 0, P)`` guard matters
only for rows whose every key is masked with -inf: there the original gives zeros, the fused node
does not. Float32 only. Nodes that only fed the group's shape arithmetic go with it.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import (
    MS,
    Ctx,
    _dim_eq,
    attr,
    is_op,
    make_node,
    prod,
    run_on_graphs,
    split_const,
)
from onyx.shape_inference import type_new_nodes


class _NoMatch(Exception):
    pass


def _need(cond) -> None:
    if not cond:
        raise _NoMatch


def _perm(node: Node | None) -> list[int] | None:
    if node is None:
        return None
    try:
        p = attr(node, "perm")
    except LookupError:
        return None
    return None if p is None else list(p)


def _strip_scale(ctx: Ctx, v: Value, nodes: list[Node]) -> tuple[Value, float]:
    """Strip scalar Mul/Div nodes producing v: (the value below, the accumulated factor)."""
    scale = 1.0
    while True:
        p = prod(v, "Mul", "Div")
        if p is None:
            return v, scale
        sc = split_const(ctx, p)
        if sc is None or sc[1].size != 1 or sc[1].dtype.kind != "f" or sc[1].ndim > 1:
            return v, scale
        c = float(sc[1].reshape(-1)[0])
        if is_op(p, "Div"):
            if p.inputs[0] is not sc[0] or c == 0.0:
                return v, scale
            c = 1.0 / c
        scale *= c
        nodes.append(p)
        v = sc[0]


def _shape_entries(ctx: Ctx, v: Value) -> list | None:
    """The elements of a 1-D shape tensor: ints for constants, ('dim', k) for dim k of some
    tensor, '?' for unknown single elements; None when the length is unknown."""
    c = ctx.ints(v)
    if c is not None:
        return c
    p = v.producer
    if is_op(p, "Concat"):
        out: list = []
        for part in p.inputs:
            e = _shape_entries(ctx, part) if part is not None else None
            if e is None:
                return None
            out.extend(e)
        return out
    if is_op(p, "Unsqueeze"):
        src = p.inputs[0]
        g = prod(src, "Gather")
        if g is not None and prod(g.inputs[0], "Shape") is not None:
            k = ctx.scalar(g.inputs[1])
            sh = g.inputs[0].producer
            start = _shape_start(sh)
            if k is not None and start == 0 and k >= 0:
                return [("dim", int(k), sh.inputs[0])]
        return ["?"] if _is_scalar_int(ctx, src) else None
    if is_op(p, "Shape"):
        try:
            start = attr(p, "start", 0)
            end = attr(p, "end")
        except LookupError:
            return None
        if end is not None and start >= 0 and end > start:
            return [("dim", k, p.inputs[0]) for k in range(start, end)]
        return None
    return None


def _shape_start(sh: Node) -> int | None:
    try:
        return attr(sh, "start", 0) if attr(sh, "end") is None else None
    except LookupError:
        return None


def _is_scalar_int(ctx: Ctx, v: Value) -> bool:
    d = ctx.dims(v)
    return d is not None and len(d) == 0


def _split_heads(ctx: Ctx, r: Node, nodes: list[Node]) -> tuple[Value, int | None, int | None]:
    """r = Reshape(X3, [B, S, N, H]): (X3, N, H) (N or H None when given as -1)."""
    _need(is_op(r, "Reshape"))
    ents = _shape_entries(ctx, r.inputs[1])
    _need(ents is not None and len(ents) == 4)
    known = ctx.dims(r.inputs[0]) or []
    for k in (0, 1):
        e = ents[k]
        _need(
            e == -1
            or (isinstance(e, tuple) and e[:2] == ("dim", k))
            or (e == 0 and not attr(r, "allowzero", 0))
            or (isinstance(e, int) and e > 0 and len(known) == 3 and known[k] == e)
        )
    _need(sum(1 for e in ents if e == -1) <= 1)
    n, h = ents[2], ents[3]
    _need(isinstance(n, int) and isinstance(h, int) and (n > 0 or n == -1) and (h > 0 or h == -1))
    nodes.append(r)
    return r.inputs[0], (n if n > 0 else None), (h if h > 0 else None)


def _heads_of(ctx: Ctx, v: Value, nodes: list[Node]) -> tuple[Value, int | None, int | None]:
    """v = Transpose(Reshape(X3, [B, S, N, H]), [0, 2, 1, 3])."""
    t = prod(v, "Transpose")
    _need(t is not None and _perm(t) == [0, 2, 1, 3])
    nodes.append(t)
    return _split_heads(ctx, t.inputs[0].producer, nodes)


def _key_transposed(
    ctx: Ctx, v: Value, nodes: list[Node], pending: list
) -> tuple[Value, int | None, int | None]:
    """v = K4 with its last two axes swapped, in one of the exporters' forms."""
    t = prod(v, "Transpose")
    if t is not None and _perm(t) == [0, 2, 3, 1]:
        nodes.append(t)
        return _split_heads(ctx, t.inputs[0].producer, nodes)
    if t is not None and _perm(t) == [0, 1, 3, 2]:
        nodes.append(t)
        return _heads_of(ctx, t.inputs[0], nodes)
    # dynamo: Reshape(Transpose(Reshape(K4, [-1, T, H]), [0, 2, 1]), [B, N, H, T]) from Shape(K4)
    r2 = prod(v, "Reshape")
    _need(r2 is not None)
    t = prod(r2.inputs[0], "Transpose")
    _need(t is not None and _perm(t) == [0, 2, 1])
    r1 = prod(t.inputs[0], "Reshape")
    _need(r1 is not None)
    k4 = r1.inputs[0]
    _need(_slices_of_shape(ctx, r1.inputs[1], k4, [-1, ("d", 2), ("d", 3)], pending))
    _need(_slices_of_shape(ctx, r2.inputs[1], k4, [("d", 0), ("d", 1), ("d", 3), ("d", 2)], pending))
    nodes.extend([r2, t, r1])
    return _heads_of(ctx, k4, nodes)


_BIG = 1 << 62


def _elems_of_shape(ctx: Ctx, v: Value, of: Value, rank: int) -> list | None:
    """The elements of a 1-D shape vector built from constants and Slice(Shape(of)) parts:
    ("c", int) or ("d", axis of ``of``); None for anything else."""
    cst = ctx.ints(v)
    if cst is not None:
        return [("c", x) for x in cst]
    p = prod(v, "Concat")
    parts = p.inputs if p is not None else [v]
    out: list = []
    for part in parts:
        cst = ctx.ints(part)
        if cst is not None:
            out.extend(("c", x) for x in cst)
            continue
        s = prod(part, "Slice")
        if s is None or len(s.inputs) < 3:
            return None
        sh = prod(s.inputs[0], "Shape")
        if sh is None or sh.inputs[0] is not of or _shape_start(sh) != 0:
            return None
        if len(s.inputs) > 3 and s.inputs[3] is not None and ctx.ints(s.inputs[3]) != [0]:
            return None
        if len(s.inputs) > 4 and s.inputs[4] is not None and ctx.ints(s.inputs[4]) != [1]:
            return None
        a, b = ctx.ints(s.inputs[1]), ctx.ints(s.inputs[2])
        if a is None or b is None or len(a) != 1 or len(b) != 1:
            return None
        lo, hi = slice(a[0], b[0]).indices(rank)[:2]
        out.extend(("d", k) for k in range(lo, hi))
    return out


def _slices_of_shape(ctx: Ctx, v: Value, of: Value, want: list, pending: list) -> bool:
    """v's elements are, in order, ``want`` (ints: constants; ("d", k): dim k of the rank-4
    ``of``, read from its shape or given as a constant checked later through ``pending``)."""
    got = _elems_of_shape(ctx, v, of, 4)
    if got is None or len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if isinstance(w, int):
            if g != ("c", w):
                return False
        elif g[0] == "d":
            if g[1] != w[1]:
                return False
        else:
            pending.append((w[1], g[1]))
    return True


def _hidden(ctx: Ctx, x3: Value) -> int | None:
    d = ctx.dims(x3)
    if d is not None and len(d) == 3 and isinstance(d[2], int):
        return d[2]
    a = prod(x3, "Add")
    for y in a.inputs if a is not None else [x3]:
        mm = prod(y, "MatMul")
        if mm is not None:
            w = ctx.const(mm.inputs[1])
            if w is not None and w.ndim == 2:
                return int(w.shape[1])
    return None


def _rank3(ctx: Ctx, x3: Value) -> bool:
    d = ctx.dims(x3)
    if d is not None:
        return len(d) == 3
    a = prod(x3, "Add")
    for y in a.inputs if a is not None else [x3]:
        mm = prod(y, "MatMul")
        if mm is not None and ctx.rank(mm.inputs[0]) == 3:
            w = ctx.const(mm.inputs[1])
            return w is not None and w.ndim == 2
    return False


def _projection(ctx: Ctx, x3: Value) -> tuple[Node, Node, Value, np.ndarray, np.ndarray] | None:
    """x3 = Add(MatMul(X, W), b) (either order), W 2-D and b 1-D constants, both single-use."""
    a = prod(x3, "Add")
    if a is None:
        return None
    for y, b in ((a.inputs[0], a.inputs[1]), (a.inputs[1], a.inputs[0])):
        mm = prod(y, "MatMul")
        bc = ctx.const(b)
        if mm is None or bc is None or bc.ndim != 1 or not ctx.single_use(y):
            continue
        w = ctx.const(mm.inputs[1])
        if (
            w is None
            or w.ndim != 2
            or w.shape[1] != bc.shape[0]
            or w.dtype != np.float32
            or bc.dtype != np.float32
        ):
            continue
        return a, mm, mm.inputs[0], w, bc
    return None


def _split_projection(ctx: Ctx, q3: Value, k3: Value, v3: Value, d: int):
    """GPT-2's Conv1D: [q3, k3, v3] = Split(Reshape(Gemm(Reshape(X, [-1, Din]), W, b), [B, S, 3D]),
    axis 2) with X (B, S, Din), W and b constants: (X, W (Din, 3D), b, the nodes) or None."""
    sp = q3.producer
    if not is_op(sp, "Split") or len(sp.outputs) != 3 or list(sp.outputs) != [q3, k3, v3]:
        return None
    try:
        if attr(sp, "axis", 0) not in (2, -1):
            return None
    except LookupError:
        return None
    if len(sp.inputs) > 1 and sp.inputs[1] is not None and ctx.ints(sp.inputs[1]) != [d, d, d]:
        return None
    try:
        if len(sp.inputs) < 2 or sp.inputs[1] is None:
            if attr(sp, "split") not in (None, [d, d, d]):
                return None
    except LookupError:
        return None
    if not all(len(_main_uses(ctx, x)) == 1 and not ctx.is_output(x) for x in (q3, k3, v3)):
        return None  # Shape readers of q3/k3/v3 are rewired to X
    y3 = sp.inputs[0]
    r2 = prod(y3, "Reshape")
    if r2 is None or not ctx.single_use(y3):
        return None
    g2 = r2.inputs[0]
    gemm = prod(g2, "Gemm")
    if gemm is None or not ctx.single_use(g2):
        return None
    try:
        if attr(gemm, "transA", 0) or attr(gemm, "alpha", 1.0) != 1.0 or attr(gemm, "beta", 1.0) != 1.0:
            return None
        trans_b = attr(gemm, "transB", 0)
    except LookupError:
        return None
    w = ctx.const(gemm.inputs[1])
    b = ctx.const(gemm.inputs[2]) if len(gemm.inputs) > 2 and gemm.inputs[2] is not None else None
    if w is None or w.ndim != 2 or w.dtype != np.float32:
        return None
    if trans_b:
        w = w.T
    if w.shape[1] != 3 * d:
        return None
    if b is None:
        b = np.zeros(3 * d, np.float32)
    if b.dtype != np.float32 or b.size not in (1, 3 * d) or b.ndim > 1:
        return None
    b = np.broadcast_to(b.reshape(-1), (3 * d,)).copy()
    x2 = gemm.inputs[0]
    r1 = prod(x2, "Reshape")
    if r1 is None or not ctx.single_use(x2):
        return None
    x = r1.inputs[0]
    dx = ctx.dims(x)
    if dx is None or len(dx) != 3 or dx[2] != w.shape[0]:
        return None
    d2 = ctx.dims(x2)  # any 2-D reshape of X (B, S, Din) to (M, Din) is X's rows, in order
    if ctx.ints(r1.inputs[1]) != [-1, w.shape[0]] and not (
        d2 is not None and len(d2) == 2 and d2[1] == w.shape[0]
    ):
        return None
    # the reshape back must restore (B, S): known from shape inference
    dy = ctx.dims(y3)
    if dy is None or len(dy) != 3 or dy[2] != 3 * d:
        return None
    if not all(p is not None and q is not None and _dim_eq(p, q) for p, q in zip(dy[:2], dx[:2])):
        return None
    return x, np.ascontiguousarray(w), b, [r1, gemm, r2, sp]


def _bias_of(ctx: Ctx, x3: Value) -> tuple[Node, Value, np.ndarray] | None:
    a = prod(x3, "Add")
    if a is None:
        return None
    for y, b in ((a.inputs[0], a.inputs[1]), (a.inputs[1], a.inputs[0])):
        bc = ctx.const(b)
        if (
            bc is not None
            and bc.ndim == 1
            and bc.dtype == np.float32
            and ctx.const(y) is None
            and ctx.same_dims(y, x3)
        ):
            return a, y, bc
    return None


def _main_uses(ctx: Ctx, v: Value) -> list[Node]:
    """The nodes reading v other than Shape nodes (shape arithmetic is rewired on fusion)."""
    return [u for u, _ in v.uses if not is_op(u, "Shape")]


def _match(ctx: Ctx, sm: Node):
    _need(is_op(sm, "Softmax"))
    try:
        axis = attr(sm, "axis", -1 if ctx.opset >= 13 else 1)
    except LookupError:
        raise _NoMatch from None
    _need(axis in (-1, 3))
    nodes: list[Node] = [sm]
    pending: list = []
    s_in = sm.inputs[0]
    mask = None
    add = prod(s_in, "Add")
    scores = s_in
    if add is not None:
        for sc_v, m in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
            wh = prod(sc_v, "Where")  # masked_fill of the scores (not a 0/fill mask)
            masked = (
                wh is not None and ctx.const(wh.inputs[1]) is None and ctx.const(wh.inputs[2]) is not None
            )
            if prod(sc_v, "MatMul", "Mul", "Div") or prod(sc_v, "FusedMatMul", domain=MS) or masked:
                scores, mask = sc_v, m
                break
        _need(mask is not None)
        nodes.append(add)
    where_mask = None  # Where(cond, scores, fill): masked_fill with a huge negative fill
    wh = prod(scores, "Where")
    if wh is not None:
        fill = ctx.const(wh.inputs[2])
        _need(fill is not None and fill.size == 1 and fill.ndim == 0 and fill.dtype == np.float32)
        _need(float(fill) <= -1e30)  # adding it instead of selecting it changes nothing
        dw, dsc = ctx.dims(wh.outputs[0]), ctx.dims(wh.inputs[1])
        _need(dw is not None and dsc is not None and len(dw) == 4 and len(dsc) == 4)
        _need(ctx.elem(wh.inputs[0]) == 9)  # bool
        where_mask = (wh.inputs[0], float(fill))
        nodes.append(wh)
        scores = wh.inputs[1]
    scores_raw, scale = _strip_scale(ctx, scores, nodes)
    mm = scores_raw.producer
    trans_b = 0
    if is_op(mm, "FusedMatMul", domain=MS):
        _need(not attr(mm, "transA", 0) and not attr(mm, "transBatchA", 0) and not attr(mm, "transBatchB", 0))
        trans_b = int(attr(mm, "transB", 0))
        scale *= float(attr(mm, "alpha", 1.0))
    else:
        _need(is_op(mm, "MatMul"))
    nodes.append(mm)
    qv, s1 = _strip_scale(ctx, mm.inputs[0], nodes)
    kv, s2 = _strip_scale(ctx, mm.inputs[1], nodes)
    scale *= s1 * s2
    _need(scale > 0)
    q3, nq, hq = _heads_of(ctx, qv, nodes)
    if trans_b:
        k3, nk, hk = _heads_of(ctx, kv, nodes)
    else:
        k3, nk, hk = _key_transposed(ctx, kv, nodes, pending)
    # after the softmax
    p = sm.outputs[0]
    users = _main_uses(ctx, p)
    if len(users) == 2 and not ctx.is_output(p):
        isnan = next((u for u in users if is_op(u, "IsNaN")), None)
        where = next((u for u in users if is_op(u, "Where")), None)
        _need(isnan is not None and where is not None)
        _need(
            where.inputs[0] is isnan.outputs[0]
            and where.inputs[2] is p
            and ctx.scalar(where.inputs[1]) == 0.0
        )
        nodes.extend([isnan, where])
        p = where.outputs[0]
    _need(len(_main_uses(ctx, p)) == 1 and not ctx.is_output(p))
    mm2 = _main_uses(ctx, p)[0]
    _need(is_op(mm2, "MatMul") and mm2.inputs[0] is p)
    nodes.append(mm2)
    v3, nv, hv = _heads_of(ctx, mm2.inputs[1], nodes)
    ctx4 = mm2.outputs[0]
    _need(len(_main_uses(ctx, ctx4)) == 1 and not ctx.is_output(ctx4))
    tr = _main_uses(ctx, ctx4)[0]
    noop = None
    if is_op(tr, "Reshape"):  # TorchScript: view(B, N, S, H) of the (B, N, S, H) context first
        noop = tr
        ctx4 = tr.outputs[0]
        _need(len(_main_uses(ctx, ctx4)) == 1 and not ctx.is_output(ctx4))
        tr = _main_uses(ctx, ctx4)[0]
    _need(is_op(tr, "Transpose") and _perm(tr) == [0, 2, 1, 3])
    nodes.append(tr)
    # head counts and sizes
    for x3 in (q3, k3, v3):
        _need(_rank3(ctx, x3))
    dq, dk, dv = _hidden(ctx, q3), _hidden(ctx, k3), _hidden(ctx, v3)
    _need(dq is not None and dk is not None and dv is not None and dq == dk)
    n = nq or nk or nv
    if n is None:
        hh = hq or hk
        _need(hh is not None and dq % hh == 0)
        n = dq // hh
    _need(n > 0)
    for nn, hh, d in ((nq, hq, dq), (nk, hk, dk), (nv, hv, dv)):
        _need(nn in (None, n))
        _need(d % n == 0 and hh in (None, d // n))
    for x3 in (q3, k3, v3):
        _need(ctx.elem(x3) == 1)  # onnxruntime's CPU attention kernels are float32
    kd = ctx.dims(k3) or [None, None]
    for axis, c in pending:  # constants standing for dims of K4 [B, N, T, H]
        full = [kd[0], n, kd[1], dq // n]
        _need(isinstance(full[axis], int) and full[axis] == c)
    if noop is not None:
        _need(_noop_context_reshape(ctx, noop, nodes, q3, k3, v3, n, dq // n, dv // n))
        nodes.append(noop)
    return dict(
        nodes=nodes,
        q3=q3,
        k3=k3,
        v3=v3,
        mask=mask,
        scale=scale,
        n=n,
        dq=dq,
        dv=dv,
        tr=tr,
        scores=scores,
        where_mask=where_mask,
    )


def _noop_context_reshape(ctx: Ctx, r: Node, nodes: list[Node], q3, k3, v3, n, h, hv) -> bool:
    """r reshapes the (B, N, S, Hv) context to itself: its target's entries, checked one by one
    against the symbolic dims of the group's values they were read from."""
    ents = _shape_entries(ctx, r.inputs[1])
    if ents is None or len(ents) != 4 or sum(1 for e in ents if e == -1) > 1:
        return False
    m = {"q3": q3, "k3": k3, "v3": v3, "tr": None}
    sym = _symbols(ctx, m, nodes, n, h, hv)
    want = ["B", n, "S", hv]
    qd = ctx.dims(q3) or [None, None, None]
    for e, w in zip(ents, want):
        if e == -1 or (isinstance(e, int) and e == w):
            continue
        if isinstance(e, int) and w in ("B", "S") and len(qd) == 3 and qd[0 if w == "B" else 1] == e:
            continue
        if isinstance(e, tuple):
            x = e[2]
            d = sym.get(id(x))
            if d is not None and -len(d) <= e[1] < len(d) and d[e[1]] == w:
                continue
        return False
    return True


def _mask_ok(ctx: Ctx, mask: Value, scores: Value, n: int) -> bool:
    if ctx.elem(mask) != 1:
        return False
    dm, ds = ctx.dims(mask), ctx.dims(scores)
    if dm is None or ds is None or len(dm) != 4 or len(ds) != 4:
        return False
    if any(x is None for x in dm) or any(x is None for x in ds):
        return False
    if not (_dim_eq(dm[2], ds[2]) and _dim_eq(dm[3], ds[3])):
        return False
    return (dm[0] == 1 or _dim_eq(dm[0], ds[0])) and dm[1] in (1, n)


def _visit(ctx: Ctx, sm: Node) -> bool:
    if not is_op(sm, "Softmax"):
        return False
    try:
        m = _match(ctx, sm)
    except (_NoMatch, LookupError):
        return False
    nodes: list[Node] = m["nodes"]
    q3, k3, v3, mask, n = m["q3"], m["k3"], m["v3"], m["mask"], m["n"]
    expand_mask = m["where_mask"] is not None
    if expand_mask and ctx.opset < 15:
        return False
    if expand_mask and mask is not None and (ctx.rank(mask) is None or ctx.rank(mask) > 4):
        return False
    if mask is not None and not expand_mask and not _mask_ok(ctx, mask, m["scores"], n):
        # onnxruntime wants the bias as (B or 1, N or 1, S, T): expand it to [1, 1, S, T]
        dm = ctx.dims(mask)
        if ctx.opset < 15 or ctx.elem(mask) != 1 or dm is None or len(dm) != 4:
            return False
        expand_mask = True
    # the result: the Transpose's output, or the Reshape to (B, S, D) after it when provably so
    tr = m["tr"]
    out = tr.outputs[0]
    end_reshape = None
    outs = _main_uses(ctx, out)
    if len(outs) == 1 and not ctx.is_output(out) and is_op(outs[0], "Reshape"):
        r = outs[0]
        if ctx.same_dims(r.outputs[0], q3) and m["dv"] == m["dq"]:
            end_reshape = r
    # which form: packed Attention, MHA with bias, or plain MHA
    projs = [_projection(ctx, x) for x in (q3, k3, v3)]
    pack = None  # (X, W, b, the projection nodes)
    if (
        all(p is not None for p in projs)
        and projs[0][2] is projs[1][2] is projs[2][2]
        and all(ctx.single_use(x) for x in (q3, k3, v3))
        and len({id(x) for x in (q3, k3, v3)}) == 3
    ):
        pack = (
            projs[0][2],
            np.concatenate([p[3] for p in projs], axis=1),
            np.concatenate([p[4] for p in projs]),
            [n_ for p in projs for n_ in (p[0], p[1])],
        )
    elif m["dv"] == m["dq"]:
        pack = _split_projection(ctx, q3, k3, v3, m["dq"])
    packed = pack is not None
    extra: list[Node] = []
    biases = [_bias_of(ctx, x) for x in (q3, k3, v3)]
    use_bias = (
        not packed
        and all(b is not None for b in biases)
        and all(ctx.single_use(x) for x in (q3, k3, v3))
        and len({id(x) for x in (q3, k3, v3)}) == 3
    )
    if packed:
        x = pack[0]
        extra = pack[3]
        kept = {"B": (x, 0), "S": (x, 1), "T": (x, 1)}
    elif use_bias:
        extra = [bb[0] for bb in biases]
        kept = {"B": (biases[0][1], 0), "S": (biases[0][1], 1), "T": (biases[1][1], 1)}
    else:
        kept = {"B": (q3, 0), "S": (q3, 1), "T": (k3, 1)}
    group = nodes + extra + ([end_reshape] if end_reshape is not None else [])
    final = end_reshape.outputs[0] if end_reshape is not None else out
    noop_reshapes: list[Node] = []
    if end_reshape is None:
        # the Transpose's output itself becomes the (B, S, D) result: every reader but Shape must
        # be a Reshape (it reads the same row-major data) whose target copies no dim past 1
        if not outs or ctx.is_output(out):
            return False
        for r in outs:
            if not is_op(r, "Reshape") or r.inputs[0] is not out:
                return False
            ents = _shape_entries(ctx, r.inputs[1])
            if ents is None or (not attr(r, "allowzero", 0) and any(e == 0 for e in ents[2:])):
                return False
            if ctx.same_dims(r.outputs[0], q3) and m["dv"] == m["dq"] and not ctx.is_output(r.outputs[0]):
                noop_reshapes.append(r)
    seen: set[int] = set()
    group = [x for x in group if not (id(x) in seen or seen.add(id(x)))]
    group += _absorbable(ctx, group)
    # shape arithmetic reading the group's values is rewired to kept values first
    keeps = end_reshape is not None  # else the final value changes from 4-D to 3-D
    if not _rewire_shapes(ctx, group, final, m, kept, dry=True, final_keeps_shape=keeps):
        return False
    _rewire_shapes(ctx, group, final, m, kept, dry=False, final_keeps_shape=keeps)
    if not ctx.private(group, final):
        return False
    name = (sm.name or "attention") + "_Attention"
    scale = float(m["scale"])
    pre: list[Node] = []
    if m["where_mask"] is not None:
        # the selection becomes an additive bias: Where(cond, 0, fill) (+ the additive mask)
        from onyx.optimizer._pattern import fresh_name

        cond, fill = m["where_mask"]
        wb = Value(fresh_name(ctx.graph, name + "_where_bias"))
        zero, neg = ctx.new_const(np.zeros((), np.float32), "zero"), ctx.new_const(np.float32(fill), "fill")
        pre.append(make_node("Where", [cond, zero, neg], domain="", name=wb.name))
        pre[-1].outputs.append(wb)
        if mask is not None:
            both = Value(fresh_name(ctx.graph, name + "_bias_sum"))
            pre.append(make_node("Add", [wb, mask], domain="", name=both.name))
            pre[-1].outputs.append(both)
            wb = both
        for nd in pre:
            for k, v in enumerate(nd.outputs):
                v.producer, v.index = nd, k
        mask = wb
    if expand_mask:
        from onyx.optimizer._pattern import fresh_name

        parts = [ctx.new_const(np.array([1, 1], np.int64), "attention_bias_lead")]
        for key in ("S", "T"):
            base, axis = kept[key]
            sv = Value(fresh_name(ctx.graph, name + f"_{key}"))
            pre.append(make_node("Shape", [base], domain="", name=sv.name, start=axis, end=axis + 1))
            pre[-1].outputs.append(sv)
            parts.append(sv)
        cat = Value(fresh_name(ctx.graph, name + "_bias_shape"))
        pre.append(make_node("Concat", parts, domain="", name=cat.name, axis=0))
        pre[-1].outputs.append(cat)
        ex = Value(fresh_name(ctx.graph, name + "_bias"))
        pre.append(make_node("Expand", [mask, cat], domain="", name=ex.name))
        pre[-1].outputs.append(ex)
        for nd in pre:
            for k, v in enumerate(nd.outputs):
                v.producer, v.index = nd, k
        mask = ex
    if packed:
        wv = ctx.new_const(pack[1], "attention_qkv_weight")
        bv = ctx.new_const(pack[2], "attention_qkv_bias")
        kw = {}
        if m["dv"] != m["dq"]:
            kw["qkv_hidden_sizes"] = [m["dq"], m["dq"], m["dv"]]
        new = make_node(
            "Attention", [pack[0], wv, bv, None, None, mask], name=name, num_heads=n, scale=scale, **kw
        )
    elif use_bias:
        bv = ctx.new_const(np.concatenate([bb[2] for bb in biases]), "attention_qkv_bias")
        new = make_node(
            "MultiHeadAttention",
            [biases[0][1], biases[1][1], biases[2][1], bv, None, mask],
            name=name,
            num_heads=n,
            scale=scale,
        )
    else:
        new = make_node(
            "MultiHeadAttention", [q3, k3, v3, None, None, mask], name=name, num_heads=n, scale=scale
        )
    if end_reshape is None:
        # the Transpose's 4-D output becomes the 3-D (B, S, D) result: the Reshape after it reads
        # it the same way (row-major data, same element count); forget the old 4-D type
        out.type = None
        ctx.drop_value_info([out])
    ctx.replace(group, final, pre + [new])
    for r in noop_reshapes:  # Reshape(fused (B, S, D), [B, S, D]) is the fused value itself
        r.outputs[0].replace_all_uses_with(final)
        ctx.drop_value_info(r.outputs)
        feeders = [i for i in r.inputs if i is not None]
        ctx.graph.remove_node(r)
        ctx.sweep(feeders)
    return True


_SHAPE_OPS = ("Shape", "Slice", "Concat", "Gather", "Unsqueeze", "Squeeze", "Cast")


def _absorbable(ctx: Ctx, group: list[Node]) -> list[Node]:
    """Shape-arithmetic nodes upstream of the group that only the group (or other such nodes)
    reads: they go with it (the dynamo exporter's transpose-by-reshape reads Shape(K4))."""
    ids = {id(x) for x in group}
    out: list[Node] = []
    stack = [i.producer for x in group for i in x.inputs if i is not None and i.producer is not None]
    while stack:
        p = stack.pop()
        if id(p) in ids or p.graph is not ctx.graph or not is_op(p, *_SHAPE_OPS):
            continue
        if any(ctx.is_output(o) or not o.uses or any(id(u) not in ids for u, _ in o.uses) for o in p.outputs):
            continue
        ids.add(id(p))
        out.append(p)
        stack.extend(i.producer for i in p.inputs if i is not None and i.producer is not None)
        # a node now absorbed may free others already visited
        stack.extend(
            i.producer
            for x in out
            for i in x.inputs
            if i is not None and i.producer is not None and id(i.producer) not in ids
        )
    return out


def _rewire_shapes(
    ctx: Ctx, group: list[Node], final: Value, m: dict, kept: dict, dry: bool, final_keeps_shape: bool = True
) -> bool:
    """Make Shape -> Gather chains that read values of the group read kept values instead.

    Every value of the group read outside it (other than ``final``) must be read only by Shape
    nodes whose outputs only feed Gather(axis 0) with a constant index. Dims are resolved by
    symbol (B, S, T from the kept values; N, H, Hv constants)."""
    ids = {id(x) for x in group}
    n, dq, dv = m["n"], m["dq"], m["dv"]
    h, hv = dq // n, dv // n
    sym = _symbols(ctx, m, group, n, h, hv)
    todo = []
    for node in group:
        for v in node.outputs:
            if v is final and final_keeps_shape:
                continue
            ext = [u for u, _ in v.uses if id(u) not in ids]
            if v is final:
                ext = [u for u in ext if is_op(u, "Shape")]
            if not ext:
                if ctx.is_output(v):
                    return False
                continue
            if ctx.is_output(v) or id(v) not in sym:
                return False
            for u in ext:
                if not is_op(u, "Shape") or _shape_start(u) != 0 or ctx.is_output(u.outputs[0]):
                    return False
                for g, _ in u.outputs[0].uses:
                    if not is_op(g, "Gather") or g.inputs[0] is not u.outputs[0]:
                        return False
                    try:
                        if attr(g, "axis", 0) != 0:
                            return False
                    except LookupError:
                        return False
                    k = ctx.const(g.inputs[1])
                    if k is None or k.size != 1 or k.dtype.kind not in "iu":
                        return False
                    dims = sym[id(v)]
                    idx = int(k.reshape(-1)[0])
                    if not -len(dims) <= idx < len(dims):
                        return False
                    todo.append((u, g, dims[idx], k))
    if dry:
        return True
    made: dict[int, Value] = {}
    for _u, g, s, k in todo:
        if isinstance(s, int):
            c = ctx.new_const(np.full(k.shape, s, np.int64), "attention_dim")
            g.outputs[0].replace_all_uses_with(c)
            continue
        base, j = kept[s]
        sv = made.get(id(base))
        if sv is None:
            from onyx.ir.model import Node as _Node

            sv = Value(base.name + "_shape_ext")
            from onyx.optimizer._pattern import fresh_name

            sv.name = fresh_name(ctx.graph, base.name + "_shape")
            sh = _Node("Shape", [base], [sv], name=sv.name)
            p = base.producer
            pos = ctx.graph.nodes.index(p) + 1 if p is not None and p.graph is ctx.graph else 0
            ctx.graph.insert_node(pos, sh)
            type_new_nodes(ctx.model, [sh], ctx.opsets)
            made[id(base)] = sv
        g.set_input(0, sv)
        g.set_input(1, ctx.new_const(np.full(k.shape, j, np.int64), "attention_axis"))
    # drop Shape/Gather nodes left dead
    dead_vals = [u.outputs[0] for u, *_ in todo] + [g.outputs[0] for _, g, *_ in todo]
    for v in dead_vals:
        p = v.producer
        if p is not None and p.graph is ctx.graph and not v.uses and not ctx.is_output(v):
            ctx.graph.remove_node(p)
            ctx.drop_value_info(p.outputs)
    return True


def _symbols(ctx: Ctx, m: dict, group: list[Node], n: int, h: int, hv: int) -> dict[int, list]:
    """Symbolic dims ('B', 'S', 'T' or ints) of the 4-D values of the matched group, propagated
    in graph order from the head splits."""
    order = {id(x): k for k, x in enumerate(ctx.graph.nodes)}
    res: dict[int, list] = {
        id(m["q3"]): ["B", "S", n * h],
        id(m["k3"]): ["B", "T", n * h],
        id(m["v3"]): ["B", "T", n * hv],
    }
    seqs = {id(m["q3"]): ("S", h), id(m["k3"]): ("T", h), id(m["v3"]): ("T", hv)}
    for node in sorted(group, key=lambda x: order.get(id(x), 0)):
        o = node.outputs[0]
        ins = [res.get(id(i)) if i is not None else None for i in node.inputs]
        if is_op(node, "Reshape") and id(node.inputs[0]) in seqs:
            seq, hh = seqs[id(node.inputs[0])]
            res[id(o)] = ["B", seq, n, hh]
        elif is_op(node, "Transpose") and ins[0] is not None:
            perm = _perm(node)
            if perm is not None and len(perm) == len(ins[0]):
                res[id(o)] = [ins[0][k] for k in perm]
        elif is_op(node, "Mul", "Div", "Softmax", "IsNaN"):
            known = next((d for d in ins if d is not None), None)
            if known is not None:
                res[id(o)] = known
        elif is_op(node, "Where") and (ins[1] is not None or ins[2] is not None):
            res[id(o)] = ins[1] if ins[1] is not None else ins[2]
        elif is_op(node, "Add"):
            known = next((d for d in ins if d is not None), None)
            if known is not None:
                res[id(o)] = known
        elif (is_op(node, "MatMul") or is_op(node, "FusedMatMul", domain=MS)) and ins[0] and ins[1]:
            a, b = ins
            if is_op(node, "FusedMatMul", domain=MS) and attr(node, "transB", 0):
                b = b[:2] + [b[3], b[2]]
            res[id(o)] = [a[0], a[1], a[2], b[3]]
    tr = m.get("tr")
    if tr is not None:  # the context before and after its Transpose (past a no-op Reshape too)
        res[id(tr.inputs[0])] = ["B", n, "S", hv]
        res[id(tr.outputs[0])] = ["B", "S", n, hv]
    return res


def attention_fusion(model: Model) -> bool:
    """Fuse multi-head attention subgraphs into com.microsoft Attention / MultiHeadAttention."""
    return run_on_graphs(model, _visit)
