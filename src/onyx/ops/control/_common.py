"""Helpers shared by the control-flow kernels (If, Loop, Scan, SequenceMap)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument


def pack(outputs: list[Any] | tuple[Any, ...]) -> Any:
    """A kernel's return value from a list of outputs: the value itself for one, a tuple for several.

    A single output that is a sequence (a Python list) or an empty optional (None) is returned as is.
    """
    outputs = tuple(outputs)
    if len(outputs) == 1:
        return outputs[0]
    return outputs


def scalar_bool(value: Any, what: str) -> bool:
    """The truth value of a one-element tensor (a condition)."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must hold exactly one element, got shape {arr.shape}")
    return bool(arr.reshape(-1)[0])


def scalar_int(value: Any, what: str) -> int:
    """The integer value of a one-element tensor (a trip count, a length)."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must hold exactly one element, got shape {arr.shape}")
    return int(arr.reshape(-1)[0])


def stack(values: list[Any], what: str, declared: Any = None) -> np.ndarray:
    """Stack per-iteration scan outputs on a new leading axis, naming the output on a shape mismatch.

    With no iteration at all the element type and shape come from the body output's declared type
    (``declared``, an onyx TensorType) where it has them: (0, *dims) with unknown dims as 0; else an
    empty float32 tensor of shape (0,).
    """
    if not values:
        return empty_scan(declared)
    arrays = [np.asarray(v) for v in values]
    first = arrays[0]
    for i, a in enumerate(arrays):
        if a.shape != first.shape:
            raise InvalidArgument(
                f"{what}: iteration {i} produced shape {a.shape}, iteration 0 produced {first.shape}; "
                "scan outputs must keep one shape across iterations"
            )
    return np.stack(arrays)


def empty_scan(declared: Any) -> np.ndarray:
    """The stacked result of zero iterations for a body output of type ``declared``."""
    elem = getattr(declared, "elem_type", None)
    shape = getattr(declared, "shape", None)
    dtype = np.float32
    if elem:
        from onyx.ir.dtypes import to_numpy

        try:
            dtype = to_numpy(elem)
        except Exception:  # noqa: BLE001 - an unknown code keeps the float32 default
            dtype = np.float32
    dims = (0,)
    if shape is not None:
        dims = (0, *[d if isinstance(d, int) else 0 for d in shape.dims])
    return np.empty(dims, dtype=dtype)


def check_outputs(outs: list[Any], expected: int, what: str) -> None:
    if len(outs) != expected:
        raise InvalidArgument(f"{what}: the body returned {len(outs)} values, expected {expected}")


# -- shape-rule helpers ------------------------------------------------------------------------


def body_input(info):
    """What a body sees of an outer value: its type and dims, never its value (it changes per
    iteration, and a branch may not run)."""
    from onyx.shape_inference import Info

    if info is None:
        return Info()
    return Info(info.type, info.elem, None if info.dims is None else list(info.dims))


def tensor_info(elem, dims):
    from onyx.shape_inference import Info

    return Info(None, elem, dims)


def _is_tensor(info) -> bool:
    from onyx.ir.types import TensorType

    return info.type is None or isinstance(info.type, TensorType)


def merge_types(a, b):
    """The most specific type covering both: equal parts stay, differing parts become unknown."""
    from onyx.ir.types import OptionalType, SequenceType, Shape, TensorType

    if a is None or b is None:
        # a value's type may not change between iterations or branches: the known side's element
        # types hold for both (its shapes do not)
        return _type_only(b if a is None else a)
    if a == b:
        return a
    if isinstance(a, OptionalType) != isinstance(b, OptionalType):
        # Loop-16 carries optional(seq) in and seq out: the optional stands for its contents
        a, b = (a.elem, b) if isinstance(a, OptionalType) else (a, b.elem)
        return merge_types(a, b)
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        elem = a.elem_type if a.elem_type == b.elem_type else None
        shape = None
        if a.shape is not None and b.shape is not None and len(a.shape) == len(b.shape):
            shape = Shape([x if x == y else None for x, y in zip(a.shape.dims, b.shape.dims)])
        return TensorType(elem, shape)
    if isinstance(a, SequenceType) and isinstance(b, SequenceType):
        return SequenceType(merge_types(a.elem, b.elem))
    if isinstance(a, OptionalType) and isinstance(b, OptionalType):
        return OptionalType(merge_types(a.elem, b.elem))
    return None


def _type_only(t):
    """``t`` with its shapes forgotten (element types kept)."""
    from onyx.ir.types import OptionalType, SequenceType, TensorType

    if isinstance(t, TensorType):
        return TensorType(t.elem_type or None, None)
    if isinstance(t, SequenceType):
        return SequenceType(_type_only(t.elem))
    if isinstance(t, OptionalType):
        return OptionalType(_type_only(t.elem))
    return t


def merge_infos(ctx, a, b, what: str):
    """Merge two infos of one value (If's branches, a loop-carried value before and after the body):
    equal dims stay, differing dims become fresh symbols, differing ranks an unknown rank; element
    types must agree."""
    from onyx.shape_inference import Info, type_of

    if a is None or b is None:
        return Info()
    if _is_tensor(a) and _is_tensor(b):
        if a.elem is not None and b.elem is not None and a.elem != b.elem:
            ctx.fail(f"{what}: element types {a.elem} and {b.elem} differ")
        elem = a.elem if a.elem is not None else b.elem
        dims = None
        if a.dims is not None and b.dims is not None and len(a.dims) == len(b.dims):
            dims = [x if x is not None and x == y else ctx.new_dim() for x, y in zip(a.dims, b.dims)]
        return Info(None, elem, dims)
    return Info(merge_types(type_of(a), type_of(b)))


def set_info(ctx, i: int, info) -> None:
    """Output ``i`` takes what ``info`` says (tensor elem/dims, or a sequence/optional/map type)."""
    if info is None:
        return
    if _is_tensor(info):
        if info.elem is not None or info.dims is not None:
            ctx.set_output(i, info.elem, info.dims)
    else:
        ctx.set_output_type(i, info.type)


def differs(a, b) -> bool:
    from onyx.shape_inference import type_of

    if _is_tensor(a) and _is_tensor(b):
        return a.elem != b.elem or a.dims != b.dims
    return type_of(a) != type_of(b)


def iterate_body(
    ctx, body, fixed: list, carried: list, what: str, at: int = 0, tail: list | None = None
) -> tuple[list, list]:
    """Infer ``body`` with inputs ``fixed + carried + tail``, its outputs holding the carried values
    from index ``at``; loop-carried values that the body changes are generalised (merge_infos) and
    the body inferred once more. Returns (carried infos after the loop, the body's other outputs)."""
    n = len(carried)
    tail = [body_input(x) for x in tail or []]

    def run(ins):
        outs = ctx.infer_subgraph(body, fixed + [body_input(x) for x in ins] + tail)
        if len(outs) < at + n:
            ctx.fail(f"{what}: the body returns {len(outs)} values, needs at least {at + n}")
        new = outs[at : at + n]
        merged = [
            merge_infos(ctx, a, b, f"{what} loop-carried value {k}") for k, (a, b) in enumerate(zip(ins, new))
        ]
        return outs, new, merged

    ins = [body_input(x) for x in carried]
    outs, new, merged = run(ins)
    if any(differs(a, b) for a, b in zip(ins, new)):
        outs, new, merged = run(merged)
    return merged, outs[:at] + outs[at + n :]
