"""Conv: N-d convolution, one strategy per kind of convolution, chosen per call from the geometry.

- channels_last: a depthwise or 1x1 convolution whose input is channels-last, or whose node the
  optimizer's layout pass marked to leave its output channels-last (MobileNet's blocks);
- depthwise: one input channel per group, shifted multiply-adds on phase planes;
- planes: one group, phase planes feeding per-offset GEMMs or a column matrix of long copies;
- im2col: everything else, a column matrix (a strided view of x for 1x1 kernels and patches) and
  one GEMM batched over images and groups.

Every strategy finishes its output (bias, FusedConv's Z, the activation) in one kernel pass where the
kernels apply the activation (onyx.kernels.conv), else in numpy.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import products
from onyx.ops.nn._common import as_compute_weight, back, check_rank, compute_dtype
from onyx.ops.nn._conv_attrs import conv_kwargs, with_conv_attributes
from onyx.ops.nn._shapes import conv_rule
from onyx.ops.nn.conv import channels_last as nhwc
from onyx.ops.nn.conv import depthwise, im2col, planes
from onyx.ops.nn.conv._finish import Finish, threads_of
from onyx.ops.nn.conv._geometry import geometry, key
from onyx.ops.nn.conv.channels_last import ReplayMemo
from onyx.ops.registry import op, shape_rule

__all__ = ["ReplayMemo", "conv", "conv_forward", "wants_channels_last"]

#: the node annotation (in its metadata_props) of a convolution whose output stays channels-last, set by
#: onyx.optimizer.channels_last_layout
CHANNELS_LAST_KEY = "onyx.layout"
CHANNELS_LAST_VALUE = "channels_last"


def wants_channels_last(node) -> bool:
    """Whether the layout pass marked ``node`` to leave its output channels-last (read once per node,
    when the plan is built)."""
    return node is not None and (CHANNELS_LAST_KEY, CHANNELS_LAST_VALUE) in node.metadata_props


def conv_forward(
    x,
    w,
    b,
    *,
    auto_pad,
    dilations,
    group,
    kernel_shape,
    pads,
    strides,
    ctx=None,
    post=None,
    act=None,
    z=None,
    channels_last=False,
    memo=None,
):
    """The convolution shared by Conv, ConvInteger, QLinearConv and FusedConv (inputs already in
    compute dtype). ``ctx``: the kernel context (its intra_op_num_threads); ``z``: an array of the
    output's shape added to it (FusedConv's Z) before ``post``; ``post``: an in-place elementwise
    function (an activation) applied to each finished block of the output; ``act``: the same activation
    as (ONNX op name, params), which the kernels apply themselves when they know it;
    ``channels_last``: leave the output channels-last where a kernel can. An input that is
    channels-last (an NCHW view of an NHWC buffer, as such outputs are) runs channels-last where a
    kernel exists and is made contiguous otherwise. ``memo``: a node's :class:`ReplayMemo`, given when
    ``x``, ``w`` and ``b`` are the node's own inputs: a channels-last run records there what a later run
    with the same signature repeats without the checks and lookups."""
    check_rank(x, 3, "Conv X")
    group = int(group)
    geo = geometry(
        x.shape, w.shape, group, key(kernel_shape), key(pads), key(strides), key(dilations), auto_pad
    )
    n = x.shape[0]
    m = w.shape[0]
    if b is not None and b.shape != (m,):
        raise InvalidArgument(f"Conv: B of shape {b.shape}, expected ({m},)")
    if n == 0 or geo.positions == 0 or m == 0:
        return np.zeros((n, m) + geo.out, dtype=x.dtype)
    stop = getattr(ctx, "stop", None)
    if stop is not None and n > 1:  # a run that can be stopped: a huge batch runs in blocks of images
        attrs = dict(auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
                     pads=pads, strides=strides, post=post, act=act, channels_last=channels_last)  # fmt: skip
        y = _in_blocks(stop, x, w, b, z, geo.positions, attrs)
        if y is not None:
            return y
    finish = Finish.of(act, post)
    threads = threads_of(ctx)
    if x.ndim == 4 and (channels_last or channels_last_input(x)):
        y = nhwc.run(x, w, b, z, group, geo, finish, threads, memo)
        if y is not None:
            return y
        x = np.ascontiguousarray(x)
    if depthwise.applies(x, w, group, geo):
        return depthwise.run(x, w, b, z, geo, finish, threads)
    patches = im2col.is_patchify(w.shape[2:], geo)
    if planes.applies(x, w, group, geo, patches):
        return planes.run(x, w, b, z, geo, finish, threads, channels_last)
    return im2col.run(x, w, b, z, group, geo, finish, threads)


channels_last_input = nhwc.is_channels_last


def _in_blocks(stop, x, w, b, z, positions: int, attrs: dict):
    """conv_forward over blocks of images of about kernels.products.BLOCK_MACS multiply-adds, checking
    the run's ``stop`` before each (RunOptions.terminate or run.timeout_ms); None when the whole batch
    is below two blocks. Each block is the same convolution on fewer images: the same values, within
    the last bits where a GEMM's row count changes BLAS's blocking (only runs made with RunOptions)."""
    n = x.shape[0]
    per_image = w.shape[0] * positions * int(np.prod(w.shape[1:]))
    block = products.BLOCK_MACS
    if n * per_image < 2 * block:
        return None
    step = max(1, block // max(per_image, 1))
    parts = []
    for lo in range(0, n, step):
        stop.check(f"images {lo}:{min(lo + step, n)} of {n} of a convolution")
        zz = None if z is None else z[lo : lo + step]
        parts.append(conv_forward(x[lo : lo + step], w, b, z=zz, **attrs))
    return np.concatenate(parts)


def _prepare_conv(*, _node=None, _ctx=None, **attrs):
    """Conv bound to its node once: whether its output stays channels-last (the layout pass's mark) is
    read here, and its channels-last runs are replayed per input signature (ReplayMemo). Declines (the
    plain kernel runs, given its node on every call) when the plan does not pass the node."""
    if _node is None:
        return None
    cl = wants_channels_last(_node)
    memo = ReplayMemo()

    conv = conv_kwargs(attrs)

    def run(X, W, B=None):  # noqa: N803
        y = memo.replay(X, W, B, None)
        return _conv(X, W, B, cl, _ctx, memo, **conv) if y is None else y

    return run


@op("Conv", since=1, prepare=_prepare_conv)
@with_conv_attributes
def conv(X, W, B=None, *, _ctx=None, _node=None, **conv):  # noqa: N803
    return _conv(X, W, B, wants_channels_last(_node), _ctx, **conv_kwargs(conv))


def _conv(X, W, B, channels_last, ctx, memo=None, **attrs):  # noqa: N803
    dtype = X.dtype
    ct = compute_dtype(dtype)
    x, w = X.astype(ct, copy=False), as_compute_weight(W, ct)
    b = None if B is None else B.astype(ct, copy=False)
    same = x is X and w is W and b is B  # the memo's runs are keyed on the node's own inputs
    y = conv_forward(x, w, b, ctx=ctx, channels_last=channels_last, memo=memo if same else None, **attrs)
    return back(y, dtype)


shape_rule("Conv")(conv_rule)
