"""Structure-aware mutations: decode a model with onyx, change one thing a hostile or broken file could
change (an attribute, a dim, an op type, an edge, an opset, an initializer's declared size), encode.

Byte-level mutation alone mostly breaks the protobuf framing and never gets past the decoder; these
reach the checker, shape inference, the optimizer and the kernels with well-formed but wrong models.
"""

from __future__ import annotations

import random

from onyx.ir.model import AttrType, Model, Node

EXTREME_INTS = [0, 1, -1, 2, 3, -2, 7, 2**31 - 1, -(2**31), 2**40, 2**62, -(2**62), 1 << 20]
EXTREME_FLOATS = [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e38, -1e38, 1e-45]


def _ops() -> list[tuple[str, str]]:
    from onyx.ops.registry import registered

    return sorted(registered())


def _nodes(model: Model) -> list[Node]:
    return list(model.graph.walk())


def _mutate_attribute(node: Node, rng: random.Random) -> bool:
    if not node.attributes:
        return False
    attr = node.attributes[rng.choice(sorted(node.attributes))]
    if attr.type == AttrType.INT:
        attr.value = rng.choice(EXTREME_INTS)
    elif attr.type == AttrType.FLOAT:
        attr.value = rng.choice(EXTREME_FLOATS)
    elif attr.type == AttrType.INTS:
        values = list(attr.value or [])
        choice = rng.randrange(3)
        if choice == 0 and values:
            values.pop(rng.randrange(len(values)))
        elif choice == 1:
            values.insert(rng.randrange(len(values) + 1), rng.choice(EXTREME_INTS))
        elif values:
            values[rng.randrange(len(values))] = rng.choice(EXTREME_INTS)
        attr.value = values
    elif attr.type == AttrType.STRING:
        attr.value = rng.choice([b"", b"\xff\xfe", b"NOTSET", b"constant", b"x" * 300])
    else:
        del node.attributes[attr.name]
    return True


def _mutate_edge(model: Model, node: Node, rng: random.Random) -> bool:
    values = list(model.graph.values().values())
    if not values:
        return False
    choice = rng.randrange(3)
    if choice == 0 and node.inputs:  # rewire an input to any value (cycles and type clashes included)
        node.set_input(rng.randrange(len(node.inputs)), rng.choice(values))
    elif choice == 1 and node.inputs:
        node.set_input(len(node.inputs) - 1, None)
    else:
        node.append_input(rng.choice(values))
    return True


def _mutate_shape(model: Model, rng: random.Random) -> bool:
    candidates = [v for v in model.graph.inputs if getattr(v.type, "shape", None) is not None]
    if not candidates:
        return False
    v = rng.choice(candidates)
    dims = list(v.type.shape.dims)
    if dims and rng.random() < 0.7:
        dims[rng.randrange(len(dims))] = rng.choice([0, 1, 3, 1 << 20, 1 << 40, None, "N"])
    elif dims and rng.random() < 0.5:
        dims.pop()
    else:
        dims.append(rng.choice([1, 2, None]))
    from onyx.ir.types import Shape

    v.type.shape = Shape(dims)
    return True


def _mutate_initializer(model: Model, rng: random.Random) -> bool:
    inits = [v for v in model.graph.initializers.values() if hasattr(v.const, "dims")]
    if not inits:
        return False
    t = rng.choice(inits).const
    dims = list(t.dims)
    if dims and rng.random() < 0.5:
        dims[rng.randrange(len(dims))] = rng.choice([0, 2, 1 << 31, 1 << 62])
    else:
        dims.append(rng.choice([0, 2, 1 << 30]))
    t.dims = tuple(dims)
    return True


def _small_tensors(model: Model) -> list[tuple[object, str]]:
    """(holder, key) of every small numeric tensor: initializers and Constant nodes' values. Their
    contents are what shape arithmetic, Loop counts, Range bounds, TopK's k or Tile's repeats read."""
    from onyx.ir.tensor import Tensor

    found: list[tuple[object, str]] = []
    graphs = [model.graph] + [g for n in model.graph.walk() for g in n.subgraphs()]
    for g in graphs:
        for v in g.initializers.values():
            if isinstance(v.const, Tensor) and v.const.nbytes <= 512:
                found.append((v, "const"))
    for n in model.graph.walk():
        a = n.attributes.get("value") if n.op_type == "Constant" else None
        if a is not None and isinstance(a.value, Tensor) and a.value.nbytes <= 512:
            found.append((a, "value"))
    return found


def _mutate_values(model: Model, rng: random.Random) -> bool:
    """Set one element of a small constant to an extreme of its type (a shape of 2**62, a count of -1)."""
    import numpy as np

    from onyx.ir.tensor import Tensor

    holders = _small_tensors(model)
    if not holders:
        return False
    holder, key = rng.choice(holders)
    old = getattr(holder, key)
    arr = np.array(old.numpy(), copy=True)
    if arr.size == 0 or arr.dtype.kind not in "iuf":
        return False
    flat = arr.reshape(-1)
    if arr.dtype.kind == "f":
        flat[rng.randrange(flat.size)] = rng.choice(EXTREME_FLOATS)
    else:
        info = np.iinfo(arr.dtype)
        choices = [x for x in EXTREME_INTS if info.min <= x <= info.max] + [int(info.min), int(info.max)]
        flat[rng.randrange(flat.size)] = rng.choice(choices)
    setattr(holder, key, Tensor.from_numpy(arr, old.name))
    return True


def mutate_model(model: Model, rng: random.Random) -> bool:
    """Change one thing in ``model`` in place; False when the chosen change did not apply."""
    nodes = _nodes(model)
    kind = rng.randrange(10)
    if kind == 0 and nodes:
        return _mutate_attribute(rng.choice(nodes), rng)
    if kind == 1 and nodes:
        return _mutate_edge(model, rng.choice(nodes), rng)
    if kind == 2 and nodes:
        node = rng.choice(nodes)
        node.domain, node.op_type = rng.choice(_ops())
        return True
    if kind == 3:
        return _mutate_shape(model, rng)
    if kind == 4:
        return _mutate_initializer(model, rng)
    if kind == 5 and model.opset_imports:
        i = rng.randrange(len(model.opset_imports))
        domain, version = model.opset_imports[i]
        model.opset_imports[i] = (domain, rng.choice([1, version - 1, version + 1, 1 << 20]))
        return True
    if kind == 6 and nodes:  # a second producer of the same outputs, or a node removed
        node = rng.choice(nodes)
        if node.graph is None:
            return False
        if rng.random() < 0.5:
            node.graph.remove_node(node)
        else:
            from onyx.ir.model import Value

            twin_outputs = [Value(v.name) for v in node.outputs]  # same names: two producers in the file
            twin = Node(node.op_type, list(node.inputs), twin_outputs, dict(node.attributes), node.domain)
            node.graph.append_node(twin)
        return True
    if kind == 7 and model.graph.outputs:
        model.graph.outputs.append(rng.choice(list(model.graph.values().values()) or model.graph.outputs))
        return True
    if kind >= 8:  # twice as likely: values drive data-dependent sizes, counts and loops
        return _mutate_values(model, rng)
    return False


def mutate_bytes(data: bytes, seed: int) -> bytes | None:
    """A structure-aware mutation of a serialized model, or None when ``data`` does not decode."""
    import onyx
    from onyx.errors import OnyxError

    rng = random.Random(seed)
    try:
        model = onyx.load_from_string(data)
    except OnyxError:
        return None
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            mutate_model(model, rng)
        except (OnyxError, ValueError, TypeError, IndexError, KeyError, AttributeError):
            pass  # the IR refused the change itself: try another
    try:
        return onyx.serialize(model)
    except Exception:  # noqa: BLE001 - an IR the encoder cannot write is simply not a mutation
        return None
