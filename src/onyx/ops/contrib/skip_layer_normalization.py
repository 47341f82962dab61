"""com.microsoft SkipLayerNormalization: s = input + skip (+ bias); output = LayerNorm(s) over the
last axis * gamma (+ beta). Optional outputs: mean, inv_std_var (last axis kept as 1) and s."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.norm import layer_norm_rows
from onyx.ops.contrib._common import back, rule_like_input0, rule_stats, threads_of
from onyx.ops.registry import op, shape_rule


def skip_norm(what, x, skip, gamma, beta, bias, epsilon, n, simplified, threads):
    """The op's outputs (the first ``n`` of y, mean, inv_std_var, s), after checking the shapes: x
    2-D or 3-D, skip broadcasting to it, gamma / beta / bias 1-D of the hidden size."""
    if x.ndim not in (2, 3):
        raise InvalidArgument(f"{what}: input must be 2-D or 3-D, got {x.shape}")
    hidden = x.shape[-1]
    try:
        if np.broadcast_shapes(x.shape, skip.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise InvalidArgument(
            f"{what}: skip {skip.shape} does not broadcast to the input {x.shape}"
        ) from None
    for name, v in (("gamma", gamma), ("beta", beta)):
        if v is not None and v.shape != (hidden,):
            raise InvalidArgument(f"{what}: {name} {v.shape} must be 1-D of the hidden size {hidden}")
    if bias is not None and (bias.shape[-1:] != (hidden,) or bias.size != hidden):
        raise InvalidArgument(f"{what}: bias {bias.shape} must hold one value per hidden unit ({hidden})")
    dt = np.float64 if x.dtype == np.float64 else np.float32
    x2 = x.astype(dt, copy=False).reshape(int(np.prod(x.shape[:-1])), hidden)
    sk = skip if skip.shape == x.shape else np.broadcast_to(skip, x.shape)
    sk = sk.astype(dt, copy=False).reshape(x2.shape)
    y, s, mean, inv = layer_norm_rows(
        x2, gamma, beta, skip=sk, bias=bias, epsilon=epsilon, simplified=simplified, keep_sum=n > 3,
        threads=threads,
    )  # fmt: skip
    out = back(y.reshape(x.shape), x.dtype)
    if n == 1:
        return out
    stat = x.shape[:-1] + (1,)
    outs = (
        out,
        None if simplified else mean.reshape(stat).astype(np.float32),
        inv.reshape(stat).astype(np.float32),
        None if s is None else back(s.reshape(x.shape), x.dtype),
    )
    return outs[:n]


@op("SkipLayerNormalization", domain="com.microsoft", since=1)
def skip_layer_normalization(
    input,  # noqa: A002
    skip,
    gamma,
    beta=None,
    bias=None,
    *,
    epsilon=1e-12,
    _num_outputs=1,
    _ctx=None,
):
    return skip_norm(
        "SkipLayerNormalization",
        input,
        skip,
        gamma,
        beta,
        bias,
        epsilon,
        _num_outputs,
        False,
        threads_of(_ctx),
    )


@shape_rule("SkipLayerNormalization", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx, (0, 3))
    rule_stats(ctx, (1, 2))
