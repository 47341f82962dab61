"""The execution plan: a graph compiled once into a flat list of steps over numbered slots.

Compiling resolves every kernel, converts every attribute to the Python value the kernel takes, maps
every value to a slot index and computes where each intermediate is last used, so that running does
no name lookups and no attribute parsing, and frees intermediates as soon as they are dead.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from onyx.errors import Fail, InvalidGraph, OnyxError
from onyx.ir.model import Attr, Function, Graph, Node, Value
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ops import registry
from onyx.ops.binding import attribute_value as attribute_value  # re-exported: older imports
from onyx.ops.binding import bind, freeze, opset_for, resolve_attributes
from onyx.ops.registry import KernelContext
from onyx.runtime.cancellation import Terminated as Terminated  # re-exported: raised by runs stopped
from onyx.runtime.shape_cache import cache_shape_regions, is_reported

NONE_SLOT = 0  # a slot that always holds None: absent optional inputs read it


class SubgraphMarker:
    """An attribute slot that becomes a bound subgraph callable at run time."""

    __slots__ = ("plan", "many")

    def __init__(self, plan: Plan | list[Plan], many: bool):
        self.plan = plan
        self.many = many


class BoundSubgraph:
    """What a kernel receives for a GRAPH attribute: call it with the subgraph's inputs."""

    __slots__ = (
        "plan",
        "outer_env",
        "input_names",
        "output_names",
        "output_types",
        "num_inputs",
        "num_outputs",
        "profile",
        "stop",
    )

    def __init__(self, plan: Plan, outer_env: list[Any], profile: list | None = None, stop: Any = None):
        self.plan = plan
        self.outer_env = outer_env
        self.profile = profile  # the run's profile list: subgraph nodes are timed too
        self.stop = stop  # the run's RunStop (runtime/cancellation.py): checked on every call too
        self.input_names = plan.input_names
        self.output_names = plan.output_names
        self.output_types = plan.output_types  # declared types (TypeBase or None), e.g. for empty scans
        self.num_inputs = len(plan.input_names)
        self.num_outputs = len(plan.output_names)

    def __call__(self, *args: Any) -> list[Any]:
        if self.stop is not None:  # every iteration of a Loop or Scan, even one whose body has no node
            self.stop.check(f"an iteration of a subgraph ({len(self.plan.steps)} nodes)")
        return self.plan.run(list(args), self.outer_env, self.profile, self.stop)


class Step:
    """One node, ready to run."""

    __slots__ = ("fn", "ins", "outs", "kwargs", "frees", "node", "subgraphs", "single", "pure")

    def __init__(self, fn, ins, outs, kwargs, node, subgraphs, pure: bool = True):
        self.fn = fn
        self.ins = ins
        self.outs = outs
        self.kwargs = kwargs
        self.frees: tuple[int, ...] = ()
        self.node = node
        self.subgraphs = subgraphs  # attribute names holding SubgraphMarker, or ()
        self.single = len(outs) == 1
        self.pure = pure  # the kernel's result is a function of its inputs (see registry: pure=False)


class CompileContext:
    """What compiling needs across a model: opsets, functions, the kernel context."""

    def __init__(
        self, opsets: dict[str, int], functions: dict[tuple[str, str, str], Function], kctx: KernelContext
    ):
        self.opsets = opsets
        self.functions = functions
        self.kctx = kctx


class Plan:
    """A compiled graph (or subgraph, or function body)."""

    def __init__(
        self,
        graph: Graph,
        cc: CompileContext,
        outer: Plan | None = None,
        inputs: list[Value] | None = None,
        outputs: list[Value] | None = None,
        attr_env: dict[str, Attr] | None = None,
    ):
        self.graph = graph
        self.cc = cc
        self.outer = outer
        self.attr_env = attr_env  # for function bodies: the caller's attributes
        self.slot_of: dict[int, int] = {}
        self.imports: list[tuple[int, int]] = []  # (my slot, outer slot)
        self.template: list[Any] = [None]
        self.local: set[int] = set()
        graph_inputs = inputs if inputs is not None else graph.inputs
        graph_outputs = outputs if outputs is not None else graph.outputs
        for v in graph_inputs:
            self.local.add(id(v))
        for v in graph.initializers.values():
            self.local.add(id(v))
        for n in graph.nodes:
            for v in n.outputs:
                self.local.add(id(v))
        self.input_names = [v.name for v in graph_inputs]
        self.output_names = [v.name for v in graph_outputs]
        self.output_types = [v.type for v in graph_outputs]
        self.input_slots = [self.slot(v) for v in graph_inputs]
        for v in graph.initializers.values():
            s = self.slot(v)
            c = v.const
            self.template[s] = freeze(c.numpy()) if isinstance(c, Tensor | SparseTensor) else None
        self.steps: list[Step] = [self._compile(n) for n in graph.nodes]
        self.output_slots = [self.slot(v) for v in graph_outputs]
        cache_shape_regions(self)
        self._plan_frees()
        self._fast = self._fast_steps()
        # the enclosing plan is needed while compiling only (imports are slot pairs, and runs pass the outer
        # env): kept, it would make a plan with control flow a cycle (plan -> step -> subplan -> plan)
        # that only the garbage collector frees, with the plan's weights
        self.outer = None

    def _fast_steps(self) -> tuple | None:
        """The steps as flat tuples for :meth:`_run_fast` (None when a step runs subgraphs, which take
        the general loop): (step, fn, input getter, call mode, kwargs, single output slot or -1, frees).
        Mode 0: one input, no keyword arguments; 1: several inputs (or none); 2: keyword arguments too."""
        out = []
        for st in self.steps:
            if st.subgraphs:
                return None
            n_in = len(st.ins)
            if n_in == 0:
                get = _no_inputs
            elif n_in == 1 and not st.kwargs:
                get = operator.itemgetter(st.ins[0])
            else:
                get = _tuple_getter(st.ins)
            mode = 2 if st.kwargs else (0 if n_in == 1 else 1)
            out.append((st, st.fn, get, mode, st.kwargs, st.outs[0] if st.single else -1, st.frees))
        return tuple(out)

    # -- slots ---------------------------------------------------------------------------------
    def slot(self, v: Value) -> int:
        s = self.slot_of.get(id(v))
        if s is not None:
            return s
        s = len(self.template)
        self.template.append(None)
        self.slot_of[id(v)] = s
        if id(v) not in self.local:
            if self.outer is None:
                raise InvalidGraph(f"value {v.name!r} is used but never defined")
            self.imports.append((s, self.outer.slot(v)))
        return s

    # -- compiling -----------------------------------------------------------------------------
    def _compile(self, node: Node) -> Step:
        domain = registry.normalize_domain(node.domain)
        ins = [self.slot(v) if v is not None else NONE_SLOT for v in node.inputs]
        outs = [self.slot(v) for v in node.outputs]
        key = (node.domain or "", node.op_type, node.overload or "")
        fn_def = self.cc.functions.get(key)
        if fn_def is None and domain != node.domain:
            fn_def = self.cc.functions.get((domain, node.op_type, node.overload or ""))
        attrs = resolve_attributes(node, self.attr_env)
        if fn_def is not None:
            return self._compile_function_call(node, fn_def, attrs, ins, outs)
        opset = opset_for(self.cc.opsets, domain)
        bound = bind(node, opset, attributes=attrs, ctx=self.cc.kctx, subgraph=self._plan_subgraph)
        ins = ins[: bound.arity]
        wants = bound.kernel.prepare_wants_constants
        prepared = bound.prepared(self._constants(node.inputs) if wants else None)
        pure = bound.kernel.pure
        if prepared is not None:
            return Step(prepared, tuple(ins), tuple(outs), {}, node, (), pure)
        kwargs = bound.kwargs
        for name in bound.subgraphs:  # plans (GRAPH) or lists of plans (GRAPHS), bound per run
            kwargs[name] = SubgraphMarker(kwargs[name], isinstance(kwargs[name], list))
        return Step(bound.fn, tuple(ins), tuple(outs), kwargs, node, bound.subgraphs, pure)

    def _constants(self, values: list[Value | None]) -> tuple:
        """What each of ``values`` holds on every run: its frozen array for an initializer of this graph
        that no feed can override, else None (feeds, computed values, outer values)."""
        fed = set(self.input_slots)
        out = []
        for v in values:
            s = self.slot_of.get(id(v)) if v is not None else None
            out.append(self.template[s] if s is not None and s not in fed else None)
        return tuple(out)

    def _plan_subgraph(self, g: Graph) -> Plan:
        return Plan(g, self.cc, outer=self, attr_env=self.attr_env)

    def _compile_function_call(self, node: Node, f: Function, attrs: dict[str, Attr], ins, outs) -> Step:
        env: dict[str, Attr] = {a.name: a for a in f.attribute_protos}
        env.update(attrs)
        fopsets = dict(self.cc.opsets)
        fopsets.update(f.opsets())
        cc = CompileContext(fopsets, self.cc.functions, self.cc.kctx)
        inputs = list(f.inputs)
        body = Plan(f.graph, cc, outer=None, inputs=inputs, outputs=f.outputs, attr_env=env)
        n_in = len(inputs)
        kctx = self.cc.kctx

        def call(*args: Any) -> tuple:
            args = list(args) + [None] * (n_in - len(args))
            return tuple(body.run(args, None, None, kctx.stop))  # the run's stop reaches the body's nodes

        step = Step(call, tuple(ins), tuple(outs), {}, node, (), pure=False)  # the body may be random
        step.single = False
        return step

    def _plan_frees(self) -> None:
        keep = set(self.output_slots) | {NONE_SLOT}
        keep.update(s for s, c in enumerate(self.template) if c is not None)
        keep.update(s for s, _ in self.imports)
        keep.update(self.input_slots)
        last: dict[int, int] = {}
        for i, st in enumerate(self.steps):
            for s in st.ins:
                last[s] = i
            for s in st.outs:
                last.setdefault(s, i)
            if st.subgraphs:
                # subgraphs read outer values through the env: keep what they import alive
                for name in st.subgraphs:
                    m = st.kwargs[name]
                    for p in m.plan if m.many else [m.plan]:
                        for _, outer_slot in p.imports:
                            last[outer_slot] = max(last.get(outer_slot, i), i)
        frees: dict[int, list[int]] = {}
        for s, i in last.items():
            if s not in keep:
                frees.setdefault(i, []).append(s)
        for i, st in enumerate(self.steps):
            st.frees = tuple(frees.get(i, ()))

    # -- running -------------------------------------------------------------------------------
    def run(
        self, inputs: list[Any], outer_env: list[Any] | None, profile: list | None = None, stop: Any = None
    ) -> list[Any]:
        """Run the steps. ``profile`` collects (node, t0, t1, inputs, outputs) per node, where inputs and
        outputs are (type name, shape, bytes) per value (:func:`_type_shapes`); ``stop`` (a RunStop of
        runtime/cancellation.py) is checked before each node: once its RunOptions.terminate is set or its
        deadline has passed, the run raises :class:`Terminated`."""
        env = self.template.copy()
        if outer_env is not None:
            for mine, theirs in self.imports:
                env[mine] = outer_env[theirs]
        for s, v in zip(self.input_slots, inputs):
            env[s] = v
        if profile is None and self._fast is not None:
            return self._run_fast(env) if stop is None else self._run_fast_stoppable(env, stop)
        for st in self.steps:
            args = [env[i] for i in st.ins]
            kwargs = st.kwargs
            if st.subgraphs:
                kwargs = dict(kwargs)
                for name in st.subgraphs:
                    m = kwargs[name]
                    kwargs[name] = (
                        [BoundSubgraph(p, env, profile, stop) for p in m.plan]
                        if m.many
                        else BoundSubgraph(m.plan, env, profile, stop)
                    )
            if stop is not None:
                stop.check(st.node)
            t0 = time.perf_counter() if profile is not None else 0.0
            try:
                res = st.fn(*args, **kwargs)
            except Terminated:
                raise
            except Exception as e:  # noqa: BLE001 - every kernel failure is reported with its node
                _raise_failure(st, args, e)
            if profile is not None:
                t1 = time.perf_counter()  # the inputs' and outputs' types and sizes are read outside the time
                outs = res if not st.single and isinstance(res, tuple | list) else (res,)
                profile.append((st.node, t0, t1, _type_shapes(args), _type_shapes(outs)))
            if st.single:
                env[st.outs[0]] = res
            else:
                if not isinstance(res, tuple | list):
                    res = (res,)
                for s, r in zip(st.outs, res):
                    env[s] = r
            for s in st.frees:
                env[s] = None
        return [env[s] for s in self.output_slots]

    def _run_fast(self, env: list[Any]) -> list[Any]:
        """The steps without profiling, stop checks or subgraphs: the loop of :meth:`run` with every
        per-step decision taken at compile time (this loop is the executor's whole overhead)."""
        st = None
        try:
            for st, fn, get, mode, kwargs, out, frees in self._fast:
                if mode == 0:
                    res = fn(get(env))
                elif mode == 1:
                    res = fn(*get(env))
                else:
                    res = fn(*get(env), **kwargs)
                if out >= 0:
                    env[out] = res
                else:
                    if not isinstance(res, tuple | list):
                        res = (res,)
                    for s, r in zip(st.outs, res):
                        env[s] = r
                if frees:
                    for s in frees:
                        env[s] = None
        except Terminated:
            raise
        except Exception as e:  # noqa: BLE001 - every kernel failure is reported with its node
            if st is None:
                raise
            _raise_failure(st, [env[i] for i in st.ins], e)
        return [env[s] for s in self.output_slots]

    def _run_fast_stoppable(self, env: list[Any], stop: Any) -> list[Any]:
        """:meth:`_run_fast` with ``stop.check`` before each step (a run made with RunOptions); kept
        apart so that runs without any pay nothing for it."""
        st = None
        options, deadline, now = stop.options, stop.deadline, time.monotonic
        try:
            for st, fn, get, mode, kwargs, out, frees in self._fast:
                if options.terminate or (deadline is not None and now() >= deadline):
                    stop.check(st.node)  # raises, naming the node and why
                if mode == 0:
                    res = fn(get(env))
                elif mode == 1:
                    res = fn(*get(env))
                else:
                    res = fn(*get(env), **kwargs)
                if out >= 0:
                    env[out] = res
                else:
                    if not isinstance(res, tuple | list):
                        res = (res,)
                    for s, r in zip(st.outs, res):
                        env[s] = r
                if frees:
                    for s in frees:
                        env[s] = None
        except Terminated:
            raise
        except Exception as e:  # noqa: BLE001 - every kernel failure is reported with its node
            if st is None:
                raise
            _raise_failure(st, [env[i] for i in st.ins], e)
        return [env[s] for s in self.output_slots]


def _no_inputs(env: list[Any]) -> tuple:
    return ()


def _tuple_getter(slots: tuple[int, ...]) -> Callable[[list[Any]], tuple]:
    """``env -> tuple(env[s] for s in slots)`` (itemgetter gives a bare value for one slot)."""
    if len(slots) == 1:
        (only,) = slots
        return lambda env: (env[only],)
    return operator.itemgetter(*slots)


def describe_value(x: Any) -> str:
    """'float32[1,3,224,224]' for arrays, 'seq(3)' for lists, 'None' for absent values."""
    if x is None:
        return "None"
    if isinstance(x, np.ndarray | np.generic):
        return f"{np.asarray(x).dtype}{list(np.shape(x))}"
    if isinstance(x, list):
        return f"seq(len={len(x)})"
    if isinstance(x, dict):
        return f"map(len={len(x)})"
    return type(x).__name__


_TYPE_NAMES: dict[Any, str] = {}


def _type_shapes(values: Any) -> list[tuple[str, list[int], int] | None]:
    """What a profile records of a node's inputs or outputs: (onnxruntime's element type name, shape,
    bytes) per tensor, None for absent or non-tensor values, such as the shapes that the shape cache's
    steps take in place of tensors (profiling only: never on the fast path)."""
    out: list[tuple[str, list[int], int] | None] = []
    for v in values:
        dtype = getattr(v, "dtype", None)
        if dtype is None or not hasattr(v, "shape"):
            out.append(None)
            continue
        name = _TYPE_NAMES.get(dtype)
        if name is None:
            from onyx.ir.dtypes import from_numpy

            try:
                name = from_numpy(dtype).onnx_name
            except Exception:  # noqa: BLE001 - a dtype onnx has no name for: shown as numpy names it
                name = str(dtype)
            _TYPE_NAMES[dtype] = name
        out.append((name, [int(d) for d in v.shape], int(getattr(v, "nbytes", 0))))
    return out


def _raise_failure(st: Step, args: list[Any], e: Exception) -> None:
    if is_reported(e):  # raised inside a cached shape value: it names its own node already
        raise e
    raise _kernel_failure(st, args, e) from e


def _kernel_failure(st: Step, args: list[Any], e: Exception) -> OnyxError:
    node = st.node
    names = [v.name if v is not None else "" for v in node.inputs]
    shown = ", ".join(f"{n or '?'}: {describe_value(a)}" for n, a in zip(names, args))
    msg = str(e) or type(e).__name__
    if isinstance(e, OnyxError) and msg.startswith(node.describe()):
        return type(e)(msg) if not isinstance(e, Fail) else e
    return Fail(f"{node.describe()} failed with inputs ({shown}): {type(e).__name__}: {msg}")
