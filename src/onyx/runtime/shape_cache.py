"""Work that depends only on shapes, done once per shape signature.

Exported models compute shapes at run time: ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``, and
masks built from ``Range`` over a sequence length. Those nodes read nothing but the shapes of the
tensors that ``Shape``/``Size`` look at and the model's constants, so their results are the same for
every run whose tensors have the same shapes. This pass rewrites a plan so that such a *shape region*
is evaluated once per signature: each ``Shape``/``Size`` input gets a recorder step that keeps only its
shape, and every value the region hands to the rest of the graph is produced by one cached step keyed
by the shapes it depends on. A miss evaluates the region's steps for that value (with zero-stride
stand-ins for the tensors whose shapes they read) and keeps the result read-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from onyx.errors import OnyxError

if TYPE_CHECKING:
    from onyx.runtime.plan import Plan, Step

SHAPE_READERS = frozenset({"Shape", "Size"})
MAX_SIGNATURES = 32  # per cached value; a full table is cleared (a server seeing ever new lengths)
MAX_CACHED_BYTES = 4 << 20  # larger results (a mask over a long sequence) are computed every run
MAX_TABLE_BYTES = 16 << 20  # per cached value, all signatures together; past it the table is cleared


def _default_domain(step: Step) -> bool:
    return step.node.domain in ("", "ai.onnx")


class ShapeFunction:
    """One value of a shape region as a function of the shapes it depends on, with a cache."""

    __slots__ = ("steps", "sources", "constants", "slot", "cache", "nbytes")

    def __init__(self, steps: list[Step], sources: tuple[int, ...], constants: list[Any], slot: int):
        self.steps = steps  # the region's steps this value needs, in plan order
        self.sources = sources  # slots of the tensors whose shapes the steps read, in key order
        self.constants = constants  # the plan's template (initializers)
        self.slot = slot
        self.cache: dict[tuple, Any] = {}
        self.nbytes = 0  # of the arrays in the cache

    def __call__(self, *shapes: tuple[int, ...]) -> Any:
        hit = self.cache.get(shapes)
        if hit is not None:
            return hit
        value = self._evaluate(shapes)
        if isinstance(value, np.ndarray):
            if value.nbytes > MAX_CACHED_BYTES:
                return value
            value.flags.writeable = False
        elif not isinstance(value, np.generic):
            return value  # sequences, maps, optionals: not cached (a consumer might change them)
        size = int(getattr(value, "nbytes", 0))
        if len(self.cache) >= MAX_SIGNATURES or self.nbytes + size > MAX_TABLE_BYTES:
            self.cache.clear()
            self.nbytes = 0
        self.cache[shapes] = value
        self.nbytes += size
        return value

    def _evaluate(self, shapes: tuple[tuple[int, ...], ...]) -> Any:
        from onyx.runtime.plan import _kernel_failure

        env: dict[int, Any] = {s: _stand_in(shape) for s, shape in zip(self.sources, shapes)}
        constants = self.constants
        for st in self.steps:
            args = [env[i] if i in env else constants[i] for i in st.ins]
            try:
                res = st.fn(*args, **st.kwargs)
            except Exception as e:  # noqa: BLE001 - reported with the node that failed
                err = _kernel_failure(st, args, e)
                err.reported = True
                raise err from e
            if st.single:
                env[st.outs[0]] = res
            else:
                if not isinstance(res, tuple | list):
                    res = (res,)
                env.update(zip(st.outs, res))
        return env[self.slot]


def _stand_in(shape: tuple[int, ...]) -> np.ndarray:
    """A read-only array of ``shape`` that owns no memory: all a Shape or Size kernel looks at."""
    return np.broadcast_to(np.zeros((), dtype=np.uint8), shape)


def _record_shape(x: Any) -> tuple[int, ...]:
    return np.shape(x)


def cache_shape_regions(plan: Plan) -> None:
    """Rewrite ``plan.steps`` so that values computed from shapes and constants alone are cached per
    shape signature (see the module's docstring). Must run before the plan's frees are computed."""
    from onyx.runtime.plan import NONE_SLOT, Step

    steps = plan.steps
    fed = set(plan.input_slots)  # an initializer listed as an input may be fed: not a constant
    constant = {s for s, c in enumerate(plan.template) if c is not None and s not in fed}
    constant.add(NONE_SLOT)
    sources_of: dict[int, frozenset[int]] = {}  # region value -> slots whose shapes it depends on
    region: dict[int, int] = {}  # region value -> index of the step producing it
    in_region: list[bool] = []
    for i, st in enumerate(steps):
        member = False
        # a step whose kernel is declared impure (random ops, Dropout) is never cached
        if not st.subgraphs and _default_domain(st) and st.pure:
            if st.node.op_type in SHAPE_READERS and len(st.ins) == 1:
                (x,) = st.ins
                deps: frozenset[int] = sources_of.get(x, frozenset() if x in constant else frozenset((x,)))
                member = True
            elif all(s in constant or s in sources_of for s in st.ins):  # Constant nodes too
                deps = frozenset().union(*(sources_of.get(s, frozenset()) for s in st.ins))
                member = True
        in_region.append(member)
        if member:
            for s in st.outs:
                sources_of[s] = deps
                region[s] = i
    if not region:
        return
    # region values the rest of the plan reads: other steps, the plan's outputs, subgraphs' imports
    needed: set[int] = set(plan.output_slots) & region.keys()
    for i, st in enumerate(steps):
        if not in_region[i]:
            needed.update(s for s in st.ins if s in region)
            for name in st.subgraphs:
                m = st.kwargs[name]
                for p in m.plan if m.many else [m.plan]:
                    needed.update(outer for _, outer in p.imports if outer in region)
    # a value that is the bare Shape/Size of a tensor gains nothing from a cache: that step stays as it is
    keep = {region[s] for s in needed if _bare_shape(steps[region[s]], region)}
    cached = {s: _ancestors(steps, region, s) for s in needed if region[s] not in keep}
    if not cached:
        return
    # one recorder per tensor whose shape is read, placed at the first region step reading it
    first_reader: dict[int, int] = {}
    for i, st in enumerate(steps):
        if in_region[i]:
            for s in st.ins:
                first_reader.setdefault(s, i)
    recorder: dict[int, int] = {}
    place: dict[int, list[Step]] = {}
    for s in sorted(set().union(*(sources_of[s] for s in cached))):
        first = first_reader[s]
        slot = _new_slot(plan)
        recorder[s] = slot
        rec = Step(_record_shape, (s,), (slot,), {}, steps[first].node, ())
        place.setdefault(first, []).append(rec)
    for s, anc in cached.items():
        sources = tuple(sorted(sources_of[s]))
        fn = ShapeFunction([steps[i] for i in anc], sources, plan.template, s)
        producer = steps[region[s]]
        place.setdefault(region[s], []).append(
            Step(fn, tuple(recorder[x] for x in sources), (s,), {}, producer.node, ())
        )
    new_steps: list[Step] = []
    for i, st in enumerate(steps):
        recorders = [p for p in place.get(i, []) if p.fn is _record_shape]
        new_steps.extend(recorders)
        if not in_region[i] or i in keep:
            new_steps.append(st)
        new_steps.extend(p for p in place.get(i, []) if p.fn is not _record_shape)
    plan.steps = new_steps


def _bare_shape(step: Step, region: dict[int, int]) -> bool:
    return step.node.op_type in SHAPE_READERS and step.ins[0] not in region


def _ancestors(steps: list[Step], region: dict[int, int], slot: int) -> list[int]:
    """Indices of the region steps ``slot`` is computed from (itself included), in plan order."""
    seen: set[int] = set()
    todo = [region[slot]]
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        todo.extend(region[s] for s in steps[i].ins if s in region)
    return sorted(seen)


def _new_slot(plan: Plan) -> int:
    plan.template.append(None)
    return len(plan.template) - 1


def is_reported(e: BaseException) -> bool:
    """Whether an error already names the node it came from (raised inside a cached shape value)."""
    return isinstance(e, OnyxError) and getattr(e, "reported", False)
