"""SequenceMap: apply a subgraph to every element of one or more sequences."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ir.model import Graph
from onyx.ir.types import SequenceType, TensorType
from onyx.ops.control._common import body_input, check_outputs, pack
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import Info, info_from_type, type_of


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


@shape_rule("SequenceMap")
def _sequence_map_shape(ctx) -> None:
    """Each output is a sequence of the body's matching output type; the body sees one element of
    each sequence input and the tensor inputs whole."""
    body = ctx.attr("body")
    if not isinstance(body, Graph):
        return
    ins = []
    for i in range(ctx.num_inputs):
        t = ctx.input_type(i)
        if isinstance(t, SequenceType):
            ins.append(info_from_type(t.elem))
        elif i == 0 and t is not None and not isinstance(t, TensorType):
            ctx.fail(f"input_sequence must be a sequence, got {t}")
        else:
            ins.append(body_input(ctx.input_info(i)) if i else Info())
    outs = ctx.infer_subgraph(body, ins)
    for j, info in enumerate(outs):
        ctx.set_output_type(j, SequenceType(type_of(info)))
