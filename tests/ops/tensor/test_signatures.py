"""Every schema version of our operators resolves to a kernel that declares the schema's attributes
and takes its inputs (a check against the onnx.defs schemas, so that no legacy attribute is missed)."""

from __future__ import annotations

import onnx.defs
import pytest

from onyx.ops import registry

TENSOR_OPS = (
    "Cast CastLike Compress Concat Constant ConstantOfShape DepthToSpace SpaceToDepth Expand EyeLike "
    "Flatten Gather GatherElements GatherND Identity NonZero OneHot Pad Range Reshape ReverseSequence "
    "Scatter ScatterElements ScatterND TensorScatter Shape Size Slice Split Squeeze Unsqueeze Tile TopK "
    "Transpose Trilu Unique CenterCropPad"
).split()
REDUCE_OPS = (
    "ArgMax ArgMin ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin "
    "ReduceProd ReduceSum ReduceSumSquare"
).split()


def _schemas():
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "" and s.name in TENSOR_OPS + REDUCE_OPS:
            yield pytest.param(s, id=f"{s.name}-{s.since_version}")


@pytest.mark.parametrize("schema", list(_schemas()))
def test_kernel_matches_schema(schema):
    k = registry.lookup(schema.name, "", schema.since_version)
    missing = set(schema.attributes) - set(k.attributes)
    assert not missing, f"{schema.name}-{schema.since_version}: undeclared attributes {missing}"
    required = {n for n, a in schema.attributes.items() if a.required}
    assert required <= set(k.required_attributes()) | {"value"}  # Constant-1's value is required
    n_inputs = len(schema.inputs)
    variadic = any(i.option == onnx.defs.OpSchema.FormalParameterOption.Variadic for i in schema.inputs)
    assert k.variadic == variadic
    if not variadic:
        assert len(k.inputs) == n_inputs, (k.inputs, [i.name for i in schema.inputs])
        n_required = sum(i.option == onnx.defs.OpSchema.FormalParameterOption.Single for i in schema.inputs)
        assert k.min_inputs == n_required, (k.min_inputs, n_required)
