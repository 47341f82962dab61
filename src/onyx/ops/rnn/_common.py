"""Shared machinery of the recurrent operators (RNN, GRU, LSTM).

Every recurrent kernel works the same way: the input projection of all time steps is one GEMM
(``X @ W^T`` over ``seq_length * batch`` rows), then each time step does one small GEMM for the
recurrent part (``H @ R^T``) and a few elementwise activations. ``sequence_lens`` is honoured by
masking (forward) or by reversing each batch entry's valid prefix (reverse direction), so that the
time loop stays batched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import rnn as kernels
from onyx.ops._versions import register_versions
from onyx.ops.registry import shape_rule

# name -> (uses alpha, uses beta, default alpha, default beta)
_ACTIVATION_PARAMS: dict[str, tuple[bool, bool, float, float]] = {
    "relu": (False, False, 0.0, 0.0),
    "tanh": (False, False, 0.0, 0.0),
    "sigmoid": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0),
    "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0),
    "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5),
    "elu": (True, False, 1.0, 0.0),
    "softsign": (False, False, 0.0, 0.0),
    "softplus": (False, False, 0.0, 0.0),
}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # numerically stable: 0.5 * (1 + tanh(x / 2)), computed in place
    np.multiply(x, 0.5, out=x)
    np.tanh(x, out=x)
    np.multiply(x, 0.5, out=x)
    np.add(x, 0.5, out=x)
    return x


def _make_activation(name: str, alpha: float, beta: float) -> Callable[[np.ndarray], np.ndarray]:
    """An activation that may overwrite its argument and returns the result."""
    if name == "tanh":
        return lambda x: np.tanh(x, out=x)
    if name == "sigmoid":
        return _sigmoid
    if name == "relu":
        return lambda x: np.maximum(x, 0, out=x)
    if name == "affine":
        return lambda x: np.add(np.multiply(x, alpha, out=x), beta, out=x)
    if name == "leakyrelu":
        return lambda x: np.where(x >= 0, x, x * alpha).astype(x.dtype, copy=False)
    if name == "thresholdedrelu":
        return lambda x: np.where(x >= alpha, x, 0).astype(x.dtype, copy=False)
    if name == "scaledtanh":
        return lambda x: np.multiply(np.tanh(np.multiply(x, beta, out=x), out=x), alpha, out=x)
    if name == "hardsigmoid":
        return lambda x: np.clip(np.add(np.multiply(x, alpha, out=x), beta, out=x), 0, 1, out=x)
    if name == "elu":
        return lambda x: np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype, copy=False)
    if name == "softsign":
        return lambda x: np.divide(x, 1 + np.abs(x), out=x)
    if name == "softplus":
        return lambda x: np.logaddexp(x, 0, out=x)
    raise InvalidArgument(f"unknown recurrent activation function {name!r}")


def activation_functions(
    names: list[str] | None,
    alphas: list[float] | None,
    betas: list[float] | None,
    defaults: list[str],
    num_directions: int,
) -> list[list[Callable[[np.ndarray], np.ndarray]]]:
    """Per direction, the list of activation callables (f, g[, h]).

    ``activation_alpha``/``activation_beta`` are consumed in order by the activations that take them.
    """
    per = len(defaults)
    if not names:
        names = defaults * num_directions
    names = [str(n).lower() for n in names]
    if len(names) == per and num_directions == 2:
        names = names * 2
    if len(names) != per * num_directions:
        raise InvalidArgument(
            f"activations: expected {per * num_directions} names for {num_directions} direction(s), "
            f"got {len(names)}: {names}"
        )
    alphas = list(alphas or [])
    betas = list(betas or [])
    ai = bi = 0
    fns = []
    for n in names:
        if n not in _ACTIVATION_PARAMS:
            raise InvalidArgument(f"unknown recurrent activation function {n!r}")
        uses_a, uses_b, a, b = _ACTIVATION_PARAMS[n]
        if uses_a and ai < len(alphas):
            a = alphas[ai]
            ai += 1
        if uses_b and bi < len(betas):
            b = betas[bi]
            bi += 1
        fns.append(_make_activation(n, a, b))
    return [fns[d * per : (d + 1) * per] for d in range(num_directions)]


def num_directions_of(direction: str) -> tuple[int, list[bool]]:
    """(num_directions, [reverse? per direction]). Accepts GRU-1's misspelt default 'foward'."""
    if direction in ("forward", "foward"):
        return 1, [False]
    if direction == "reverse":
        return 1, [True]
    if direction == "bidirectional":
        return 2, [False, True]
    raise InvalidArgument(f"direction must be forward, reverse or bidirectional, got {direction!r}")


def compute_dtype(x: np.ndarray) -> np.dtype:
    return np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)


class Prepared:
    """Inputs normalised to layout 0 and the compute dtype, plus sequence-length bookkeeping."""

    def __init__(
        self,
        op_name: str,
        X,
        W,
        R,
        sequence_lens,
        initial_states: list,
        hidden_size: int | None,
        direction: str,
        layout: int,
        gates: int,
    ):
        if X.ndim != 3:
            raise InvalidArgument(f"{op_name}: X must be 3-D, got shape {X.shape}")
        if W.ndim != 3 or R.ndim != 3:
            raise InvalidArgument(f"{op_name}: W and R must be 3-D, got {W.shape} and {R.shape}")
        self.out_dtype = X.dtype
        dt = compute_dtype(X)
        self.dtype = dt
        self.layout = layout
        if layout == 1:
            X = np.swapaxes(X, 0, 1)
        elif layout != 0:
            raise InvalidArgument(f"{op_name}: layout must be 0 or 1, got {layout}")
        self.D, self.reverse = num_directions_of(direction)
        T, B, _ = X.shape
        H = int(hidden_size) if hidden_size else R.shape[-1]
        if W.shape[0] != self.D or W.shape[1] != gates * H or W.shape[2] != X.shape[2]:
            raise InvalidArgument(
                f"{op_name}: W has shape {W.shape}, expected {(self.D, gates * H, X.shape[2])}"
            )
        if R.shape != (self.D, gates * H, H):
            raise InvalidArgument(f"{op_name}: R has shape {R.shape}, expected {(self.D, gates * H, H)}")
        self.T, self.B, self.H = T, B, H
        self.X = X.astype(dt, copy=False)
        self.W = W.astype(dt, copy=False)
        self.R = R.astype(dt, copy=False)
        self.initial = []
        for s in initial_states:
            if s is None:
                self.initial.append(np.zeros((self.D, B, H), dtype=dt))
                continue
            if layout == 1:
                s = np.swapaxes(s, 0, 1)
            if s.shape != (self.D, B, H):
                raise InvalidArgument(
                    f"{op_name}: initial state has shape {s.shape}, expected {(self.D, B, H)}"
                )
            self.initial.append(s.astype(dt, copy=False))
        self.lens = None
        if sequence_lens is not None:
            lens = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
            if lens.shape[0] != B:
                raise InvalidArgument(f"{op_name}: sequence_lens has {lens.shape[0]} entries, batch is {B}")
            if np.any(lens < 0) or np.any(lens > T):
                raise InvalidArgument(f"{op_name}: sequence_lens must lie in [0, {T}], got {lens.tolist()}")
            if not np.all(lens == T):
                self.lens = lens
        # mask[t] : (B, 1) bool, true where step t is valid
        self.mask = None
        self.rev_index = None
        if self.lens is not None:
            t = np.arange(T)[:, None]
            self.mask = (t < self.lens[None, :])[:, :, None]
            # per batch entry, reverse the valid prefix; padding stays in place (an involution)
            self.rev_index = np.where(t < self.lens[None, :], self.lens[None, :] - 1 - t, t)

    def direction_input(self, xw: np.ndarray, d: int) -> np.ndarray:
        """The (T, B, G*H) input projection in processing order for direction d."""
        if not self.reverse[d]:
            return xw
        if self.rev_index is None:
            return xw[::-1]
        return xw[self.rev_index, np.arange(self.B)[None, :]]

    def place_output(self, y: np.ndarray, d: int) -> np.ndarray:
        """Undo direction_input's reordering on a (T, B, H) output; zero the padding."""
        if self.mask is not None:
            y *= self.mask
        if not self.reverse[d]:
            return y
        if self.rev_index is None:
            return y[::-1]
        return y[self.rev_index, np.arange(self.B)[None, :]]

    def input_projection(self, d: int, bias: np.ndarray | None, threads: int = 1) -> np.ndarray:
        """X @ W[d]^T (+ bias) for all time steps at once: (T, B, G*H); split over ``threads`` threads
        (0: the session default) when BLAS runs single-threaded and the product is big enough."""
        T, B = self.T, self.B
        w_t = self.W[d].T
        xw = np.empty((T * B, w_t.shape[1]), dtype=self.dtype)
        kernels.input_projection(self.X.reshape(T * B, -1), w_t, xw, threads=threads)
        if bias is not None:
            xw += bias
        return xw.reshape(T, B, -1)

    def input_projections(self, biases: list[np.ndarray], threads: int = 1) -> list[np.ndarray]:
        """input_projection for every direction, in processing order (direction_input), from one
        product X @ [W[0]; W[1]]^T: one GEMM twice as wide instead of two."""
        if self.D == 1:
            return [self.direction_input(self.input_projection(0, biases[0], threads), 0)]
        T, B = self.T, self.B
        w_t = self.W.reshape(-1, self.W.shape[-1]).T  # (I, D*G*H), a view
        xw = np.empty((T * B, w_t.shape[1]), dtype=self.dtype)
        kernels.input_projection(self.X.reshape(T * B, -1), w_t, xw, threads=threads)
        xw += np.concatenate(biases)
        width = w_t.shape[1] // self.D
        return [
            self.direction_input(xw[:, d * width : (d + 1) * width].reshape(T, B, width), d)
            for d in range(self.D)
        ]

    def finish(self, Y: np.ndarray, finals: list[np.ndarray], num_outputs: int):
        """Pack (Y, Y_h[, Y_c]) in the right layout and dtype; Y: (T, D, B, H)."""
        if self.lens is not None and np.any(self.lens == 0):
            # as onnxruntime: an empty sequence reports zero final states, not its initial ones
            empty = (self.lens == 0)[None, :, None]
            finals = [np.where(empty, 0, f).astype(f.dtype, copy=False) for f in finals]
        outs = [Y, *finals]
        if self.layout == 1:
            outs = [np.ascontiguousarray(np.moveaxis(Y, 2, 0))] + [np.swapaxes(f, 0, 1) for f in finals]
        outs = [o.astype(self.out_dtype, copy=False) for o in outs]
        n = max(1, min(num_outputs, len(outs)))
        return tuple(outs[:n]) if n > 1 else outs[0]


def run_directions(run_direction, p: Prepared, threads: int) -> None:
    """``run_direction(d)`` for every direction, the two directions of a bidirectional layer on two
    threads where that pays (onyx.kernels.rnn.run_directions decides)."""
    kernels.run_directions(
        run_direction, p.D, rows=p.B, hidden=p.H, step_macs=p.B * p.R[0].size, threads=threads
    )


def session_threads(ctx) -> int:
    """The session's ``intra_op_num_threads`` (0: the default) for the kernels."""
    return ctx.intra_op_num_threads if ctx is not None else 0


def split_bias(B, D: int, gates: int, H: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(Wb, Rb) each (D, gates*H); zeros when B is absent."""
    if B is None:
        z = np.zeros((D, gates * H), dtype=dtype)
        return z, z
    if B.shape != (D, 2 * gates * H):
        raise InvalidArgument(f"B has shape {B.shape}, expected {(D, 2 * gates * H)}")
    B = B.astype(dtype, copy=False)
    return B[:, : gates * H], B[:, gates * H :]


def recurrent_shape_rule(gates: int, num_states: int):
    """A shape rule for RNN (gates=1), GRU (3) and LSTM (4): Y and the final states (Y_h[, Y_c]).

    layout 0: X [seq, batch, input], Y [seq, D, batch, H], Y_h/Y_c [D, batch, H];
    layout 1: X [batch, seq, input], Y [batch, seq, D, H], Y_h/Y_c [batch, D, H].
    hidden_size comes from the attribute, else from W ([D, gates*H, input]) or R ([D, gates*H, H]).
    """

    def rule(ctx) -> None:
        direction = ctx.attr("direction", "forward")
        if direction in ("forward", "foward", "reverse"):
            D = 1
        elif direction == "bidirectional":
            D = 2
        else:
            ctx.fail(f"direction must be forward, reverse or bidirectional, got {direction!r}")
        layout = int(ctx.attr("layout", 0) or 0) if ctx.opset >= 14 else 0
        if layout not in (0, 1):
            ctx.fail(f"layout must be 0 or 1, got {layout}")
        x, w, r = ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)
        for name, s, rank in (("X", x, 3), ("W", w, 3), ("R", r, 3)):
            if s is not None and len(s) != rank:
                ctx.fail(f"{name} must have rank {rank}, got shape {s}")
        H = ctx.attr("hidden_size", None)
        if H is None and r is not None:
            H = r[2]
        if H is None and w is not None and w[1] is not None:
            H = w[1] // gates if isinstance(w[1], int) else None
        for name, s in (("W", w), ("R", r)):
            if s is None:
                continue
            if isinstance(s[0], int) and s[0] != D:
                ctx.fail(f"{name} has {s[0]} directions but direction={direction!r} needs {D}, shape {s}")
            if isinstance(s[1], int) and isinstance(H, int) and s[1] != gates * H:
                ctx.fail(f"{name} dim 1 is {s[1]}, expected {gates}*hidden_size={gates * H}, shape {s}")
        if x is not None and w is not None:
            a, b = x[2], w[2]
            if isinstance(a, int) and isinstance(b, int) and a != b:
                ctx.fail(f"X has input size {a} but W has {b} (X {x}, W {w})")
        seq = batch = None
        if x is not None:
            seq, batch = (x[0], x[1]) if layout == 0 else (x[1], x[0])
        elem = ctx.input_elem(0)
        if layout == 0:
            y = [seq, D, batch, H]
            state = [D, batch, H]
        else:
            y = [batch, seq, D, H]
            state = [batch, D, H]
        ctx.set_output(0, elem, y)
        for k in range(num_states):
            ctx.set_output(1 + k, elem, state)

    return rule


#: the attributes every version of RNN, GRU and LSTM has, with the spec's defaults
COMMON_ATTRIBUTES: dict[str, Any] = {
    "activation_alpha": None,
    "activation_beta": None,
    "activations": None,
    "clip": None,
    "direction": "forward",
    "hidden_size": None,
}
#: (since, until, attributes added, attributes removed): output_sequence until version 7, layout from 14
VERSIONS: tuple = ((1, 7, {"output_sequence": 0}, ()), (7, 14, {}, ()), (14, None, {"layout": 0}, ()))


def register_recurrent(
    op_type: str,
    core: Callable[..., Any],
    *,
    inputs: Sequence[str],
    attributes: Mapping[str, Any],
    versions: Sequence[tuple] = VERSIONS,
    num_outputs: int,
    wants_ctx: bool = False,
    gates: int,
    num_states: int,
) -> None:
    """Register ``core(X, W, R, *optional inputs, **attributes, _num_outputs[, _ctx])`` for every
    version of a recurrent operator (attributes beyond COMMON_ATTRIBUTES; ``versions`` as VERSIONS),
    and its shape rule."""
    specials: dict[str, Any] = {"_num_outputs": num_outputs}
    if wants_ctx:
        specials["_ctx"] = None
    register_versions(
        op_type,
        core,
        inputs=("X", "W", "R", *inputs),
        required_inputs=3,
        attributes={**COMMON_ATTRIBUTES, **attributes},
        versions=versions,
        specials=specials,
    )
    shape_rule(op_type)(recurrent_shape_rule(gates=gates, num_states=num_states))
