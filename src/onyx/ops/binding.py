"""Binding a node to its kernel: the one place that turns an IR node into a kernel call.

The plan (once per session), constant folding and shape inference all run kernels on nodes, and each
needs the same steps: find the kernel for the node's opset, convert the node's attributes to the
Python values the kernel takes, check them against the kernel's signature (an attribute it does not
define, a required one missing), add the special parameters (``_num_outputs``, ``_ctx``, ``_node``)
and check the number of inputs. Doing them here means a bad model reads the same error wherever it is
found, and a kernel's contract (see :mod:`onyx.ops.registry`) is enforced in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onyx.errors import InvalidGraph, OnyxError
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ir.model import Attr, AttrType, Graph, Node
from onyx.ops import registry
from onyx.ops.registry import Kernel, KernelContext

_GRAPH_TYPES = (AttrType.GRAPH, AttrType.GRAPHS)


def opset_for(opsets: Mapping[str, int], domain: str | None) -> int:
    """The opset in force for ``domain``: a custom domain nobody imported counts as version 1."""
    d = registry.normalize_domain(domain)
    v = opsets.get(d)
    if v is None:
        return 1 if d else opsets.get("", 1)
    return v


def is_pure(node: Node, opset: int) -> bool:
    """Whether ``node``'s kernel declares its result a function of its inputs (``@op(..., pure=False)``
    marks random generators and Dropout): only pure nodes are folded, merged, swept or cached."""
    return registry.is_pure(node.op_type, registry.normalize_domain(node.domain), opset)


def _text(b: Any) -> str:
    if isinstance(b, str):
        return b
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(b).decode("utf-8", errors="surrogateescape")


def freeze(a: Any) -> Any:
    """Make a constant read-only, so that no kernel or caller can change the session's weights through an
    output that aliases it (the session copies read-only outputs)."""
    if isinstance(a, np.ndarray):
        a.flags.writeable = False
    return a


def attribute_value(attr: Attr, subgraph: Callable[[Graph], Any] | None = None) -> Any:
    """The Python value a kernel receives for an attribute; GRAPH attributes go through ``subgraph``
    (the plan compiles them), and are refused when there is none."""
    t = attr.type
    v = attr.value
    if t == AttrType.INT:
        return int(v)
    if t == AttrType.FLOAT:
        return float(v)
    if t == AttrType.STRING:
        return _text(v)
    if t == AttrType.INTS:
        return [int(x) for x in v]
    if t == AttrType.FLOATS:
        return [float(x) for x in v]
    if t == AttrType.STRINGS:
        return [_text(x) for x in v]
    if t in (AttrType.TENSOR, AttrType.SPARSE_TENSOR):
        return freeze(v.numpy())
    if t in (AttrType.TENSORS, AttrType.SPARSE_TENSORS):
        return [freeze(x.numpy()) for x in v]
    if t in _GRAPH_TYPES:
        if subgraph is None:
            raise InvalidGraph(f"graph attribute {attr.name!r} cannot be used here")
        return subgraph(v) if t == AttrType.GRAPH else [subgraph(g) for g in v]
    if t in (AttrType.TYPE_PROTO, AttrType.TYPE_PROTOS):
        return v
    raise InvalidGraph(f"attribute {attr.name!r} has an unknown type {t}")


def resolve_attributes(node: Node, env: Mapping[str, Attr] | None) -> dict[str, Attr]:
    """The node's attributes with references to a function's attributes (``ref_attr_name``) replaced by
    the caller's values from ``env``; a reference the caller left unset is dropped (the default applies).
    A reference outside a function body (``env`` None) is an InvalidGraph error."""
    out: dict[str, Attr] = {}
    for a in node.attributes.values():
        if not a.ref_attr_name:
            out[a.name] = a
            continue
        if env is None:
            raise InvalidGraph(
                f"{node.describe()}: attribute reference {a.ref_attr_name!r} outside a function"
            )
        ref = env.get(a.ref_attr_name)
        if ref is not None:
            out[a.name] = Attr(a.name, ref.type, ref.value)
    return out


class BoundKernel:
    """A kernel with everything its node fixes: the keyword arguments (attributes, their defaults left to
    the function, and the special parameters) and how many positional inputs it is called with."""

    __slots__ = ("kernel", "node", "kwargs", "arity", "subgraphs")

    def __init__(self, kernel: Kernel, node: Node, kwargs: dict[str, Any], arity: int, subgraphs: tuple):
        self.kernel = kernel
        self.node = node
        self.kwargs = kwargs
        self.arity = arity  # positional arguments passed: trailing absent optional inputs are dropped
        self.subgraphs: tuple[str, ...] = subgraphs  # attribute names whose value came from ``subgraph``

    @property
    def fn(self) -> Callable[..., Any]:
        return self.kernel.fn

    def __call__(self, *args: Any) -> Any:
        """Run the kernel on the node's inputs (absent ones as None, in node order)."""
        return self.kernel.fn(*args[: self.arity], **self.kwargs)

    def prepared(self, constants: Sequence[Any] | None = None) -> Callable[..., Any] | None:
        """The kernel specialised to this node by its ``prepare`` hook, or None (no hook, a subgraph
        attribute, or the hook declined). ``constants``: the node's inputs known for every run (frozen
        arrays, None for the others), given to a ``prepare`` that declares ``_constants``. See the
        registry's docstring for the contract; a ``prepare`` that raises is treated as declining, so
        that the plain kernel reports the bad attribute at run time with its node."""
        prepare = self.kernel.prepare
        if prepare is None or self.subgraphs:
            return None
        full = {k: v for k, v in self.kernel.attributes.items() if not registry.is_required(v)}
        full.update(self.kwargs)  # the special parameters too, for a prepare that declares them
        if self.kernel.prepare_wants_constants:
            known = tuple(constants or ())[: len(self.node.inputs)]
            full["_constants"] = known + (None,) * (len(self.node.inputs) - len(known))
        try:
            return prepare(**full)
        except Exception:  # noqa: BLE001 - the plain kernel raises the same error at run time
            return None


def bind(
    node: Node,
    opset: int,
    *,
    attributes: Mapping[str, Attr] | None = None,
    ctx: KernelContext | None = None,
    subgraph: Callable[[Graph], Any] | None = None,
) -> BoundKernel:
    """Bind ``node`` to its kernel at ``opset`` (the opset of the node's domain).

    ``attributes`` are the node's attributes after function references are resolved (default: the
    node's own, see :func:`resolve_attributes`); ``ctx`` is the run's kernel context (a fresh one when
    None); ``subgraph`` turns a GRAPH attribute into what the kernel receives (without it such a node
    cannot be bound). Raises NotImplemented for an unknown operator and InvalidGraph for an attribute
    the kernel does not define, a missing required attribute, or a wrong number of inputs, each naming
    the node.
    """
    try:
        kernel = registry.lookup(node.op_type, registry.normalize_domain(node.domain), opset)
    except OnyxNotImplemented as e:
        raise OnyxNotImplemented(f"{node.describe()}: {e}") from None
    attrs = resolve_attributes(node, None) if attributes is None else attributes
    kwargs: dict[str, Any] = {}
    subgraphs: list[str] = []
    for name, a in attrs.items():
        if name not in kernel.attributes and not kernel.accepts_any_attribute:
            raise InvalidGraph(
                f"{node.describe()}: attribute {name!r} is not defined for {node.op_type} "
                f"version {kernel.version_range}"
            )
        if a.type in _GRAPH_TYPES and subgraph is not None:
            kwargs[name] = attribute_value(a, subgraph)  # errors there name the subgraph's own node
            subgraphs.append(name)
            continue
        try:
            kwargs[name] = attribute_value(a)
        except OnyxError as e:
            raise InvalidGraph(f"{node.describe()}: {e}") from None
        except (ValueError, TypeError) as e:
            raise InvalidGraph(f"{node.describe()}: attribute {name!r} cannot be read: {e}") from None
    for name in kernel.required_attributes():
        if name not in kwargs:
            raise InvalidGraph(f"{node.describe()}: required attribute {name!r} is missing")
    if kernel.wants_num_outputs:
        kwargs["_num_outputs"] = len(node.outputs)
    if kernel.wants_ctx:
        kwargs["_ctx"] = ctx if ctx is not None else KernelContext()
    if kernel.wants_node:
        kwargs["_node"] = node
    return BoundKernel(kernel, node, kwargs, _arity(node, kernel), tuple(subgraphs))


def _arity(node: Node, kernel: Kernel) -> int:
    """How many positional arguments the kernel takes for ``node``: its inputs, less trailing absent
    optional ones. Too many or too few inputs is an InvalidGraph error naming the node."""
    n = len(node.inputs)
    if n > len(kernel.inputs) and not kernel.variadic:
        raise InvalidGraph(
            f"{node.describe()}: {n} inputs given, {node.op_type} {kernel.version_range} "
            f"takes at most {len(kernel.inputs)}"
        )
    while n and node.inputs[n - 1] is None and n > kernel.min_inputs:
        n -= 1
    if n < kernel.min_inputs:
        raise InvalidGraph(
            f"{node.describe()}: {n} inputs given, {node.op_type} needs at least {kernel.min_inputs}"
        )
    return n


__all__ = ["BoundKernel", "attribute_value", "bind", "freeze", "is_pure", "opset_for", "resolve_attributes"]
