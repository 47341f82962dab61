"""LSTM: a one-layer long short-term memory, gates in i, o, f, c order; peepholes P in i, o, f order.

With the default activations and no peepholes or sequence lengths, the time loops of every direction
are onyx.kernels.rnn.lstm_sequence; otherwise the general loop here, one activation call per gate group.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.rnn import lstm_sequence, one_blas_thread
from onyx.ops._derived import derived
from onyx.ops.rnn._common import (
    Prepared,
    activation_functions,
    register_recurrent,
    run_directions,
    session_threads,
    split_bias,
)


def _lstm(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activation_alpha,
    activation_beta,
    activations,
    clip,
    direction,
    hidden_size,
    input_forget,
    layout=0,
    output_sequence=0,
    _num_outputs,
    _ctx,
):
    p = Prepared(
        "LSTM", X, W, R, sequence_lens, [initial_h, initial_c], hidden_size, direction, layout, gates=4
    )
    defaults = ["Sigmoid", "Tanh", "Tanh"]
    fns = activation_functions(activations, activation_alpha, activation_beta, defaults, p.D)
    Wb, Rb = split_bias(B, p.D, 4, p.H, p.dtype)
    T, Bn, H = p.T, p.B, p.H
    if P is not None:
        if P.shape != (p.D, 3 * H):
            raise InvalidArgument(f"LSTM: P has shape {P.shape}, expected {(p.D, 3 * H)}")
        P = P.astype(p.dtype, copy=False)
    Y = np.empty((T, p.D, Bn, H), dtype=p.dtype)
    threads = session_threads(_ctx)
    with one_blas_thread():
        # the input projections of every step at once, then the time loops
        xws = p.input_projections([Wb[d] + Rb[d] for d in range(p.D)], threads)
        if P is None and p.mask is None and _default_activations(activations):
            finals_h, finals_c = _default_loops(p, xws, Y, clip, input_forget, threads)
        else:
            finals_h, finals_c = _general_loops(p, xws, Y, fns, P, clip, input_forget, threads)
    return p.finish(Y, [finals_h, finals_c], _num_outputs)


def _default_activations(acts) -> bool:
    """True when the activations are LSTM's defaults (sigmoid, tanh, tanh)."""
    if not acts:
        return True
    names = [str(a).lower() for a in acts]
    return names in (["sigmoid", "tanh", "tanh"], ["sigmoid", "tanh", "tanh"] * 2)


def _default_loops(p: Prepared, xws: list, Y: np.ndarray, clip, input_forget, threads: int):
    """Every direction's loop by kernels.rnn.lstm_sequence: (final h, final c), each (D, B, H)."""
    r_t = derived(p.R, "LSTM R^T", lambda: np.ascontiguousarray(p.R.transpose(0, 2, 1)))
    h = np.array(p.initial[0], dtype=p.dtype)
    c = np.array(p.initial[1], dtype=p.dtype)
    y = np.empty((p.D, p.T, p.B, p.H), dtype=p.dtype)
    lstm_sequence(np.stack(xws), r_t, h, c, y, clip=clip, input_forget=bool(input_forget), threads=threads)
    for d in range(p.D):
        Y[:, d] = p.place_output(y[d], d)
    return h, c


def _general_loops(p: Prepared, xws: list, Y: np.ndarray, fns, P, clip, input_forget, threads: int):
    """Every direction's loop by _recurrence (directions on two threads where that pays)."""
    finals_h: list = [None] * p.D
    finals_c: list = [None] * p.D

    def run_direction(d: int) -> None:
        y, finals_h[d], finals_c[d] = _recurrence(p, d, xws[d], fns[d], P, clip, input_forget)
        Y[:, d] = p.place_output(y, d)

    run_directions(run_direction, p, threads)
    return np.stack(finals_h), np.stack(finals_c)


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


register_recurrent(
    "LSTM",
    _lstm,
    inputs=("B", "sequence_lens", "initial_h", "initial_c", "P"),
    attributes={"input_forget": 0},
    num_outputs=3,
    wants_ctx=True,
    gates=4,
    num_states=2,
)
