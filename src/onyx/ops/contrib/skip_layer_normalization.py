"""com.microsoft SkipLayerNormalization: s = input + skip (+ bias); output = LayerNorm(s) over the
last axis * gamma (+ beta). Optional outputs: mean, inv_std_var (last axis kept as 1) and s."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import back, rule_like_input0, rule_stats, standardize_last, to_compute
from onyx.ops.nn._norm import norm_rows_jit
from onyx.ops.registry import op, shape_rule


def skip_sum(what, x, skip, bias):
    if x.ndim not in (2, 3):
        raise InvalidArgument(f"{what}: input must be 2-D or 3-D, got {x.shape}")
    try:
        s = np.add(to_compute(x), to_compute(skip))
        if bias is not None:
            s += to_compute(bias)
    except ValueError:
        raise InvalidArgument(
            f"{what}: input {x.shape}, skip {skip.shape} and bias "
            f"{None if bias is None else bias.shape} do not fit"
        ) from None
    if s.shape != x.shape:
        raise InvalidArgument(f"{what}: skip {skip.shape} does not broadcast to the input {x.shape}")
    return s


def finish(what, s, y, mean, inv, gamma, beta, dtype, n):
    hidden = s.shape[-1]
    if gamma.shape[-1:] != (hidden,) or gamma.ndim != 1:
        raise InvalidArgument(f"{what}: gamma {gamma.shape} must be 1-D of the hidden size {hidden}")
    y *= to_compute(gamma)
    if beta is not None:
        if beta.shape != (hidden,):
            raise InvalidArgument(f"{what}: beta {beta.shape} must be 1-D of the hidden size {hidden}")
        y += to_compute(beta)
    stat = s.shape[:-1] + (1,)
    outs = [
        back(y, dtype),
        None if mean is None else mean.reshape(stat).astype(np.float32),
        inv.reshape(stat).astype(np.float32),
        back(s, dtype),
    ]
    return outs[0] if n == 1 else tuple(outs[:n])


def compiled(what, x, skip, gamma, beta, bias, epsilon, n, simplified):
    """The whole op by the compiled row loop (onyx.ops.nn._norm.norm_rows_jit), or None where it does
    not apply: then the numpy path runs (and reports bad shapes)."""
    if x.ndim not in (2, 3) or skip.shape != x.shape or gamma.ndim != 1:
        return None
    if (beta is not None and beta.ndim != 1) or (bias is not None and bias.ndim != 1):
        return None
    hidden = x.shape[-1]
    xc = to_compute(x)
    fast = norm_rows_jit(
        xc.reshape(-1, hidden),
        epsilon,
        gamma,
        beta,
        skip=to_compute(skip).reshape(-1, hidden),
        bias=bias,
        simplified=simplified,
        keep_sum=n > 3,
    )
    if fast is None:
        return None
    y, s, mean, inv = fast
    stat = x.shape[:-1] + (1,)
    outs = [
        back(y.reshape(x.shape), x.dtype),
        None if simplified else mean.reshape(stat).astype(np.float32),
        inv.reshape(stat).astype(np.float32),
        None if s is None else back(s.reshape(x.shape), x.dtype),
    ]
    return outs[0] if n == 1 else tuple(outs[:n])


@op("SkipLayerNormalization", domain="com.microsoft", since=1)
def skip_layer_normalization(input, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, _num_outputs=1):  # noqa: A002
    what = "SkipLayerNormalization"
    fast = compiled(what, input, skip, gamma, beta, bias, epsilon, _num_outputs, False)
    if fast is not None:
        return fast
    s = skip_sum(what, input, skip, bias)
    y, mean, inv = standardize_last(s.astype(np.float32) if s.dtype != np.float64 else s, epsilon)
    return finish(what, s, y, mean, inv, gamma, beta, input.dtype, _num_outputs)


@shape_rule("SkipLayerNormalization", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx, (0, 3))
    rule_stats(ctx, (1, 2))
