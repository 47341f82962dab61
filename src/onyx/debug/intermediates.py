"""Every value a model computes, by name: the unoptimized graph run with all its values as outputs.

This is what ``onyx.debug.compare`` lines up between two models or two runtimes, and what a user reads to
see where a model goes wrong (onnxruntime only returns graph outputs).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ir.model import Model, Node


def as_model(model: Model | str | os.PathLike | bytes) -> Model:
    """A copy of ``model`` (an onyx Model, a path or the bytes of one) that may be changed freely."""
    from onyx.model_io import load

    if isinstance(model, Model):
        return model.clone()
    if isinstance(model, str | os.PathLike | bytes | bytearray | memoryview):
        return load(bytes(model) if isinstance(model, bytearray | memoryview) else model)
    raise InvalidArgument(f"expected an onyx Model, a path or bytes, got {type(model).__name__}")


def topological_nodes(model: Model) -> list[Node]:
    """The main graph's nodes in topological order, keeping the file's order where it already is one
    (a node runs after the producers of its inputs and of the outer values its subgraphs read)."""
    import heapq

    nodes = model.graph.nodes
    producer = {v.name: i for i, n in enumerate(nodes) for v in n.outputs if v.name}
    waits_for: list[set[int]] = []
    for i, node in enumerate(nodes):
        names = {v.name for v in node.inputs if v is not None}
        for sub in node.subgraphs():
            names.update(v.name for inner in sub.walk() for v in inner.inputs if v is not None)
        waits_for.append({producer[n] for n in names if n in producer and producer[n] != i})
    readers: list[list[int]] = [[] for _ in nodes]
    for i, deps in enumerate(waits_for):
        for d in deps:
            readers[d].append(i)
    missing = [len(d) for d in waits_for]
    ready = [i for i, m in enumerate(missing) if m == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for r in readers[i]:
            missing[r] -= 1
            if missing[r] == 0:
                heapq.heappush(ready, r)
    if len(order) != len(nodes):  # a cycle: the checker reports it; keep the file's order here
        return list(nodes)
    return order


def computed_names(model: Model) -> list[str]:
    """The names of the values the main graph's nodes compute, in topological order."""
    return [v.name for node in topological_nodes(model) for v in node.outputs if v.name]


def given_values(model: Model, feed: dict[str, Any]) -> dict[str, Any]:
    """The graph inputs (from ``feed``) and initializers (a feed overrides one where fed), by name."""
    g = model.graph
    out: dict[str, Any] = {}
    for v in g.inputs:
        if v.name in feed:
            out[v.name] = feed[v.name]
    for name, v in g.initializers.items():
        if name not in out and v.const is not None:
            out[name] = v.const.numpy()
    return out


def run_all(
    model: Model | str | os.PathLike | bytes,
    feed: dict[str, Any],
    *,
    include_inputs: bool = False,
    subgraphs: bool = False,
    level: int = 0,
) -> dict[str, Any]:
    """Every value of ``model``'s main graph for ``feed``, by name, in topological order.

    The graph is run unoptimized (``level=0``): the values are the ones its nodes compute, each exactly as
    ``InferenceSession.run([name], feed)`` returns it. ``include_inputs`` puts the graph inputs and the
    initializers first. A higher ``level`` optimizes first and returns the values that survive (under
    their names). Values inside subgraphs (If/Loop/Scan bodies) are not returned: ``subgraphs=True``
    raises NotImplemented.
    """
    from onyx.runtime.intermediates import with_outputs
    from onyx.runtime.options import SessionOptions
    from onyx.runtime.session import InferenceSession

    if subgraphs:
        raise OnyxNotImplemented(
            "run_all: values inside subgraphs (If/Loop/Scan bodies) are not supported; "
            "only the main graph's values can be returned"
        )
    if not isinstance(feed, dict):
        raise InvalidArgument(f"feed must be a dict of input name -> array, got {type(feed).__name__}")
    m = as_model(model)
    if level:
        from onyx.optimizer import optimize

        m = optimize(m, level)
    names = computed_names(m)
    options = SessionOptions()
    options.graph_optimization_level = 0
    outs = InferenceSession(with_outputs(m, names), options).run(names, feed) if names else []
    values: dict[str, Any] = {}
    if include_inputs:
        values.update(given_values(m, {k: _array(v) for k, v in feed.items()}))
    values.update(zip(names, outs))
    return values


def _array(x: Any) -> Any:
    return x if isinstance(x, np.ndarray | list | dict) else np.asarray(x)


__all__ = ["run_all", "as_model", "computed_names", "given_values", "topological_nodes"]
