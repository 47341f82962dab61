"""GRU: a one-layer gated recurrent unit, gates in z, r, h order; linear_before_reset (v3+)."""

from __future__ import annotations

import numpy as np

from onyx.ops.rnn._common import VERSIONS, Prepared, activation_functions, register_recurrent, split_bias


def _gru(
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
    linear_before_reset=0,
    output_sequence=0,
    _num_outputs,
):
    p = Prepared("GRU", X, W, R, sequence_lens, [initial_h], hidden_size, direction, layout, gates=3)
    fns = activation_functions(activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh"], p.D)
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
    return p.finish(Y, [np.stack(finals)], _num_outputs)


register_recurrent(
    "GRU",
    _gru,
    inputs=("B", "sequence_lens", "initial_h"),
    attributes={"linear_before_reset": 0},
    # GRU-1 spells its default direction "foward" and has no linear_before_reset; 3 added it
    versions=(
        (1, 3, {"direction": "foward", "output_sequence": 0}, ("linear_before_reset",)),
        (3, 7, {"output_sequence": 0}, ()),
        *VERSIONS[1:],
    ),
    num_outputs=2,
    gates=3,
    num_states=1,
)
