"""GRU: a one-layer gated recurrent unit, gates in z, r, h order; linear_before_reset (v3+)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.rnn._common import Prepared, activations, recurrent_shape_rule, split_bias


def _gru(
    X,
    W,
    R,
    B,
    sequence_lens,
    initial_h,
    *,
    activation_alpha,
    activation_beta,
    acts,
    clip,
    direction,
    hidden_size,
    layout,
    linear_before_reset,
    num_outputs,
):
    p = Prepared("GRU", X, W, R, sequence_lens, [initial_h], hidden_size, direction, layout, gates=3)
    fns = activations(acts, activation_alpha, activation_beta, ["Sigmoid", "Tanh"], p.D)
    Wb, Rb = split_bias(B, p.D, 3, p.H, p.dtype)
    T, Bn, H = p.T, p.B, p.H
    H2 = 2 * H
    Y = np.empty((T, p.D, Bn, H), dtype=p.dtype)
    finals = []
    for d in range(p.D):
        bias = Wb[d].copy()
        bias[:H2] += Rb[d][:H2]
        rbh = Rb[d][H2:]
        if not linear_before_reset:
            bias[H2:] += rbh
        xw = p.direction_input(p.input_projection(d, bias), d)
        Rzr_t = p.R[d][:H2].T
        Rh_t = p.R[d][H2:].T
        R_t = p.R[d].T
        f, g = fns[d]
        h = p.initial[0][d]
        y = np.empty((T, Bn, H), dtype=p.dtype)
        for t in range(T):
            x = xw[t]
            if linear_before_reset:
                hr = h @ R_t
                zr = hr[:, :H2]
                zr += x[:, :H2]
                hh = hr[:, H2:]
                hh += rbh
            else:
                zr = h @ Rzr_t
                zr += x[:, :H2]
            if clip is not None:
                np.clip(zr, -clip, clip, out=zr)
            zr = f(zr)
            z = zr[:, :H]
            r = zr[:, H:]
            if linear_before_reset:
                hh *= r
            else:
                hh = (r * h) @ Rh_t
            hh += x[:, H2:]
            if clip is not None:
                np.clip(hh, -clip, clip, out=hh)
            hh = g(hh)
            # Ht = (1 - z) * hh + z * h = hh + z * (h - hh)
            hn = h - hh
            hn *= z
            hn += hh
            if p.mask is not None:
                hn = np.where(p.mask[t], hn, h)
            y[t] = hn
            h = hn
        Y[:, d] = p.place_output(y, d)
        finals.append(h)
    return p.finish(Y, [np.stack(finals)], num_outputs)


@op("GRU", since=1, until=3)
def gru_1(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="foward",
    hidden_size=None,
    output_sequence=0,
    _num_outputs=2,
):
    return _gru(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=0,
        linear_before_reset=0,
        num_outputs=_num_outputs,
    )


@op("GRU", since=3, until=7)
def gru_3(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    linear_before_reset=0,
    output_sequence=0,
    _num_outputs=2,
):
    return _gru(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=0,
        linear_before_reset=linear_before_reset,
        num_outputs=_num_outputs,
    )


@op("GRU", since=7, until=14)
def gru_7(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    linear_before_reset=0,
    _num_outputs=2,
):
    return _gru(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=0,
        linear_before_reset=linear_before_reset,
        num_outputs=_num_outputs,
    )


@op("GRU", since=14)
def gru_14(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
    linear_before_reset=0,
    _num_outputs=2,
):
    return _gru(
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        acts=activations,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=layout,
        linear_before_reset=linear_before_reset,
        num_outputs=_num_outputs,
    )


shape_rule("GRU")(recurrent_shape_rule(gates=3, num_states=1))
