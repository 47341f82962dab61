"""com.microsoft FusedConv: Conv (+ Z) followed by an activation named by ``activation``."""

from onyx.ops.contrib._common import activate_, back, to_compute
from onyx.ops.nn._conv_attrs import conv_kwargs, with_conv_attributes
from onyx.ops.nn._shapes import conv_rule
from onyx.ops.nn.conv import ReplayMemo, conv_forward, wants_channels_last
from onyx.ops.registry import op, shape_rule


def _prepare(*, _node=None, _ctx=None, activation, activation_params, **conv_attrs):
    """FusedConv bound to its node once: whether its output stays channels-last is decided here, and
    its channels-last runs are replayed per input signature (onyx.ops.nn.conv.ReplayMemo)."""
    cl = wants_channels_last(_node)
    memo = ReplayMemo()

    def run(X, W, B=None, Z=None):  # noqa: N803
        y = memo.replay(X, W, B, Z)
        if y is None:
            y = _fused_conv(X, W, B, Z, cl, _ctx, activation, activation_params, memo, **conv_attrs)
        return y

    return run


@op("FusedConv", domain="com.microsoft", since=1, prepare=_prepare)
@with_conv_attributes
def fused_conv(
    X,  # noqa: N803
    W,  # noqa: N803
    B=None,  # noqa: N803
    Z=None,  # noqa: N803
    *,
    activation="",
    activation_params=None,
    _ctx=None,
    _node=None,
    **conv,
):
    attrs = conv_kwargs(conv)
    return _fused_conv(X, W, B, Z, wants_channels_last(_node), _ctx, activation, activation_params, **attrs)


def _fused_conv(X, W, B, Z, channels_last, ctx, activation, activation_params, memo=None, **conv_attrs):  # noqa: N803
    dtype = X.dtype
    x = to_compute(X)
    params = list(activation_params or [])
    post = None
    if activation:  # applied to each finished block of the output (Z added) while it is in cache

        def post(block):
            return activate_(block, activation, params, "FusedConv")

    z = None
    if Z is not None:
        z = Z.astype(x.dtype, copy=False)

    w = W.astype(x.dtype, copy=False)
    b = None if B is None else B.astype(x.dtype, copy=False)
    same = x is X and w is W and b is B and z is Z  # the memo's runs are keyed on the node's own inputs
    y = conv_forward(
        x,
        w,
        b,
        ctx=ctx,
        **conv_attrs,
        post=post,
        act=(activation, params) if post is not None else None,
        z=z,
        channels_last=channels_last,
        memo=memo if same else None,
    )
    return back(y, dtype)


@shape_rule("FusedConv", domain="com.microsoft")
def _shape(ctx):
    conv_rule(ctx)  # Conv's rule: X, W and the attributes decide; Z and the activation change nothing
