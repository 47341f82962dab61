"""LSTM: a one-layer long short-term memory, gates in i, o, f, c order; peepholes P in i, o, f order."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops import _perf
from onyx.ops._derived import derived
from onyx.ops.registry import op, shape_rule
from onyx.ops.rnn._common import (
    Prepared,
    activations,
    kernel_threads,
    recurrent_shape_rule,
    run_directions,
    single_threaded_blas,
    split_bias,
)


def _lstm(
    X,
    W,
    R,
    B,
    sequence_lens,
    initial_h,
    initial_c,
    P,
    *,
    activation_alpha,
    activation_beta,
    acts,
    clip,
    direction,
    hidden_size,
    input_forget,
    layout,
    num_outputs,
    ctx=None,
):
    p = Prepared(
        "LSTM", X, W, R, sequence_lens, [initial_h, initial_c], hidden_size, direction, layout, gates=4
    )
    fns = activations(acts, activation_alpha, activation_beta, ["Sigmoid", "Tanh", "Tanh"], p.D)
    Wb, Rb = split_bias(B, p.D, 4, p.H, p.dtype)
    T, Bn, H = p.T, p.B, p.H
    if P is not None:
        if P.shape != (p.D, 3 * H):
            raise InvalidArgument(f"LSTM: P has shape {P.shape}, expected {(p.D, 3 * H)}")
        P = P.astype(p.dtype, copy=False)
    Y = np.empty((T, p.D, Bn, H), dtype=p.dtype)
    finals_h: list = [None] * p.D
    finals_c: list = [None] * p.D
    threads = kernel_threads(ctx)

    default = P is None and p.mask is None and _default_activations(acts)
    jit = _compiled_loop(p) if default else None

    def run_direction(d: int) -> None:
        if jit is not None:
            y, h, c = _recurrence_jit(jit, p, d, xws[d], clip, input_forget)
        elif default:
            y, h, c = _recurrence_default(p, d, xws[d], clip, input_forget)
        else:
            y, h, c = _recurrence(p, d, xws[d], fns[d], P, clip, input_forget)
        Y[:, d] = p.place_output(y, d)
        finals_h[d] = h
        finals_c[d] = c

    with single_threaded_blas():
        # the input projections of every step at once, then the time loops
        xws = p.input_projections([Wb[d] + Rb[d] for d in range(p.D)], threads)
        run_directions(run_direction, p, threads)
    return p.finish(Y, [np.stack(finals_h), np.stack(finals_c)], num_outputs)


def _default_activations(acts) -> bool:
    """True when the activations are LSTM's defaults (sigmoid, tanh, tanh)."""
    if not acts:
        return True
    names = [str(a).lower() for a in acts]
    return names in (["sigmoid", "tanh", "tanh"], ["sigmoid", "tanh", "tanh"] * 2)


#: batch rows up to which the compiled time loop runs (the benchmark's LSTM, alternating in one
#: process: 2 rows 8.3 against 13.4 ms for numpy's loop, 4 rows 14.1 against 24.0, 8 rows 26.0 against
#: 32.0; 16 rows 108 against 82, where numpy's one GEMM over R for all rows wins)
JIT_MAX_BATCH = 8


def _compiled_loop(p):
    """The compiled module of the ``perf`` extra for a float32 LSTM of a few batch rows, else None."""
    if p.dtype != np.float32 or p.B > JIT_MAX_BATCH:
        return None
    return _perf.jit_module("onyx.ops.rnn._jit")


def _recurrence_jit(jit, p, d: int, xw, clip, input_forget):
    """_recurrence_default by the compiled loop (jit.lstm_default32)."""
    R_t = derived(p.R, ("R^T", d), lambda: np.ascontiguousarray(p.R[d].T))
    h = np.array(p.initial[0][d], dtype=np.float32)
    c = np.array(p.initial[1][d], dtype=np.float32)
    y = np.empty((p.T, p.B, p.H), dtype=np.float32)
    bound = np.float32(clip) if clip is not None else np.float32(-1.0)
    jit.lstm_default32(np.ascontiguousarray(xw, dtype=np.float32), R_t, h, c, y, bound, bool(input_forget))
    return y, h, c


def _halved_r_t(r: np.ndarray, h3: int, half) -> np.ndarray:
    r_t = np.ascontiguousarray(r.T)
    r_t[:, :h3] *= half
    return r_t


def _recurrence_default(p, d: int, xw, clip, input_forget):
    """_recurrence for the default activations without peepholes or sequence lengths, in ten numpy
    calls a step instead of fourteen: sigmoid(x) = 0.5 tanh(x / 2) + 0.5, and the halving is folded
    into R's and the input projection's i, o, f columns once (exact: a power of two), so one tanh call
    serves all four gates. Results are identical to _recurrence's."""
    T, Bn, H = p.T, p.B, p.H
    h3 = 3 * H
    half = p.dtype.type(0.5)
    R_t = derived(p.R, ("lstm R^T, i/o/f halved", d), lambda: _halved_r_t(p.R[d], h3, half))
    xw = np.array(xw, dtype=p.dtype)  # a copy: the halving must not reach the caller's array
    xw[..., :h3] *= half
    h = p.initial[0][d]
    c = np.array(p.initial[1][d], dtype=p.dtype)
    y = np.empty((T, Bn, H), dtype=p.dtype)
    gates = np.empty((Bn, 4 * H), dtype=p.dtype)
    tmp = np.empty((Bn, H), dtype=p.dtype)
    sig = gates[:, :h3]
    i, o, fg, gc = gates[:, :H], gates[:, H : 2 * H], gates[:, 2 * H : h3], gates[:, h3:]
    for t in range(T):
        np.matmul(h, R_t, out=gates)
        gates += xw[t]
        if clip is not None:  # clip before the activations, on the halved i, o, f values with clip / 2
            np.clip(sig, -clip * half, clip * half, out=sig)
            np.clip(gc, -clip, clip, out=gc)
        np.tanh(gates, out=gates)
        sig *= half
        sig += half
        if input_forget:
            np.subtract(1, i, out=fg)
        c *= fg
        np.multiply(i, gc, out=tmp)
        c += tmp
        h = y[t]
        np.tanh(c, out=h)
        h *= o
    return y, h.copy(), c


def _recurrence(p, d: int, xw, fns, P, clip, input_forget):
    """One direction's time loop: (Y (T, B, H), final h, final c)."""
    T, Bn, H = p.T, p.B, p.H
    R_t = derived(p.R, ("R^T", d), lambda: np.ascontiguousarray(p.R[d].T))
    f, g, hf = fns
    h = p.initial[0][d]
    c = p.initial[1][d]
    y = np.empty((T, Bn, H), dtype=p.dtype)
    gates = np.empty((Bn, 4 * H), dtype=p.dtype)
    if P is None:
        # no peepholes: the i, o, f gates are one contiguous block for one activation call, and clip
        # (applied before every activation) clips the four gates at once
        for t in range(T):
            np.matmul(h, R_t, out=gates)
            gates += xw[t]
            if clip is not None:
                np.clip(gates, -clip, clip, out=gates)
            iof = f(gates[:, : 3 * H])
            i = iof[:, :H]
            fg = 1 - i if input_forget else iof[:, 2 * H :]
            cn = fg * c
            cn += i * g(gates[:, 3 * H :])
            hn = hf(cn.copy())
            hn *= iof[:, H : 2 * H]
            if p.mask is not None:
                m = p.mask[t]
                hn = np.where(m, hn, h)
                cn = np.where(m, cn, c)
            y[t] = hn
            h, c = hn, cn
        return y, h, c
    pi, po, pf = P[d, :H], P[d, H : 2 * H], P[d, 2 * H :]
    for t in range(T):
        gates = h @ R_t
        gates += xw[t]
        gi = gates[:, :H]
        go = gates[:, H : 2 * H]
        gf = gates[:, 2 * H : 3 * H]
        gc = gates[:, 3 * H :]
        gi += pi * c
        gf += pf * c
        if clip is not None:
            np.clip(gi, -clip, clip, out=gi)
            np.clip(gf, -clip, clip, out=gf)
            np.clip(gc, -clip, clip, out=gc)
        i = f(gi)
        if input_forget:
            fg = 1 - i
        else:
            fg = f(gf)
        cc = g(gc)
        cn = fg * c
        cn += i * cc
        go += po * cn
        if clip is not None:
            np.clip(go, -clip, clip, out=go)
        o = f(go)
        hn = hf(cn.copy())
        hn *= o
        if p.mask is not None:
            m = p.mask[t]
            hn = np.where(m, hn, h)
            cn = np.where(m, cn, c)
        y[t] = hn
        h, c = hn, cn
    return y, h, c


@op("LSTM", since=1, until=7)
def lstm_1(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
    output_sequence=0,
    _num_outputs=3,
    _ctx=None,
):
    return _lstm(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        initial_c,
        P,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        input_forget=input_forget,
        layout=0,
        num_outputs=_num_outputs,
        ctx=_ctx,
    )


@op("LSTM", since=7, until=14)
def lstm_7(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
    _num_outputs=3,
    _ctx=None,
):
    return _lstm(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        initial_c,
        P,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        input_forget=input_forget,
        layout=0,
        num_outputs=_num_outputs,
        ctx=_ctx,
    )


@op("LSTM", since=14)
def lstm_14(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
    layout=0,
    _num_outputs=3,
    _ctx=None,
):
    return _lstm(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        initial_c,
        P,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        input_forget=input_forget,
        layout=layout,
        num_outputs=_num_outputs,
        ctx=_ctx,
    )


shape_rule("LSTM")(recurrent_shape_rule(gates=4, num_states=2))
