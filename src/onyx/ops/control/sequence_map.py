"""SequenceMap: apply a subgraph to every element of one or more sequences."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ops.control._common import check_outputs, pack
from onyx.ops.registry import op


@op("SequenceMap", since=17)
def sequence_map(input_sequence, *additional_inputs, body):
    if not isinstance(input_sequence, list):
        raise InvalidArgument(f"SequenceMap: input_sequence must be a sequence, got {type(input_sequence)}")
    n = len(input_sequence)
    for k, extra in enumerate(additional_inputs):
        if isinstance(extra, list) and len(extra) != n:
            raise InvalidArgument(
                f"SequenceMap: additional input {k} is a sequence of length {len(extra)}, "
                f"input_sequence has length {n}"
            )
    n_out = body.num_outputs
    results: list[list] = [[] for _ in range(n_out)]
    for i in range(n):
        args = [input_sequence[i]] + [a[i] if isinstance(a, list) else a for a in additional_inputs]
        outs = body(*args)
        check_outputs(outs, n_out, "SequenceMap")
        for j in range(n_out):
            results[j].append(outs[j])
    return pack(results)
