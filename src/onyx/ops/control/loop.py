"""Loop: a generic loop with an optional trip count and an optional termination condition.

The body takes ``(iteration_num, cond, carried...)`` and returns ``(cond, carried..., scan outputs...)``.
Loop-carried values may be tensors, sequences (lists) or optionals (None when empty); scan outputs are
tensors stacked along a new leading axis.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.ir.model import Graph
from onyx.ops.control._common import (
    body_input,
    check_outputs,
    iterate_body,
    pack,
    scalar_bool,
    scalar_int,
    set_info,
    stack,
    tensor_info,
)
from onyx.ops.registry import op, shape_rule


@op("Loop", since=1)
def loop(M=None, cond=None, *v_initial, body, _num_outputs=None):
    # Versions 11 to 25 only widen the types that may be carried (sequences from 13, optionals from
    # 16, newer element types later): one kernel serves them all.
    n_carried = body.num_inputs - 2
    if n_carried < 0:
        raise InvalidArgument(f"Loop: the body takes {body.num_inputs} inputs, needs at least 2")
    carried = list(v_initial)
    if len(carried) > n_carried:
        raise InvalidArgument(
            f"Loop: {len(carried)} loop-carried inputs, the body takes {n_carried} after (iteration, cond)"
        )
    # A trailing empty optional carried value may arrive as a missing input: it is None either way.
    carried += [None] * (n_carried - len(carried))
    n_scan = body.num_outputs - 1 - n_carried
    if n_scan < 0:
        raise InvalidArgument(
            f"Loop: the body returns {body.num_outputs} values, needs at least {1 + n_carried} "
            "(cond and the loop-carried values)"
        )
    trip = scalar_int(M, "Loop: M (trip count)") if M is not None else None
    keep_going = scalar_bool(cond, "Loop: cond") if cond is not None else True
    cond_value = np.array(keep_going)
    scans: list[list] = [[] for _ in range(n_scan)]
    i = 0
    while keep_going and (trip is None or i < trip):
        outs = body(np.array(i, dtype=np.int64), cond_value, *carried)
        check_outputs(outs, 1 + n_carried + n_scan, "Loop")
        cond_value = outs[0]
        keep_going = scalar_bool(cond_value, "Loop: the body's cond output")
        carried = list(outs[1 : 1 + n_carried])
        for j in range(n_scan):
            scans[j].append(outs[1 + n_carried + j])
        i += 1
    declared = getattr(body, "output_types", None) or [None] * body.num_outputs
    results = carried + [
        stack(s, f"Loop scan output {j}", declared[1 + n_carried + j]) for j, s in enumerate(scans)
    ]
    if _num_outputs is not None and _num_outputs < len(results):
        results = results[:_num_outputs]
    return pack(results)


_BIG = 1 << 62  # exporters write INT64_MAX as the trip count of a while loop


def _never_stops_early(ctx, body: Graph, cond_out) -> bool:
    """True when the loop runs all M iterations: the body's cond output is a constant true, or its
    cond input passed through with the initial cond absent or known true. (The body's cond output
    is honoured even without a cond input, as onnxruntime does.)"""
    v = None if cond_out is None else cond_out.value
    if v is not None and np.asarray(v).dtype != object and np.asarray(v).size == 1:
        return bool(np.asarray(v).reshape(-1)[0])
    out = body.outputs[0]
    while out.producer is not None and out.producer.op_type == "Identity":
        out = out.producer.inputs[0]
    if out is not body.inputs[1]:
        return False
    if not ctx.has_input(1):
        return True
    init = ctx.input_value(1)
    return init is not None and np.asarray(init).dtype != object and bool(np.asarray(init).reshape(-1)[0])


@shape_rule("Loop")
def _loop_shape(ctx) -> None:
    """Loop-carried values keep their types (dims the body changes become fresh symbols); scan
    outputs get a leading dim: the trip count M when known and the loop cannot stop early, 0 when
    the initial cond is known false, else a fresh symbol."""
    body = ctx.attr("body")
    if not isinstance(body, Graph):
        return
    n_carried = len(body.inputs) - 2
    if n_carried < 0:
        ctx.fail(f"the body takes {len(body.inputs)} inputs, needs at least 2")
    given = ctx.num_inputs - 2
    if given > n_carried:
        ctx.fail(f"{given} loop-carried inputs, the body takes {n_carried} after (iteration, cond)")
    carried = [ctx.input_info(2 + k) if 2 + k < ctx.num_inputs else None for k in range(n_carried)]
    fixed = [tensor_info(int(DataType.INT64), []), tensor_info(int(DataType.BOOL), [])]
    pre = [x if x is not None else body_input(None) for x in carried]
    merged, rest = iterate_body(ctx, body, fixed, pre, "Loop", at=1)
    cond_out, scans = rest[0], rest[1:]
    count = None
    m = ctx.input_ints(0) if ctx.has_input(0) else None
    init = ctx.input_value(1) if ctx.has_input(1) else None
    if init is not None and np.asarray(init).dtype != object and not bool(np.asarray(init).reshape(-1)[0]):
        count = 0
    elif m is not None and len(m) == 1 and (not isinstance(m[0], int) or m[0] < _BIG):
        if _never_stops_early(ctx, body, cond_out):
            count = m[0]
    for k, info in enumerate(merged):
        set_info(ctx, k, info)
    for j, info in enumerate(scans):
        if not _is_tensor_info(info):
            continue
        lead = count if count is not None else ctx.new_dim()
        ctx.set_output(n_carried + j, info.elem, None if info.dims is None else [lead, *info.dims])


def _is_tensor_info(info) -> bool:
    from onyx.ir.types import TensorType

    return info is not None and (info.type is None or isinstance(info.type, TensorType))
