"""Where a model's time goes: run it with profiling on and summarise the trace per op type and per node.

The trace is the Chrome-trace JSON that ``SessionOptions.enable_profiling`` writes (onnxruntime's event
format, so traces of onnxruntime itself read the same way): one ``<node>_kernel_time`` event per node run.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument, NoSuchFile

KERNEL_SUFFIX = "_kernel_time"


# -- inputs --------------------------------------------------------------------------------------------
def _numpy_dtype(type_name: str) -> np.dtype:
    """numpy's dtype for an onnxruntime type string such as ``tensor(float)``."""
    from onyx.ir.dtypes import DataType, to_numpy

    if not (type_name.startswith("tensor(") and type_name.endswith(")")):
        raise InvalidArgument(f"cannot make a random input of type {type_name}: pass it with --input")
    elem = type_name[len("tensor(") : -1]
    for dt in DataType:
        if dt != DataType.UNDEFINED and dt.onnx_name == elem:
            return to_numpy(dt)
    raise InvalidArgument(f"cannot make a random input of type {type_name}: pass it with --input")


def random_feeds(
    inputs: Sequence[Any],
    given: dict[str, np.ndarray] | None = None,
    dims: dict[str, int] | None = None,
    batch: int | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Feeds for a session's ``get_inputs()``: the ``given`` arrays, random ones for the rest.

    A symbolic or unknown dim takes its value from ``dims`` (by name), else ``batch`` when it is the first
    dim, else 1. Integers are 0 or 1 (valid as token ids, masks, segment ids and indices of any axis);
    floats are standard normal. Unknown names in ``given`` or ``dims`` are errors, not silently ignored.
    """
    given = dict(given or {})
    dims = dict(dims or {})
    names = [a.name for a in inputs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise InvalidArgument(f"--input {', '.join(unknown)}: the model's inputs are {names}")
    symbols = {d for a in inputs for d in (a.shape or []) if isinstance(d, str)}
    stray = sorted(set(dims) - symbols)
    if stray:
        raise InvalidArgument(
            f"--dim {', '.join(stray)}: the model's symbolic dims are {sorted(symbols) or 'none'}"
        )
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for a in inputs:
        if a.name in given:
            feeds[a.name] = given[a.name]
            continue
        shape = []
        for i, d in enumerate(a.shape or []):
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif isinstance(d, str) and d in dims:
                shape.append(dims[d])
            else:
                shape.append(batch if (i == 0 and batch) else 1)
        dtype = _numpy_dtype(a.type)
        if dtype == np.bool_:
            feeds[a.name] = rng.integers(0, 2, shape).astype(np.bool_)
        elif np.issubdtype(dtype, np.integer):
            feeds[a.name] = rng.integers(0, 2, shape).astype(dtype)
        elif dtype == np.dtype(object):
            feeds[a.name] = np.full(shape, "a", dtype=object)
        else:
            feeds[a.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def parse_dims(items: Iterable[str]) -> dict[str, int]:
    """``NAME=V`` items (``--dim batch=4``) as a dict."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            n = int(value)
        except ValueError:
            n = -1
        if not sep or not name or n < 0:
            raise InvalidArgument(f"--dim expects NAME=V with V a non-negative integer, got {item!r}")
        out[name] = n
    return out


# -- reading traces ------------------------------------------------------------------------------------
def load_trace(source: str | os.PathLike | list | dict) -> list[dict]:
    """The events of a Chrome trace: a path, or the parsed JSON (a list, or ``{"traceEvents": [...]}``)."""
    data: Any = source
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise NoSuchFile(f"profile {path!r} does not exist")
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (ValueError, UnicodeDecodeError) as e:
            raise InvalidArgument(f"profile {path!r} is not JSON: {e}") from None
    if isinstance(data, dict):
        data = data.get("traceEvents")
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise InvalidArgument("a profile is a JSON list of trace events (or {'traceEvents': [...]})")
    return data


@dataclass
class NodeTime:
    """One node's time over every run of a trace."""

    name: str
    op_type: str
    total_us: float = 0.0
    calls: int = 0
    input_shapes: list = field(default_factory=list)


def node_times(events: list[dict]) -> dict[str, NodeTime]:
    """Per node name (``<name>_kernel_time`` without the suffix): op type, total time, calls, input
    shapes of its first run. Other events (model_run, onnxruntime's fence_before/after) are skipped."""
    out: dict[str, NodeTime] = {}
    for e in events:
        name = e.get("name")
        if e.get("cat") != "Node" or not isinstance(name, str) or not name.endswith(KERNEL_SUFFIX):
            continue
        args = e.get("args") or {}
        node = name[: -len(KERNEL_SUFFIX)]
        t = out.get(node)
        if t is None:
            t = out[node] = NodeTime(node, str(args.get("op_name", "?")), input_shapes=_shapes(args))
        t.total_us += float(e.get("dur", 0))
        t.calls += 1
    return out


def _shapes(args: dict) -> list:
    shapes = []
    for item in args.get("input_type_shape") or []:
        if isinstance(item, dict):
            shapes.extend(item.values())
    return shapes


@dataclass
class OpTime:
    op_type: str
    total_us: float = 0.0
    calls: int = 0
    nodes: int = 0


def op_times(times: dict[str, NodeTime]) -> list[OpTime]:
    """Per op type, the slowest first."""
    ops: dict[str, OpTime] = {}
    for t in times.values():
        o = ops.setdefault(t.op_type, OpTime(t.op_type))
        o.total_us += t.total_us
        o.calls += t.calls
        o.nodes += 1
    return sorted(ops.values(), key=lambda o: -o.total_us)


def format_report(times: dict[str, NodeTime], runs: int, top: int = 20) -> str:
    """The two tables ``onyx profile`` prints: per op type, then the ``top`` slowest nodes."""
    total = sum(t.total_us for t in times.values()) or 1.0
    runs = max(runs, 1)
    lines = [f"{'op type':<28} {'total ms':>10} {'share':>7} {'calls':>7} {'mean us':>10}"]
    for o in op_times(times):
        lines.append(
            f"{o.op_type[:28]:<28} {o.total_us / 1e3:>10.3f} {100 * o.total_us / total:>6.1f}%"
            f" {o.calls:>7} {o.total_us / max(o.calls, 1):>10.1f}"
        )
    per_run = f"({total / runs / 1e3:.3f} ms a run)"
    lines.append(f"{'all nodes':<28} {total / 1e3:>10.3f} {100.0:>6.1f}%   {per_run}")
    lines.append("")
    lines.append(f"top {min(top, len(times))} nodes")
    lines.append(f"{'node':<36} {'op type':<20} {'total ms':>10} {'share':>7} {'calls':>6}  input shapes")
    for t in sorted(times.values(), key=lambda t: -t.total_us)[:top]:
        shapes = " ".join(str(s).replace(" ", "") for s in t.input_shapes)
        lines.append(
            f"{_clip(t.name, 36):<36} {t.op_type[:20]:<20} {t.total_us / 1e3:>10.3f}"
            f" {100 * t.total_us / total:>6.1f}% {t.calls:>6}  {shapes}"
        )
    return "\n".join(lines)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else "..." + s[-(n - 3) :]


# -- profiling a model ---------------------------------------------------------------------------------
def profile_model(
    model: str | os.PathLike | bytes,
    feeds: dict[str, np.ndarray] | None = None,
    runs: int = 10,
    output: str | None = None,
    level: int = 99,
    dims: dict[str, int] | None = None,
    warmup: int = 1,
    each: Callable[[Iterable[int]], Iterable[int]] = lambda it: it,
) -> tuple[list[dict], str | None]:
    """Run ``model`` ``warmup`` + ``runs`` times with profiling on; return (the trace events of the last
    ``runs`` runs, path written or None).

    The warm-up runs are left out of the trace: a first run pays for one-time work (weights packed,
    shapes cached) that is not what the model costs. Missing feeds are random (:func:`random_feeds`);
    ``each`` wraps the run loop (a progress bar). The trace goes to ``output`` when given (written to a
    temporary name, then renamed).
    """
    from onyx.runtime.options import SessionOptions
    from onyx.runtime.session import InferenceSession

    if runs < 1 or warmup < 0:
        raise InvalidArgument(f"--runs must be at least 1 and --warmup at least 0, got {runs} and {warmup}")
    if output is not None:
        folder = os.path.dirname(os.path.abspath(output))
        if os.path.isdir(output) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise InvalidArgument(f"cannot write the trace to {output!r}: not a file in a writable folder")
    with tempfile.TemporaryDirectory(prefix="onyx_profile_") as tmp:
        so = SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "trace")
        so.graph_optimization_level = level
        sess = InferenceSession(model if isinstance(model, bytes) else os.fspath(model), so)
        feeds = random_feeds(sess.get_inputs(), feeds, dims)
        for _ in range(warmup):
            sess.run(None, feeds)
        for _ in each(range(runs)):
            sess.run(None, feeds)
        events = _without_first_runs(load_trace(sess.end_profiling()), warmup)
    if output is not None:
        staged = os.path.join(folder, f".{os.path.basename(output)}.tmp")
        try:
            with open(staged, "w", encoding="utf-8") as fh:
                json.dump(events, fh)
            os.replace(staged, output)
        finally:
            if os.path.exists(staged):
                os.unlink(staged)
    return events, output


def _without_first_runs(events: list[dict], count: int) -> list[dict]:
    """The events after the first ``count`` runs (the runs are sequential: one ``model_run`` each)."""
    if count <= 0:
        return events
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    if len(runs) <= count:
        return []
    start = runs[count]["ts"]
    return [e for e in events if e.get("ts", 0) >= start]
