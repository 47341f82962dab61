"""LSTM: a one-layer long short-term memory, gates in i, o, f, c order; peepholes P in i, o, f order."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.rnn._common import Prepared, activations, recurrent_shape_rule, split_bias


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
    finals_h, finals_c = [], []
    for d in range(p.D):
        xw = p.direction_input(p.input_projection(d, Wb[d] + Rb[d]), d)
        R_t = p.R[d].T
        f, g, hf = fns[d]
        if P is not None:
            pi, po, pf = P[d, :H], P[d, H : 2 * H], P[d, 2 * H :]
        h = p.initial[0][d]
        c = p.initial[1][d]
        y = np.empty((T, Bn, H), dtype=p.dtype)
        for t in range(T):
            gates = h @ R_t
            gates += xw[t]
            gi = gates[:, :H]
            go = gates[:, H : 2 * H]
            gf = gates[:, 2 * H : 3 * H]
            gc = gates[:, 3 * H :]
            if P is not None:
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
            if P is not None:
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
        Y[:, d] = p.place_output(y, d)
        finals_h.append(h)
        finals_c.append(c)
    return p.finish(Y, [np.stack(finals_h), np.stack(finals_c)], num_outputs)


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
    )


shape_rule("LSTM")(recurrent_shape_rule(gates=4, num_states=2))
