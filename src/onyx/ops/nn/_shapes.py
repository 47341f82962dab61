"""Shape rules for the nn operators (registered with ``shape_rule`` in each op's own file).

A dim that is not a known int (a symbol, or unknown) makes the spatial dims it feeds unknown (None);
batch and channel dims pass through as they are.
"""

from __future__ import annotations

import math

from onyx.ir.dtypes import DataType
from onyx.ops.nn._common import norm_auto_pad, window_geometry

INT64 = int(DataType.INT64)
INT32 = int(DataType.INT32)
FLOAT = int(DataType.FLOAT)
BOOL = int(DataType.BOOL)


def _ints(v, n, default):
    if v is None or len(v) == 0:
        return (default,) * n
    return tuple(int(a) for a in v)


def _is_int(d) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)


def window_out(ctx, spatial, kernel, *, ceil_mode=False, auto_pad=None):
    """Output spatial dims of a conv/pool window over ``spatial`` (None where unknown)."""
    nd = len(spatial)
    strides = _ints(ctx.attr("strides"), nd, 1)
    dilations = _ints(ctx.attr("dilations"), nd, 1)
    pads = _ints(ctx.attr("pads"), 2 * nd, 0)
    ap = norm_auto_pad(auto_pad if auto_pad is not None else ctx.attr("auto_pad", "NOTSET"))
    out = []
    for i in range(nd):
        if kernel[i] is None:
            out.append(None)
            continue
        if not _is_int(spatial[i]):
            # a symbolic dim survives when the window preserves the length (stride 1, "same" padding)
            ek = (kernel[i] - 1) * dilations[i] + 1
            same = ap in ("SAME_UPPER", "SAME_LOWER") or (ap == "NOTSET" and pads[i] + pads[i + nd] == ek - 1)
            out.append(spatial[i] if strides[i] == 1 and same else None)
            continue
        one = [spatial[i]], [kernel[i]], [strides[i]], [dilations[i]], [pads[i], pads[i + nd]]
        _, _, o, _ = window_geometry(*(tuple(v) for v in one), ap, bool(ceil_mode))
        out.append(o[0])
    return out


def conv_rule(ctx, elem=None):
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    elem = ctx.input_elem(0) if elem is None else elem
    if x is None:
        ctx.set_output(0, elem, None)
        return
    nd = len(x) - 2
    ks = ctx.attr("kernel_shape")
    if ks:
        kernel = [int(k) for k in ks]
    elif w is not None:
        kernel = [k if _is_int(k) else None for k in w[2:]]
    else:
        kernel = [None] * nd
    m = w[0] if w is not None else None
    ctx.set_output(0, elem, [x[0], m] + window_out(ctx, x[2:], kernel))


def conv_integer_rule(ctx):
    conv_rule(ctx, INT32)


def qlinear_conv_rule(ctx):
    x = ctx.input_shape(0)
    w = ctx.input_shape(3)
    elem = ctx.input_elem(7) if ctx.has_input(7) else ctx.input_elem(0)
    if x is None:
        ctx.set_output(0, elem, None)
        return
    ks = ctx.attr("kernel_shape")
    kernel = (
        [int(k) for k in ks]
        if ks
        else ([k if _is_int(k) else None for k in w[2:]] if w else [None] * (len(x) - 2))
    )
    ctx.set_output(0, elem, [x[0], w[0] if w else None] + window_out(ctx, x[2:], kernel))


def deform_conv_rule(ctx):
    conv_rule(ctx)


def conv_transpose_rule(ctx):
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    elem = ctx.input_elem(0)
    if x is None:
        ctx.set_output(0, elem, None)
        return
    nd = len(x) - 2
    group = int(ctx.attr("group", 1) or 1)
    m = w[1] * group if w is not None and _is_int(w[1]) else None
    ks = ctx.attr("kernel_shape")
    kernel = (
        [int(k) for k in ks] if ks else ([k if _is_int(k) else None for k in w[2:]] if w else [None] * nd)
    )
    out_shape = ctx.attr("output_shape")
    if out_shape:
        spatial = [int(v) for v in out_shape][-nd:]
    else:
        strides = _ints(ctx.attr("strides"), nd, 1)
        dilations = _ints(ctx.attr("dilations"), nd, 1)
        opad = _ints(ctx.attr("output_padding"), nd, 0)
        pads = _ints(ctx.attr("pads"), 2 * nd, 0)
        ap = norm_auto_pad(ctx.attr("auto_pad", "NOTSET"))
        spatial = []
        for i in range(nd):
            n = x[2 + i]
            if not _is_int(n) or kernel[i] is None:
                spatial.append(None)
            elif ap in ("SAME_UPPER", "SAME_LOWER"):
                spatial.append(n * strides[i])
            else:
                pb, pe = (0, 0) if ap == "VALID" else (pads[i], pads[i + nd])
                spatial.append(strides[i] * (n - 1) + opad[i] + (kernel[i] - 1) * dilations[i] + 1 - pb - pe)
    ctx.set_output(0, elem, [x[0], m] + spatial)


def pool_rule(ctx):
    x = ctx.input_shape(0)
    elem = ctx.input_elem(0)
    if x is None:
        ctx.set_output(0, elem, None)
        ctx.set_output(1, INT64, None)
        return
    ks = ctx.attr("kernel_shape")
    kernel = [int(k) for k in ks] if ks else [d if _is_int(d) else None for d in x[2:]]
    dims = [x[0], x[1]] + window_out(ctx, x[2:], kernel, ceil_mode=bool(ctx.attr("ceil_mode", 0)))
    ctx.set_output(0, elem, dims)
    ctx.set_output(1, INT64, dims)


def global_pool_rule(ctx):
    x = ctx.input_shape(0)
    ctx.set_output(0, ctx.input_elem(0), None if x is None else [x[0], x[1]] + [1] * (len(x) - 2))


def batch_norm_rule(ctx):
    ctx.same_as_input(0)
    for out, inp in ((1, 3), (2, 4), (3, 3), (4, 4)):
        if out < ctx.num_outputs:
            ctx.same_as_input(inp, out)


def layer_norm_rule(ctx):
    ctx.same_as_input(0)
    x = ctx.input_shape(0)
    if x is None:
        return
    r = len(x)
    axis = int(ctx.attr("axis", -1))
    if not -max(r, 1) <= axis < max(r, 1):  # an axis of -2**31 would ask for a list of 2**31 ones below
        ctx.fail(f"axis {axis} out of range for rank {r}")
    axis = axis + r if axis < 0 else axis
    stat = x[:axis] + [1] * (r - axis)
    st = ctx.attr("stash_type", 1)
    elem = int(DataType.BFLOAT16) if st == 16 else FLOAT
    ctx.set_output(1, elem, stat)
    ctx.set_output(2, elem, stat)


def dropout_rule(ctx):
    ctx.same_as_input(0)
    if ctx.num_outputs > 1:
        ctx.same_as_input(0, 1, elem=BOOL if ctx.opset >= 10 else None)


def resize_rule(ctx):
    """Resize (v10+) and Upsample: output dims from constant scales/sizes, else unknown dims."""
    x = ctx.input_shape(0)
    elem = ctx.input_elem(0)
    if x is None:
        ctx.set_output(0, elem, None)
        return
    r = len(x)
    op = ctx.node.op_type
    if op == "Upsample" and ctx.opset < 9:
        sv = ctx.attr("scales")
        if sv is None:
            sv = [1.0, 1.0, ctx.attr("height_scale", 1.0), ctx.attr("width_scale", 1.0)]
        scales, sizes = sv, None
    elif ctx.opset < 11:
        scales, sizes = _floats(ctx, 1), None
    else:
        scales, sizes = _floats(ctx, 2), ctx.input_ints(3) if ctx.has_input(3) else None
    axes = ctx.attr("axes") or list(range(r))
    axes = [a + r if a < 0 else a for a in axes]
    out = list(x)
    if sizes:
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch" or not all(_is_int(x[a]) for a in axes):
            for a, s in zip(axes, sizes):
                out[a] = s
        else:
            ratios = [s / x[a] for a, s in zip(axes, sizes)]
            sc = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a] = int(math.floor(sc * x[a] + 0.5))
    elif scales:
        for a, s in zip(axes, scales):
            out[a] = int(math.floor(x[a] * s)) if _is_int(x[a]) else (x[a] if s == 1 else None)
    else:
        for a in axes:
            out[a] = None
    ctx.set_output(0, elem, out)


def _floats(ctx, i):
    if not ctx.has_input(i):
        return None
    v = ctx.input_value(i)
    if v is None:
        return None
    return [float(a) for a in v.reshape(-1)]


def attention_rule(ctx):
    q, k, v = ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)
    elem = ctx.input_elem(0)
    if q is None or k is None or v is None:
        ctx.set_output(0, elem, None)
        return
    past = ctx.input_shape(4) if ctx.has_input(4) else None
    if len(q) == 4:
        b, hq, sq = q[0], q[1], q[2]
        hkv, skv, dk, dv = k[1], k[2], k[3], v[3]
        y = [b, hq, sq, dv]
    else:
        nq, nkv = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
        b, sq, skv = q[0], q[1], k[1]
        hq, hkv = nq, nkv
        dk = k[2] // nkv if nkv and _is_int(k[2]) else None
        dv = v[2] // nkv if nkv and _is_int(v[2]) else None
        y = [b, sq, v[2] // nkv * nq if nkv and nq and _is_int(v[2]) else None]
    total = skv
    if past is not None:
        total = past[2] + skv if _is_int(past[2]) and _is_int(skv) else None
    ctx.set_output(0, elem, y)
    ctx.set_output(1, elem, [b, hkv, total, dk])
    ctx.set_output(2, elem, [b, hkv, total, dv])
    ctx.set_output(3, elem, [b, hq, sq, total])


def roi_rule(ctx):
    x, rois = ctx.input_shape(0), ctx.input_shape(1)
    elem = ctx.input_elem(0)
    if ctx.node.op_type == "MaxRoiPool":
        ph, pw = ctx.attr("pooled_shape")
    else:
        ph, pw = ctx.attr("output_height", 1), ctx.attr("output_width", 1)
    ctx.set_output(0, elem, [rois[0] if rois else None, x[1] if x else None, ph, pw])


def max_unpool_rule(ctx):
    x = ctx.input_shape(0)
    elem = ctx.input_elem(0)
    if ctx.has_input(2):
        ctx.set_output(0, elem, ctx.input_ints(2) or ([None] * len(x) if x else None))
        return
    if x is None:
        ctx.set_output(0, elem, None)
        return
    nd = len(x) - 2
    kernel = _ints(ctx.attr("kernel_shape"), nd, 1)
    strides = _ints(ctx.attr("strides"), nd, 1)
    pads = _ints(ctx.attr("pads"), 2 * nd, 0)
    sp = [
        (x[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + nd] if _is_int(x[2 + i]) else None
        for i in range(nd)
    ]
    ctx.set_output(0, elem, [x[0], x[1]] + sp)


def grid_sample_rule(ctx):
    x, g = ctx.input_shape(0), ctx.input_shape(1)
    if x is None or g is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    ctx.set_output(0, ctx.input_elem(0), [x[0], x[1]] + list(g[1:-1]))


def affine_grid_rule(ctx):
    size = ctx.input_ints(1)
    if size is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    ctx.set_output(0, ctx.input_elem(0), [size[0]] + list(size[2:]) + [len(size) - 2])


def col2im_rule(ctx):
    x = ctx.input_shape(0)
    img, blk = ctx.input_ints(1), ctx.input_ints(2)
    elem = ctx.input_elem(0)
    if x is None or img is None:
        ctx.set_output(0, elem, None)
        return
    c = None
    if blk is not None and all(_is_int(b) for b in blk) and _is_int(x[1]):
        c = x[1] // math.prod(blk)
    ctx.set_output(0, elem, [x[0], c] + list(img))


def nms_rule(ctx):
    ctx.set_output(0, INT64, [ctx.new_dim(), 3])


def loss_rule(ctx):
    x, t = ctx.input_shape(0), ctx.input_shape(1)
    reduction = ctx.attr("reduction", "mean")
    ctx.set_output(0, ctx.input_elem(0), t if reduction == "none" else [])
    if ctx.num_outputs > 1:
        ctx.set_output(1, ctx.input_elem(0), x)


def causal_conv_rule(ctx):
    ctx.same_as_input(0)
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    k = w[2] if w is not None and _is_int(w[2]) else None
    ctx.set_output(1, ctx.input_elem(0), None if x is None else [x[0], x[1], None if k is None else k - 1])


def linear_attention_rule(ctx):
    q, k, v = ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)
    elem = ctx.input_elem(0)
    hq, hkv = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if q is None or v is None or k is None or not hq or not hkv:
        return
    dk = q[2] // hq if _is_int(q[2]) else None
    dv = v[2] // hkv if _is_int(v[2]) else None
    ctx.set_output(0, elem, [q[0], q[1], dv * hq if dv is not None else None])
    ctx.set_output(1, elem, [q[0], hkv, dk, dv])


def flex_attention_rule(ctx):
    q, v = ctx.input_shape(0), ctx.input_shape(2)
    if q is None or v is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    ctx.set_output(0, ctx.input_elem(0), [q[0], q[1], q[2], v[3]])
