"""Any value of the original graph by name from ``InferenceSession.run``, not only the graph outputs.

The optimizer fuses, folds and removes values, so a value the caller asks for may not exist in the
session's plan. Such a request is served by a second plan, built once per requested set and cached:
the original model with the requested values made graph outputs, planned without optimization, so the
values are exactly (bit for bit) what the unoptimized graph computes. The session option
``session.keep_values`` (comma-separated names) instead keeps values alive from the start: a plan at
the session's optimization level is built when the session is created, with those values as extra
outputs (passes never remove or rewrite a graph output), so they come at full speed.
"""

from __future__ import annotations

import copy
import difflib
import os
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from onyx.errors import Fail, InvalidArgument
from onyx.ir.model import Graph, Model

if TYPE_CHECKING:
    from onyx.runtime.options import RunOptions, SessionOptions
    from onyx.runtime.session import InferenceSession

KEEP_VALUES_KEY = "session.keep_values"  # onyx's own SessionOptions config entry: "name1,name2,..."
MAX_CACHED_PLANS = 8  # requested sets whose unoptimized plans a session keeps (least recently used go)

_create_lock = threading.Lock()


def plans_for(session: InferenceSession) -> IntermediatePlans:
    """The session's plans for intermediate values (made on first use)."""
    plans = getattr(session, "_value_plans", None)
    if plans is None:
        with _create_lock:
            plans = getattr(session, "_value_plans", None)
            if plans is None:
                plans = IntermediatePlans(session)
                session._value_plans = plans
    return plans


def kept_value_names(options: SessionOptions) -> list[str]:
    """The names in ``session.keep_values``, in order, without blanks or repeats."""
    raw = options._config.get(KEEP_VALUES_KEY, "")
    return list(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))


class IntermediatePlans:
    """The extra plans of one session: the kept-values plan and unoptimized plans per requested set."""

    def __init__(self, session: InferenceSession):
        # weakly: the session holds this object, and a reference back would make every session that
        # ran an intermediate value a cycle, freed only by the garbage collector
        self._session = weakref.ref(session)
        self._lock = threading.Lock()
        self._by_request: OrderedDict[frozenset[str], InferenceSession] = OrderedDict()
        self._kept: InferenceSession | None = None
        self._kept_names: frozenset[str] = frozenset()
        self._graph_outputs = frozenset(o.name for o in session.get_outputs())
        kept = kept_value_names(session.get_session_options())
        if kept:
            model = original_model(session)
            check_names(model, kept)
            level = int(session.get_session_options().graph_optimization_level)
            self._kept = _sub_session(session, with_outputs(model, kept), level)
            self._kept_names = frozenset(kept) | self._graph_outputs

    def run(self, names: list[str], feed: dict[str, Any], run_options: RunOptions | None) -> list[Any]:
        """The values ``names`` (graph outputs or any value of the original graph) for ``feed``."""
        sub = self._plan_for(names)
        return sub.run(list(names), feed, run_options)

    def _plan_for(self, names: list[str]) -> InferenceSession:
        if self._kept is not None and all(n in self._kept_names for n in names):
            return self._kept
        key = frozenset(names)
        with self._lock:
            sub = self._by_request.get(key)
            if sub is not None:
                self._by_request.move_to_end(key)
                return sub
        session = self._session()  # alive: only its own run reaches here
        model = original_model(session)
        check_names(model, names)
        sub = _sub_session(session, with_outputs(model, names), 0)
        with self._lock:
            self._by_request[key] = sub
            while len(self._by_request) > MAX_CACHED_PLANS:
                self._by_request.popitem(last=False)
        return sub


def original_model(session: InferenceSession) -> Model:
    """A fresh copy of the model the session was created from, before any optimization."""
    from onyx.model_io import load

    source = session._source
    if isinstance(source, Model):
        return source.clone()
    if isinstance(source, str | os.PathLike):
        from onyx.runtime.session import _file_stamp

        if _file_stamp(os.fspath(source)) != getattr(session, "_file_stamp", None):
            raise Fail(
                f"the model file {os.fspath(source)!r} changed or went away since the session was created: "
                "intermediate values need the original model"
            )
        return load(source)
    return load(source)


def with_outputs(model: Model, names: list[str]) -> Model:
    """``model`` (changed in place) with the values ``names`` appended to its graph outputs."""
    g = model.graph
    present = {v.name for v in g.outputs}
    values = g.values()
    for name in names:
        if name not in present:
            g.outputs.append(values[name])
            present.add(name)
    return model


def check_names(model: Model, names: list[str]) -> None:
    """Raise InvalidArgument naming every requested name that is not a value of the main graph."""
    values = model.graph.values()
    unknown = [n for n in names if n not in values]
    if not unknown:
        return
    name = unknown[0]
    inner = _subgraph_owner(model.graph, name)
    if inner is not None:
        raise InvalidArgument(
            f"invalid output name {name!r}: it is a value inside a subgraph of node {inner}; only values "
            "of the main graph can be requested"
        )
    near = difflib.get_close_matches(name, list(values), n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
    more = f" (also unknown: {unknown[1:]})" if len(unknown) > 1 else ""
    outputs = [v.name for v in model.graph.outputs]
    raise InvalidArgument(
        f"invalid output name {name!r}: neither one of the model's outputs {outputs} nor a value of its "
        f"graph{hint}{more}"
    )


def _subgraph_owner(g: Graph, name: str) -> str | None:
    """``'name' (OpType)`` of the main-graph node whose subgraphs define ``name``, or None."""
    for node in g.nodes:
        for sub in node.subgraphs():
            if _defined_in(sub, name):
                return f"{node.name!r} ({node.op_type})"
    return None


def _defined_in(g: Graph, name: str) -> bool:
    if name in g.values():
        return True
    return any(_defined_in(s, name) for n in g.nodes for s in n.subgraphs())


def _sub_session(session: InferenceSession, model: Model, level: int) -> InferenceSession:
    """A session over ``model`` with the parent's options, at optimization ``level``, writing nothing."""
    from onyx.runtime.session import InferenceSession

    options = copy.copy(session.get_session_options())
    options._config = {k: v for k, v in options._config.items() if k != KEEP_VALUES_KEY}
    options.graph_optimization_level = level
    options.optimized_model_filepath = ""
    options.enable_profiling = False
    return InferenceSession(model, options, providers=session.get_providers())


def keep_values(session: InferenceSession) -> None:
    """Build the ``session.keep_values`` plan now, when the session asks for one (errors at creation)."""
    if kept_value_names(session.get_session_options()):
        plans_for(session)


def run_values(
    session: InferenceSession, names: list[str], feed: dict[str, Any], run_options: RunOptions | None
) -> list[Any]:
    """What ``session.run(names, feed)`` returns when some of ``names`` are not graph outputs."""
    return plans_for(session).run(names, feed, run_options)


__all__ = ["KEEP_VALUES_KEY", "IntermediatePlans", "plans_for", "run_values", "keep_values", "check_names"]
