"""Constant folding: a node whose inputs are all constants becomes initializers computed by its kernel.

Constant nodes become initializers too. Skipped: operators declared impure (``@op(..., pure=False)``:
random generators, Dropout), nodes with subgraphs, calls of
model-local functions, nodes whose attributes refer to a function's attributes, and nodes whose
outputs would be larger than ``SIZE_LIMIT`` elements unless their inputs were larger (a model must not
grow because ``ConstantOfShape`` or ``Expand`` was folded). Output sizes of the operators that create
big tensors from small inputs are estimated before running them, and every kernel run here allocates
under ``runtime.limits.bounded_folding`` (no single array past 64 MB) for the sizes no estimate knows.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.ir.model import Model, Node
from onyx.optimizer._util import (
    Scope,
    fold_node,
    has_attr_refs,
    has_subgraphs,
    is_op,
    replace_nodes,
    run_kernel,
)
from onyx.runtime.limits import bounded_folding

SIZE_LIMIT = 1 << 20  # elements

# operators whose output may be much bigger than their inputs and whose size we cannot estimate
_UNESTIMATED = frozenset(
    {
        "Resize", "Upsample", "ConvTranspose", "Col2Im", "MaxUnpool", "DFT", "STFT", "CenterCropPad",
        "Einsum", "GatherND", "Conv", "ConvInteger", "DeformConv", "Unique", "NonZero", "StringSplit",
        "TfIdfVectorizer", "AffineGrid", "GridSample", "LpPool", "MaxPool", "AveragePool",
        "ImageDecoder",
    }
)  # fmt: skip
_SMALL_INPUTS = 4096  # an unestimated operator is folded only when its inputs are this small
_NEVER = frozenset({"Loop", "If", "Scan", "SequenceMap"})
# left for the QDQ fusions of the extended level to find (onnxruntime's constant folding skips them too)
_NEVER |= {"DequantizeLinear"}


def _prod(xs) -> int:
    return int(math.prod(int(x) for x in xs))


def estimate_output_elements(node: Node, args: list) -> int | None:
    """An upper bound of the output elements for operators that may blow up; None when unknown
    (also shape inference's guard before it folds a node)."""
    op = node.op_type
    try:
        if op == "ConstantOfShape":
            return _prod(np.asarray(args[0]).reshape(-1))
        if op == "Expand":
            return _prod(
                np.broadcast_shapes(np.shape(args[0]), tuple(int(d) for d in np.asarray(args[1]).reshape(-1)))
            )
        if op == "Tile":
            return int(np.size(args[0])) * _prod(np.asarray(args[1]).reshape(-1))
        if op == "Range":
            start, limit, delta = (float(np.asarray(a).reshape(())) for a in args[:3])
            return max(0, math.ceil((limit - start) / delta)) if delta else None
        if op == "OneHot":
            return int(np.size(args[0])) * int(abs(float(np.asarray(args[1]).reshape(-1)[0])))
        if op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
            return int(np.asarray(args[0]).reshape(()))
        if op == "MelWeightMatrix":
            return int(np.asarray(args[0]).reshape(())) * (int(np.asarray(args[1]).reshape(())) // 2 + 1)
        if op == "EyeLike":
            return int(np.size(args[0]))
        if op == "Pad":
            x = np.asarray(args[0])
            pads = (
                args[1] if len(args) > 1 and args[1] is not None else node.attr("pads", node.attr("paddings"))
            )
            pads = [int(p) for p in np.asarray(pads).reshape(-1)] if pads is not None else None
            if pads is None or len(pads) != 2 * x.ndim or (len(args) > 3 and args[3] is not None):
                return None
            r = x.ndim
            return _prod(max(0, x.shape[i] + pads[i] + pads[i + r]) for i in range(r))
        if op in ("MatMul", "MatMulInteger", "Gemm"):
            a, b = np.shape(args[0]), np.shape(args[1])
            if op == "Gemm":
                return max(a) * max(b) if a and b else None
            if len(a) < 1 or len(b) < 1:
                return None
            batch = np.broadcast_shapes(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
            m = a[-2] if len(a) > 1 else 1
            n = b[-1] if len(b) > 1 else 1
            return _prod(batch) * m * n
        if op in ("Gather", "GatherElements"):
            data, idx = np.shape(args[0]), np.size(args[1])
            if op == "GatherElements":
                return int(idx)
            axis = int(node.attr("axis", 0))
            axis = axis + len(data) if axis < 0 else axis
            if not 0 <= axis < len(data):
                return None
            return int(idx) * (_prod(data) // max(1, data[axis]) if data[axis] else 0)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None
    arrays = [a for a in args if isinstance(a, np.ndarray | np.generic)]
    if len(arrays) >= 2:
        try:
            return _prod(np.broadcast_shapes(*(np.shape(a) for a in arrays)))
        except ValueError:
            pass
    if op in _UNESTIMATED:
        return None
    return max((int(np.size(a)) for a in arrays), default=1)


def fold_constants(model: Model) -> bool:
    """Replace nodes whose inputs are all constants by initializers; returns whether any was."""
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        g = entry.graph
        replaced: dict[int, list[Node]] = {}
        for node in list(g.nodes):
            if is_op(node, "Constant") and (
                sc.is_function_body(g) or any(sc.is_graph_output(v) for v in node.outputs)
            ):
                continue  # graph outputs and function bodies keep their Constant nodes
            if (
                node.op_type in _NEVER
                or not entry.pure(node)
                or has_subgraphs(node)
                or has_attr_refs(node)
                or sc.is_function_call(node)
            ):
                continue
            if not node.outputs or not any(sc.is_used(v) for v in node.outputs):
                continue  # dead: the dead-code pass removes it, folding would only cost time
            args = []
            ok = True
            for v in node.inputs:
                if v is None:
                    args.append(None)
                    continue
                c = sc.const_value(v)
                if c is None:
                    ok = False
                    break
                args.append(c)
            if not ok:
                continue
            if not is_op(node, "Constant") and not any(a is not None for a in args):
                continue  # no inputs: generators other than Constant are left to run time
            in_size = sum(int(np.size(a)) for a in args if a is not None)
            est = estimate_output_elements(node, args)
            if est is None:
                if in_size > _SMALL_INPUTS:
                    continue
            elif est > SIZE_LIMIT and est > in_size:
                continue
            with bounded_folding():  # what the estimate misses (Resize, Conv...) fails at its allocation
                res = run_kernel(node, args, entry.opset(node.domain))
            if res is None or len(res) < len(node.outputs):
                continue
            arrays = [np.asarray(r) if isinstance(r, np.generic) else r for r in res[: len(node.outputs)]]
            if not all(
                isinstance(r, np.ndarray) or not (v.name and sc.is_used(v))
                for v, r in zip(node.outputs, arrays)
            ):
                continue  # a sequence, map or empty optional cannot be an initializer
            if any(isinstance(r, np.ndarray) and r.size > SIZE_LIMIT and r.size > in_size for r in arrays):
                continue
            keep = {i: r for i, (v, r) in enumerate(zip(node.outputs, arrays)) if v.name and sc.is_used(v)}
            replaced[id(node)] = fold_node(sc, g, node, keep)
            changed = True
        replace_nodes(g, replaced)
    return changed
