"""The LSTM time loop (default activations sigmoid, tanh, tanh; no peepholes or sequence lengths).

The input projections of every step are computed before (one GEMM); what is left is, per step, the
recurrent product ``h @ R^T`` and the gates. The C loop (``_rnn.c``, float32, a few batch rows) does a
step in one pass and runs the directions of a bidirectional layer on their own threads; the numpy path
does a step in ten calls, its R product one GEMM over all batch rows (faster from about 8 rows).

The recurrent operators' other needs live here too, so that they never see threads: BLAS on one thread
while a layer runs (:func:`one_blas_thread`), the input projection split over onyx's threads
(:func:`input_projection`) and the two directions of a bidirectional layer on two threads
(:func:`run_directions`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np

from onyx.kernels import _loader, _threads
from onyx.kernels.blas_threads import one_thread
from onyx.kernels.parallel import matmul, parallel_for, pool_threads

#: batch rows up to which the C loop runs (the benchmark's LSTM at hidden 256: 8 rows 26.0 against
#: 32.0 ms for numpy's loop; 16 rows 108 against 82, where numpy's one GEMM over R for all rows wins)
COMPILED_MAX_BATCH = 8
#: multiply-adds of a direction's whole loop from which the C loop runs the directions on two threads
COMPILED_PARALLEL_MACS = 1 << 16
#: numpy's loop: batch x hidden, or multiply-adds of one step's R product, from which the directions
#: run on two threads (below, a step is many short numpy calls holding the GIL: two threads only take
#: turns). 7.2 -> 6.0 ms at hidden 256, 36 -> 21 ms at 512, but 4.2 -> 5.8 ms at 128.
NUMPY_PARALLEL_STEP = 1 << 14
NUMPY_PARALLEL_STEP_MACS = 1 << 18


def one_blas_thread() -> AbstractContextManager[None]:
    """BLAS on one thread for the duration (a context manager): a recurrent kernel's GEMMs are small
    (one time step) or split over onyx's own threads (the input projection), and BLAS's thread barriers
    cost more than they save on these sizes, far more on a busy machine. The previous count is restored."""
    return one_thread()


def input_projection(x: np.ndarray, w_t: np.ndarray, out: np.ndarray, *, threads: int = 1) -> None:
    """``out[...] = x @ w_t`` (all time steps' rows at once), split over up to ``threads`` of onyx's
    threads (0: the session default) when BLAS runs on one thread (:func:`one_blas_thread`) and the
    product is big enough."""
    matmul(x, w_t, out, pool_threads(threads))


def run_directions(
    run_direction: Callable[[int], None], directions: int, *, rows: int, hidden: int, step_macs: int,
    threads: int = 0,
) -> None:  # fmt: skip
    """``run_direction(d)`` for every direction of a layer whose numpy time loop runs ``rows`` batch rows
    of ``hidden`` units and an R product of ``step_macs`` multiply-adds a step: the two directions of a
    bidirectional layer are independent, and run on two of onyx's threads when ``threads`` (0: the
    session default) allows more than one and each step's R product (which releases the GIL) outweighs
    the short numpy calls around it (see NUMPY_PARALLEL_STEP)."""
    big = rows * hidden >= NUMPY_PARALLEL_STEP or step_macs >= NUMPY_PARALLEL_STEP_MACS
    parallel_for(run_direction, directions, pool_threads(threads) if directions > 1 and big else 1)


def lstm_sequence(
    xw: np.ndarray,
    r_t: np.ndarray,
    h: np.ndarray,
    c: np.ndarray,
    y: np.ndarray,
    *,
    clip: float | None,
    input_forget: bool,
    threads: int = 0,
) -> None:
    """Run the LSTM over every step of every direction, in place.

    ``xw`` (D, T, B, 4H): the input projections with both biases, in processing order, gates i, o, f, c;
    ``r_t`` (D, H, 4H): R transposed; ``h``, ``c`` (D, B, H): the initial state, left holding the final
    one; ``y`` (D, T, B, H) receives h of every step. Gates are clipped to +-``clip`` (None: no clip);
    ``input_forget`` couples f = 1 - i. All arrays of one float dtype; ``h``, ``c``, ``y`` C-contiguous.
    """
    dirs, steps, rows, width = xw.shape
    hidden = width // 4
    native = _loader.compiled("_rnn")
    if native is not None and xw.dtype == np.float32 and rows <= COMPILED_MAX_BATCH:
        big = dirs > 1 and steps * rows * width * hidden >= COMPILED_PARALLEL_MACS
        native.lstm_sequence(
            np.ascontiguousarray(xw),
            np.ascontiguousarray(r_t),
            h,
            c,
            y,
            float(clip) if clip is not None else -1.0,
            bool(input_forget),
            _threads.resolve(threads) if big else 1,
        )
        return
    big = rows * hidden >= NUMPY_PARALLEL_STEP or rows * width * hidden >= NUMPY_PARALLEL_STEP_MACS

    def run(d: int) -> None:
        _lstm_direction_numpy(xw[d], r_t[d], h[d], c[d], y[d], clip, input_forget)

    parallel_for(run, dirs, _threads.resolve(threads) if dirs > 1 and big else 1)


def _lstm_direction_numpy(xw, r_t, h, c, y, clip, input_forget) -> None:
    """One direction's loop in ten numpy calls a step: sigmoid(x) = 0.5 tanh(x / 2) + 0.5, so one tanh
    call serves all four gates (the halving is exact: a power of two). The same bits as the loop with
    separate sigmoid and tanh calls (onyx.ops.rnn.lstm)."""
    hidden = h.shape[-1]
    h3 = 3 * hidden
    half = y.dtype.type(0.5)
    gates = np.empty((h.shape[0], 4 * hidden), dtype=y.dtype)
    tmp = np.empty_like(h)
    sig = gates[:, :h3]
    i, o, fg, gc = gates[:, :hidden], gates[:, hidden : 2 * hidden], gates[:, 2 * hidden : h3], gates[:, h3:]
    prev = h
    for t in range(xw.shape[0]):
        np.matmul(prev, r_t, out=gates)
        gates += xw[t]
        if clip is not None:
            np.clip(gates, -clip, clip, out=gates)
        sig *= half
        np.tanh(gates, out=gates)
        sig *= half
        sig += half
        if input_forget:
            np.subtract(1, i, out=fg)
        c *= fg
        np.multiply(i, gc, out=tmp)
        c += tmp
        prev = y[t]
        np.tanh(c, out=prev)
        prev *= o
    if xw.shape[0]:
        h[...] = prev


def activation32(x: np.ndarray, which: str) -> np.ndarray | None:
    """The C loop's own float32 ``"sigmoid"`` or ``"tanh"`` of a 1-D array (for tests), or None when
    the module was not built."""
    native = _loader.compiled("_rnn")
    if native is None:
        return None
    out = np.empty(x.shape, np.float32)
    native.activation(np.asarray(x, np.float32), out, 1 if which == "tanh" else 0)
    return out
