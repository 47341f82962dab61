"""RNN: a one-layer simple recurrent network, Ht = f(Xt*Wi^T + Ht-1*Ri^T + Wbi + Rbi)."""

from __future__ import annotations

import numpy as np

from onyx.ops.rnn._common import Prepared, activation_functions, register_recurrent, split_bias


def _rnn(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha,
    activation_beta,
    activations,
    clip,
    direction,
    hidden_size,
    layout=0,
    output_sequence=0,
    _num_outputs,
):
    p = Prepared("RNN", X, W, R, sequence_lens, [initial_h], hidden_size, direction, layout, gates=1)
    fns = activation_functions(activations, activation_alpha, activation_beta, ["Tanh"], p.D)
    Wb, Rb = split_bias(B, p.D, 1, p.H, p.dtype)
    T, Bn, H = p.T, p.B, p.H
    Y = np.empty((T, p.D, Bn, H), dtype=p.dtype)
    finals = []
    for d in range(p.D):
        xw = p.direction_input(p.input_projection(d, Wb[d] + Rb[d]), d)
        Rt = p.R[d].T
        f = fns[d][0]
        h = p.initial[0][d]
        y = np.empty((T, Bn, H), dtype=p.dtype)
        for t in range(T):
            g = h @ Rt
            g += xw[t]
            if clip is not None:
                np.clip(g, -clip, clip, out=g)
            hn = f(g)
            if p.mask is not None:
                hn = np.where(p.mask[t], hn, h)
            y[t] = hn
            h = hn
        Y[:, d] = p.place_output(y, d)
        finals.append(h)
    return p.finish(Y, [np.stack(finals)], _num_outputs)


register_recurrent(
    "RNN",
    _rnn,
    inputs=("B", "sequence_lens", "initial_h"),
    attributes={},
    num_outputs=2,
    gates=1,
    num_states=1,
)
