"""Convert a model between opsets of the default ONNX domain, up or down.

``convert_version(model, 18)`` returns a new model (the input is left as it was) whose default-domain
nodes are written in the operator versions of opset 18: attributes that became inputs (and back),
semantics that changed (Softmax's axis at 13, Resize's modes, broadcasting at 7 and 8), operators that
appeared or were deprecated (LayerNormalization, Gelu, GroupNormalization, Upsample) replaced by
equivalents. A node that cannot be converted raises NotImplemented naming it and why. The walk itself is
in ``_core``; each family of rewrites is one module here.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from onyx.checker import min_ir_version
from onyx.errors import InvalidArgument, OnyxError
from onyx.ir.model import Model
from onyx.ir.types import TypeBase
from onyx.version_converter import (  # noqa: F401 - importing registers the adapters
    activations,
    attention,
    attributes_to_inputs,
    axes,
    broadcasting,
    misc,
    normalization,
    quantize,
    resize,
    rotary,
    softmax,
)
from onyx.version_converter._core import DEFAULT_DOMAINS, Converter, all_graphs, check_target

__all__ = ["convert_version", "convert", "Conversion"]


@dataclass
class Conversion:
    """A converted model and what changed: nodes adapted per operator type."""

    model: Model
    source: int
    target: int
    adapted: collections.Counter[str]


def convert_version(model: Model, target_version: int) -> Model:
    """``model`` rewritten for opset ``target_version`` of the default domain (a new Model)."""
    return convert(model, target_version).model


def convert(model: Model, target_version: int) -> Conversion:
    """Like :func:`convert_version`, also reporting the nodes adapted per operator type."""
    if not isinstance(model, Model):
        raise InvalidArgument(f"convert_version expects an onyx Model, got {type(model).__name__}")
    target = check_target(target_version)
    source = model.opsets.get("")
    if source is None:
        source = target  # no default-domain import: nothing to convert, only the import to add
    elif source < 1:
        raise InvalidArgument(f"the model imports the default domain at opset {source}")
    new = model.clone()
    cx = Converter(new, source, target, _inferred_types(model))
    cx.convert_graph(new.graph, source, target)
    for f in new.functions:
        fsource = f.opsets().get("")
        if fsource is not None and fsource != target:
            cx.convert_graph(f.graph, fsource, target)
            f.opset_imports = [(d, target if _default(d) else v) for d, v in f.opset_imports]
    cx.check_types(new.graph, target)
    for f in new.functions:
        cx.check_types(f.graph, target)
    cx.sweep()
    imports = [(d, v) for d, v in new.opset_imports if not _default(d)]
    new.opset_imports = [("", target), *imports]
    new.ir_version = _ir_version(new, target)
    return Conversion(new, source, target, cx.adapted)


def _default(domain: str | None) -> bool:
    return domain in DEFAULT_DOMAINS


def _ir_version(model: Model, opset: int) -> int:
    """The IR version of the release that introduced ``opset``, raised where the model needs more:
    initializers that are not graph inputs need IR 4, model-local functions IR 8."""
    ir = min_ir_version(opset)
    inputs = {v.name for v in model.graph.inputs}
    if any(name not in inputs for name in model.graph.initializers):
        ir = max(ir, 4)
    if model.functions:
        ir = max(ir, 8)
    return ir


def _inferred_types(model: Model) -> dict[str, TypeBase]:
    """Types (element types and shapes) of every value, from onyx's shape inference on a copy."""
    from onyx.shape_inference import infer_shapes

    copy = model.clone()
    try:
        infer_shapes(copy)
    except OnyxError:
        pass  # what could not be inferred stays unknown; conversions that need it will say so
    out: dict[str, TypeBase] = {}
    for g in all_graphs(copy):
        for v in [*g.inputs, *g.initializers.values(), *g.value_info, *g.outputs]:
            if v.type is not None and v.name:
                out.setdefault(v.name, v.type)
        for n in g.nodes:
            for v in n.outputs:
                if v.type is not None and v.name:
                    out.setdefault(v.name, v.type)
    return out
