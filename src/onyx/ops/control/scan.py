"""Scan: iterate a subgraph over slices of one or more tensors, carrying state between iterations.

Version 8 has a batch axis (0) and a sequence axis (1) and an optional ``sequence_lens`` input; version 9
onwards scans any axis of each input and accumulates each output along any axis, in either direction.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.control._common import check_outputs, pack
from onyx.ops.registry import op


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
