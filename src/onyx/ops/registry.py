"""The operator registry: the ``@op`` decorator and dispatch by (domain, op type, opset).

A kernel is a plain function. Its positional parameters are the ONNX inputs in order (optional ones
default to ``None``; ``*xs`` for a variadic input); its keyword-only parameters are the attributes, with
the spec's default as the Python default. Three keyword-only names are special and never attributes:

``_num_outputs``  the number of outputs the node declares (Split, Dropout, LSTM...)
``_ctx``          the :class:`KernelContext` of the run (random seeds, threads, subgraph runner)
``_node``         the IR node itself, bound when the plan is built (for ops such as Gradient that
                  need the graph around them)

Dispatch picks, for the node's domain, the kernel with the newest ``since <= opset < until``; binding a
node to its kernel (attributes converted and checked, special parameters added) is
:func:`onyx.ops.binding.bind`, used by the plan, constant folding and shape inference alike.

Two facts about a kernel are declared on its decorator, never listed elsewhere:

``pure=False``     the result is not a function of the inputs and attributes alone (random generators,
                   Dropout in training mode): such a node is never constant-folded, merged with an equal
                   one, swept as dead by a fusion, or cached per shape signature.
``prepare=f``      per-node state worked out once when the plan is built. ``f(**attributes)`` gets every
                   attribute (the defaults of those the node leaves out included, and the special
                   parameters the kernel declares) and returns a callable of the inputs alone, or None
                   to decline; ``fn(*inputs, **attrs)`` must stay equivalent to ``f(**attrs)(*inputs)``.
                   Arrays built from attribute lists, compiled trees and attribute validation go there,
                   so that they are done once per session, not per run. A ``prepare`` that raises counts
                   as declining: the plain kernel then reports the bad attribute at run time, with its
                   node. A ``prepare`` that declares ``_constants`` also gets the node's constant
                   inputs, a tuple in input order: the frozen array an input holds on every run (an
                   initializer no feed can override), or None; the callable it returns is still called
                   with every input, so it may check ``W is constants[1]`` before using what it derived
                   from it. The special parameters (``_ctx`` for the session's threads, ``_node``) reach
                   ``prepare`` as they reach the kernel.

Per-node state lives in ``prepare`` (conv's channels-last ReplayMemo is made there, one per node;
the tree ensembles compile their forests there). Two caches stay outside it, on purpose:

- ``onyx.ops._derived``: arrays a kernel derives from a weight (a transposed or converted copy) inside
  the strategy it picks for the input's shape at run time; keyed on the frozen weight's identity, so
  they are built once per session all the same, and they are shared between nodes reading one weight.
- ``onyx.runtime.repack``: GEMM weights stored transposed, decided for the whole plan by the BLAS in
  use and the session option ``session.disable_prepacking``; it replaces the tensor the model holds
  (so the original's pages can be released), which no single node's ``prepare`` may do.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.errors import RuntimeException

DEFAULT_DOMAIN = ""
ML_DOMAIN = "ai.onnx.ml"
MS_DOMAIN = "com.microsoft"
PREVIEW_TRAINING_DOMAIN = "ai.onnx.preview.training"
SPECIAL_PARAMS = ("_num_outputs", "_ctx", "_node")

_REQUIRED = object()


def normalize_domain(domain: str | None) -> str:
    """``ai.onnx`` and the empty string both name the default domain."""
    if not domain or domain == "ai.onnx":
        return DEFAULT_DOMAIN
    return domain


@dataclass(frozen=True)
class Kernel:
    """One registered implementation of an operator for a range of opset versions."""

    op_type: str
    domain: str
    since: int
    until: int | None
    fn: Callable[..., Any]
    inputs: tuple[str, ...]
    variadic: bool
    min_inputs: int
    attributes: dict[str, Any] = field(default_factory=dict)
    accepts_any_attribute: bool = False
    wants_num_outputs: bool = False
    wants_ctx: bool = False
    wants_node: bool = False
    shape_fn: Callable[..., Any] | None = None
    pure: bool = True
    prepare: Callable[..., Any] | None = None
    prepare_wants_constants: bool = False

    @property
    def version_range(self) -> str:
        return f"[{self.since}, {self.until if self.until is not None else 'inf'})"

    def required_attributes(self) -> list[str]:
        return [k for k, v in self.attributes.items() if v is _REQUIRED]


_registry: dict[tuple[str, str], list[Kernel]] = {}
_lock = threading.Lock()
_loaded = False


def _signature(fn: Callable[..., Any]) -> dict[str, Any]:
    sig = inspect.signature(fn)
    inputs: list[str] = []
    min_inputs = 0
    variadic = False
    attributes: dict[str, Any] = {}
    any_attr = False
    specials = set()
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            inputs.append(p.name)
            if p.default is p.empty:
                min_inputs = len(inputs)
        elif p.kind == p.VAR_POSITIONAL:
            inputs.append(p.name)
            variadic = True
        elif p.kind == p.KEYWORD_ONLY:
            if p.name in SPECIAL_PARAMS:
                specials.add(p.name)
            else:
                attributes[p.name] = _REQUIRED if p.default is p.empty else p.default
        elif p.kind == p.VAR_KEYWORD:
            any_attr = True
    return dict(
        inputs=tuple(inputs),
        min_inputs=min_inputs,
        variadic=variadic,
        attributes=attributes,
        accepts_any_attribute=any_attr,
        wants_num_outputs="_num_outputs" in specials,
        wants_ctx="_ctx" in specials,
        wants_node="_node" in specials,
    )


def register(
    op_type: str,
    fn: Callable[..., Any],
    *,
    domain: str = DEFAULT_DOMAIN,
    since: int = 1,
    until: int | None = None,
    replace: bool = False,
    pure: bool = True,
    prepare: Callable[..., Any] | None = None,
) -> Kernel:
    """Register ``fn`` as the kernel of ``op_type`` for opsets ``since <= v < until``.

    Overlapping version ranges for the same (domain, op) raise at import time unless ``replace``.
    ``pure`` and ``prepare``: see the module's docstring.
    """
    domain = normalize_domain(domain)
    if until is not None and until <= since:
        raise RuntimeException(f"{op_type}: empty version range [{since}, {until})")
    kernel = Kernel(
        op_type=op_type,
        domain=domain,
        since=since,
        until=until,
        fn=fn,
        pure=pure,
        prepare=prepare,
        prepare_wants_constants=prepare is not None and _declares(prepare, "_constants"),
        **_signature(fn),
    )
    key = (domain, op_type)
    with _lock:
        existing = _registry.setdefault(key, [])
        clashes = [k for k in existing if _overlap(k, kernel)]
        if clashes and not replace:
            names = ", ".join(f"{k.fn.__module__}.{k.fn.__qualname__} {k.version_range}" for k in clashes)
            raise RuntimeException(
                f"operator {domain or 'ai.onnx'}::{op_type} {kernel.version_range} registered twice: "
                f"clashes with {names}"
            )
        for k in clashes:
            existing.remove(k)
        existing.append(kernel)
        existing.sort(key=lambda k: k.since)
    return kernel


def _declares(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes the keyword ``name`` (by name: ``**kwargs`` alone does not count)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _overlap(a: Kernel, b: Kernel) -> bool:
    a_end = a.until if a.until is not None else 1 << 30
    b_end = b.until if b.until is not None else 1 << 30
    return a.since < b_end and b.since < a_end


def op(
    op_type: str,
    *,
    domain: str = DEFAULT_DOMAIN,
    since: int = 1,
    until: int | None = None,
    pure: bool = True,
    prepare: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as the kernel of ``op_type`` for ``since <= opset < until``
    (``pure`` and ``prepare``: see the module's docstring)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(op_type, fn, domain=domain, since=since, until=until, pure=pure, prepare=prepare)
        return fn

    return deco


def custom_op(
    op_type: str, *, domain: str, since: int = 1, until: int | None = None, pure: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for user kernels (``onyx.custom_op``): like :func:`op`, but registering the same op
    again replaces the earlier kernel (re-running a notebook cell). Kernels live in the process that
    registered them: a worker process must import the module that defines them. ``pure=False`` for a
    kernel whose result is not a function of its inputs (never folded or cached)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(op_type, fn, domain=domain, since=since, until=until, replace=True, pure=pure)
        return fn

    return deco


def shape_rule(op_type: str, *, domain: str = DEFAULT_DOMAIN) -> Callable[[Callable], Callable]:
    """Decorator: attach a shape-inference rule to every registered version of ``op_type``."""

    def deco(fn: Callable) -> Callable:
        _shape_rules[(normalize_domain(domain), op_type)] = fn
        return fn

    return deco


_shape_rules: dict[tuple[str, str], Callable] = {}


def get_shape_rule(op_type: str, domain: str = DEFAULT_DOMAIN) -> Callable | None:
    key = (normalize_domain(domain), op_type)
    if key not in _shape_rules and not _loaded:
        _load_for(op_type)
        if key not in _shape_rules and key not in _registry:
            load_all()
    return _shape_rules.get(key)


_index: dict[str, list[str]] | None = None


def _norm(name: str) -> str:
    return name.lower().replace("_", "")


def _module_index() -> dict[str, list[str]]:
    """Operator modules by normalised file name ('mat_mul.py' -> 'matmul'), listed without importing."""
    global _index
    if _index is None:
        import onyx.ops as pkg

        index: dict[str, list[str]] = {}
        try:
            for fam, mod in _listed_modules(pkg.__path__):
                index.setdefault(_norm(mod), []).append(f"onyx.ops.{fam}.{mod}")
        except OSError:  # not plain folders (a zip import): pkgutil knows every importer
            index = {}
            for fam in pkgutil.iter_modules(pkg.__path__):
                if not fam.ispkg or fam.name.startswith("_"):
                    continue
                famdir = [f"{p}/{fam.name}" for p in pkg.__path__]
                for info in pkgutil.iter_modules(famdir):
                    if not info.name.startswith("_"):
                        index.setdefault(_norm(info.name), []).append(f"onyx.ops.{fam.name}.{info.name}")
        _index = index
    return _index


def _listed_modules(paths) -> list[tuple[str, str]]:
    """(family, module) for every public ``onyx/ops/<family>/<module>.py`` (or subpackage): one
    directory scan per family (pkgutil stats every entry: 8 ms against 1 at session creation)."""
    out = []
    for base in paths:
        with os.scandir(base) as families:
            fams = sorted(e.name for e in families if e.is_dir() and not e.name.startswith(("_", ".")))
        for fam in fams:
            folder = os.path.join(base, fam)
            if not os.path.isfile(os.path.join(folder, "__init__.py")):
                continue
            with os.scandir(folder) as entries:
                mods = sorted(
                    e.name[:-3] if e.name.endswith(".py") else e.name
                    for e in entries
                    if e.name[0] not in "_."
                    and (e.name.endswith(".py") or os.path.isfile(os.path.join(e.path, "__init__.py")))
                )
            out.extend((fam, m) for m in mods)
    return out


def _load_for(op_type: str) -> None:
    """Import the module(s) named after ``op_type`` (the one-op-per-file convention)."""
    for name in _module_index().get(_norm(op_type), []):
        importlib.import_module(name)


def load_all() -> None:
    """Import every module under ``onyx.ops`` once, so that their ``@op`` decorators run."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        _loaded = True
    import onyx.ops as pkg

    for info in pkgutil.walk_packages(pkg.__path__, prefix="onyx.ops."):
        if info.name.rsplit(".", 1)[-1].startswith("_") or info.name == __name__:
            continue
        importlib.import_module(info.name)


def lookup(op_type: str, domain: str, opset: int) -> Kernel:
    """The kernel for ``op_type`` in ``domain`` at ``opset``: the newest ``since <= opset < until``.

    Raises onyx's NotImplemented naming the op, domain and opset and listing the registered ranges.
    """
    domain = normalize_domain(domain)
    kernels = _registry.get((domain, op_type))
    if not kernels and not _loaded:
        _load_for(op_type)
        kernels = _registry.get((domain, op_type))
        if not kernels:
            load_all()
    kernels = _registry.get((domain, op_type), [])
    best = None
    for k in kernels:
        if k.since <= opset and (k.until is None or opset < k.until):
            if best is None or k.since > best.since:
                best = k
    if best is None:
        shown = domain or "ai.onnx"
        if kernels:
            ranges = ", ".join(k.version_range for k in kernels)
            raise OnyxNotImplemented(
                f"operator {shown}::{op_type} has no kernel for opset {opset}; registered versions: {ranges}"
            )
        raise OnyxNotImplemented(f"operator {shown}::{op_type} (opset {opset}) is not implemented")
    return best


def is_pure(op_type: str, domain: str, opset: int) -> bool:
    """Whether the kernel of ``op_type`` at ``opset`` declares its result a function of its inputs
    (``@op(..., pure=False)`` says it is not); an operator with no kernel counts as pure."""
    try:
        return lookup(op_type, domain, opset).pure
    except OnyxNotImplemented:
        return True


def registered() -> dict[tuple[str, str], list[Kernel]]:
    """A snapshot of the registry: (domain, op type) -> kernels sorted by ``since``."""
    load_all()
    with _lock:
        return {k: list(v) for k, v in _registry.items()}


def is_required(value: Any) -> bool:
    """Whether an attribute default is the marker for 'no default: the attribute is required'."""
    return value is _REQUIRED


def _per_thread_stops() -> Any:
    """A per-thread holder of the running run's stop (the runtime owns threads; ops only read it)."""
    from onyx.runtime.cancellation import PerThreadStop

    return PerThreadStop()


@dataclass
class KernelContext:
    """What a kernel may need from the run: seeds, thread count, the subgraph runner."""

    intra_op_num_threads: int = 0
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the session's use_deterministic_compute: kernels pick one path whatever the load and concurrency
    deterministic: bool = False
    # per calling thread: the stop of the run this thread is in (one context serves concurrent runs)
    _runs: Any = field(default_factory=_per_thread_stops, repr=False, compare=False)

    @property
    def stop(self) -> Any:
        """The running run's stop (onyx.runtime.cancellation.RunStop) on this thread, or None: a kernel
        that can run for long splits its work in blocks when there is one and calls ``stop.check(what)``
        between them (see onyx.kernels.blocks)."""
        return self._runs.stop

    def enter_run(self, stop: Any) -> Any:
        """Make ``stop`` this thread's run stop; returns the previous one, for :meth:`exit_run`."""
        previous = self._runs.stop
        self._runs.stop = stop
        return previous

    def exit_run(self, previous: Any) -> None:
        self._runs.stop = previous

    def rng(self, seed: float | None = None):
        """A numpy Generator: seeded from ``seed`` when the node has one."""
        import numpy as np

        if seed is not None:
            return np.random.default_rng(int(seed))
        return np.random.default_rng(self.seed)
