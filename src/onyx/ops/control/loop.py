"""Loop: a generic loop with an optional trip count and an optional termination condition.

The body takes ``(iteration_num, cond, carried...)`` and returns ``(cond, carried..., scan outputs...)``.
Loop-carried values may be tensors, sequences (lists) or optionals (None when empty); scan outputs are
tensors stacked along a new leading axis.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.control._common import check_outputs, pack, scalar_bool, scalar_int, stack
from onyx.ops.registry import op


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
