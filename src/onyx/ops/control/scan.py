"""Scan: iterate a subgraph over slices of one or more tensors, carrying state between iterations.

Version 8 has a batch axis (0) and a sequence axis (1) and an optional ``sequence_lens`` input; version 9
onwards scans any axis of each input and accumulates each output along any axis, in either direction.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Graph
from onyx.ops.control._common import check_outputs, iterate_body, pack, set_info
from onyx.ops.registry import op, shape_rule


def _split_inputs(inputs, num_scan_inputs):
    if num_scan_inputs < 1 or num_scan_inputs > len(inputs):
        raise InvalidArgument(f"Scan: num_scan_inputs={num_scan_inputs} with {len(inputs)} inputs")
    n_state = len(inputs) - num_scan_inputs
    return list(inputs[:n_state]), [np.asarray(x) for x in inputs[n_state:]]


def _directions(values, count, what):
    if values is None:
        return [0] * count
    if len(values) != count:
        raise InvalidArgument(f"Scan: {what} has {len(values)} entries, expected {count}")
    for d in values:
        if d not in (0, 1):
            raise InvalidArgument(f"Scan: {what} entries must be 0 or 1, got {values}")
    return list(values)


def _axes(values, ranks, what):
    if values is None:
        return [0] * len(ranks)
    if len(values) != len(ranks):
        raise InvalidArgument(f"Scan: {what} has {len(values)} entries, expected {len(ranks)}")
    out = []
    for a, r in zip(values, ranks):
        if not -r <= a < r:
            raise InvalidArgument(f"Scan: {what} value {a} is out of range for rank {r}")
        out.append(a + r if a < 0 else a)
    return out


@op("Scan", since=9)
def scan_9(
    *initial_state_and_scan_inputs,
    body,
    num_scan_inputs,
    scan_input_axes=None,
    scan_output_axes=None,
    scan_input_directions=None,
    scan_output_directions=None,
):
    # Versions 11 to 25 allow negative axes and newer element types: same kernel.
    states, scans = _split_inputs(initial_state_and_scan_inputs, num_scan_inputs)
    n_state = len(states)
    n_out = body.num_outputs - n_state
    if n_out < 0:
        raise InvalidArgument(f"Scan: the body returns {body.num_outputs} values for {n_state} states")
    in_axes = _axes(scan_input_axes, [s.ndim for s in scans], "scan_input_axes")
    in_dirs = _directions(scan_input_directions, len(scans), "scan_input_directions")
    out_dirs = _directions(scan_output_directions, n_out, "scan_output_directions")
    views = [np.moveaxis(s, a, 0) for s, a in zip(scans, in_axes)]
    length = views[0].shape[0]
    for i, v in enumerate(views):
        if v.shape[0] != length:
            raise InvalidArgument(
                f"Scan: scan input {i} has {v.shape[0]} steps on its scan axis, scan input 0 has {length}"
            )
    collected: list[list] = [[] for _ in range(n_out)]
    for t in range(length):
        elems = [v[length - 1 - t] if d else v[t] for v, d in zip(views, in_dirs)]
        outs = body(*states, *elems)
        check_outputs(outs, n_state + n_out, "Scan")
        states = list(outs[:n_state])
        for j in range(n_out):
            collected[j].append(np.asarray(outs[n_state + j]))
    results = list(states)
    stacked = []
    for j, items in enumerate(collected):
        if out_dirs[j]:
            items = items[::-1]
        stacked.append(_stack(items, j))
    out_axes = _axes(scan_output_axes, [s.ndim for s in stacked], "scan_output_axes")
    results += [np.moveaxis(s, 0, a) if a else s for s, a in zip(stacked, out_axes)]
    return pack(results)


def _stack(items, j):
    if not items:
        return np.empty((0,), dtype=np.float32)
    shape = items[0].shape
    for t, x in enumerate(items):
        if x.shape != shape:
            raise InvalidArgument(
                f"Scan: scan output {j} has shape {x.shape} at step {t} and {shape} at step 0"
            )
    return np.stack(items)


@op("Scan", since=8, until=9)
def scan_8(sequence_lens=None, *initial_state_and_scan_inputs, body, num_scan_inputs, directions=None):
    states, scans = _split_inputs(initial_state_and_scan_inputs, num_scan_inputs)
    states = [np.asarray(s) for s in states]
    n_state = len(states)
    n_out = body.num_outputs - n_state
    if n_out < 0:
        raise InvalidArgument(f"Scan: the body returns {body.num_outputs} values for {n_state} states")
    dirs = _directions(directions, len(scans), "directions")
    for i, s in enumerate(scans):
        if s.ndim < 2:
            raise InvalidArgument(f"Scan-8: scan input {i} needs [batch, sequence, ...], got shape {s.shape}")
    batch, max_len = scans[0].shape[:2]
    for i, s in enumerate(scans + states):
        if s.ndim < 1 or s.shape[0] != batch:
            raise InvalidArgument(f"Scan-8: input {i} has shape {s.shape}, expected batch size {batch} first")
    for i, s in enumerate(scans):
        if s.shape[1] != max_len:
            raise InvalidArgument(
                f"Scan-8: scan input {i} has sequence length {s.shape[1]}, scan input 0 has {max_len}"
            )
    if sequence_lens is None:
        lens = np.full(batch, max_len, dtype=np.int64)
    else:
        lens = np.asarray(sequence_lens).reshape(-1).astype(np.int64)
        if lens.shape[0] != batch:
            raise InvalidArgument(f"Scan-8: sequence_lens has shape {lens.shape}, expected ({batch},)")
        if (lens < 0).any() or (lens > max_len).any():
            raise InvalidArgument(f"Scan-8: sequence_lens {lens.tolist()} must lie in [0, {max_len}]")
    final_states: list[list] = [[] for _ in range(n_state)]
    scan_outs: list[list] = [[] for _ in range(n_out)]
    for b in range(batch):
        st = [s[b] for s in states]
        n = int(lens[b])
        per_step: list[list] = [[] for _ in range(n_out)]
        for t in range(n):
            elems = [s[b, n - 1 - t] if d else s[b, t] for s, d in zip(scans, dirs)]
            outs = body(*st, *elems)
            check_outputs(outs, n_state + n_out, "Scan")
            st = list(outs[:n_state])
            for j in range(n_out):
                per_step[j].append(np.asarray(outs[n_state + j]))
        for k in range(n_state):
            final_states[k].append(np.asarray(st[k]))
        for j in range(n_out):
            scan_outs[j].append(per_step[j])
    results = [np.stack(f) for f in final_states]
    for j in range(n_out):
        results.append(_pad_batch(scan_outs[j], max_len, j))
    return pack(results)


def _pad_batch(per_batch, max_len, j):
    """[batch][steps] lists of equal-shape tensors -> [batch, max_len, ...], zero-padded."""
    sample = next((x for steps in per_batch for x in steps), None)
    if sample is None:
        return np.zeros((len(per_batch), max_len), dtype=np.float32)
    out = np.zeros((len(per_batch), max_len) + sample.shape, dtype=sample.dtype)
    for b, steps in enumerate(per_batch):
        if steps:
            out[b, : len(steps)] = _stack(steps, j)
    return out


def _norm_axes(ctx, values, ranks, what):
    """Axes normalised with each rank (None where the rank is unknown)."""
    values = list(values) if values is not None else [0] * len(ranks)
    if len(values) != len(ranks):
        ctx.fail(f"{what} has {len(values)} entries, expected {len(ranks)}")
    out = []
    for a, r in zip(values, ranks):
        if r is not None and not -r <= a < r:
            ctx.fail(f"{what} value {a} is out of range for rank {r}")
        out.append(None if r is None and a < 0 else (a + r if a < 0 else a))
    return out


@shape_rule("Scan")
def _scan_shape(ctx) -> None:
    """States keep their types (dims the body changes become fresh symbols). Scan-9+: each scan output
    is the body's output stacked on scan_output_axes, the number of steps being scan input 0's dim on
    its scan axis. Scan-8: [batch, ...] states and [batch, sequence, ...] scan outputs."""
    body = ctx.attr("body")
    if not isinstance(body, Graph):
        return
    k = int(ctx.attr("num_scan_inputs"))
    first = 1 if ctx.opset < 9 else 0
    inputs = [ctx.input_info(i) for i in range(first, ctx.num_inputs)]
    if not 1 <= k <= len(inputs):
        ctx.fail(f"num_scan_inputs={k} with {len(inputs)} inputs")
    n_state = len(inputs) - k
    states, scans = inputs[:n_state], inputs[n_state:]
    shapes = [None if s is None else s.dims for s in scans]
    if ctx.opset < 9:
        batch = next((s[0] for s in shapes if s is not None and len(s) >= 2), None)
        length = next((s[1] for s in shapes if s is not None and len(s) >= 2), None)
        states_in = [_drop(x, [0]) for x in states]
        slices = [_drop(x, [0, 1]) for x in scans]
    else:
        ranks = [None if s is None else len(s) for s in shapes]
        axes = _norm_axes(ctx, ctx.attr("scan_input_axes"), ranks, "scan_input_axes")
        length = next((s[a] for s, a in zip(shapes, axes) if s is not None and a is not None), None)
        states_in = states
        slices = [_drop(x, [a]) for x, a in zip(scans, axes)]
    merged, outs = iterate_body(ctx, body, [], states_in, "Scan", tail=slices)
    if ctx.opset < 9:
        merged = [_prepend(x, batch) for x in merged]
    for i, info in enumerate(merged):
        set_info(ctx, i, info)
    if ctx.opset >= 9:
        ranks = [None if o.dims is None else len(o.dims) + 1 for o in outs]
        out_axes = _norm_axes(ctx, ctx.attr("scan_output_axes"), ranks, "scan_output_axes")
    for j, info in enumerate(outs):
        if info.dims is None:
            ctx.set_output(n_state + j, info.elem, None)
            continue
        if ctx.opset < 9:
            dims = [batch, length, *info.dims]
        else:
            dims = [length, *info.dims]
            a = out_axes[j]
            dims = dims[1 : a + 1] + [length] + dims[a + 1 :]
        ctx.set_output(n_state + j, info.elem, dims)


def _drop(info, axes):
    from onyx.shape_inference import Info

    if info is None or info.dims is None or any(a is None or a >= len(info.dims) for a in axes):
        return Info(None, None if info is None else info.elem, None)
    return Info(None, info.elem, [d for i, d in enumerate(info.dims) if i not in axes])


def _prepend(info, d):
    from onyx.shape_inference import Info

    if info.type is not None and not _tensor(info):
        return info
    return Info(None, info.elem, None if info.dims is None else [d, *info.dims])


def _tensor(info) -> bool:
    from onyx.ir.types import TensorType

    return info.type is None or isinstance(info.type, TensorType)
