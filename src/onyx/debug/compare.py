"""Where two runs of a model part ways: two models (a model and its quantized, optimized or converted
version) or one model on two runtimes, compared value by value, blaming the first node that diverges.

The first node in topological order whose output disagrees is the one to look at: everything it reads
agreed (or is a weight or input that differs, which its report shows), so the difference starts there.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onyx.debug.feeds import random_feeds
from onyx.debug.intermediates import as_model, computed_names, given_values, topological_nodes
from onyx.debug.matching import match_values
from onyx.debug.runtimes import values_on
from onyx.debug.stats import ErrorFigures, error_figures
from onyx.errors import InvalidArgument, OnyxError
from onyx.ir.model import Model, Node

AGAINST = ("onnxruntime", "reference", "unoptimized")  # the peers of one model
TWO_MODEL_RUNTIMES = ("onyx", "onnxruntime", "reference")  # where two models both run

ModelLike = Model | str | os.PathLike | bytes


@dataclass
class ValueReport:
    """One value's comparison: the reference side's name, its stand-in on the other side, its producer."""

    name: str
    other: str
    node: str | None  # the producing node's name (None for graph inputs and initializers)
    op_type: str | None
    shape: list[int] | None
    dtype: str | None
    figures: ErrorFigures

    @property
    def agreed(self) -> bool:
        return self.figures.agreed

    def to_dict(self) -> dict[str, Any]:
        f = self.figures
        return {
            "name": self.name,
            "other_name": self.other,
            "node": self.node,
            "op_type": self.op_type,
            "shape": self.shape,
            "dtype": self.dtype,
            "agreed": f.agreed,
            **_figures_dict(f),
        }


@dataclass
class Divergence:
    """The first node whose output differs beyond tolerance: what it is, what it read, how far off."""

    node: str | None  # None when only a graph input or initializer differs
    op_type: str | None
    value: str
    other_value: str
    inputs: list[dict[str, Any]]  # {"name", "agreed": True / False / None (not compared)}
    figures: ErrorFigures

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "op_type": self.op_type,
            "value": self.value,
            "other_value": self.other_value,
            "inputs": self.inputs,
            **_figures_dict(self.figures),
        }


@dataclass
class CompareResult:
    """What :func:`compare` found: the first divergence (None when all agree) and the per-value table,
    worst first."""

    first_divergence: Divergence | None
    values: list[ValueReport]
    agreed: bool
    reference: str  # what the expected values came from
    compared: str  # what was checked against them
    rtol: float
    atol: float
    unmatched: list[str] = field(default_factory=list)  # reference values with no stand-in

    def to_dict(self) -> dict[str, Any]:
        return {
            "agreed": self.agreed,
            "reference": self.reference,
            "compared": self.compared,
            "rtol": self.rtol,
            "atol": self.atol,
            "first_divergence": self.first_divergence.to_dict() if self.first_divergence else None,
            "values": [v.to_dict() for v in self.values],
            "unmatched": list(self.unmatched),
        }

    def to_json(self, indent: int | None = None) -> str:
        """One JSON object (non-finite figures become the strings "inf", "-inf", "nan")."""
        return json.dumps(_finite(self.to_dict()), indent=indent)

    def summary(self, top: int = 10) -> str:
        """A few lines for a terminal: the verdict, the first divergence, the worst values."""
        lines = [
            f"{self.compared} vs {self.reference} (rtol={self.rtol:g}, atol={self.atol:g}): "
            f"{len(self.values)} values compared, "
            f"{sum(not v.agreed for v in self.values)} differ, {len(self.unmatched)} unmatched"
        ]
        d = self.first_divergence
        if d is None:
            lines.append("all values agree")
        else:
            where = f"node {d.node!r} ({d.op_type})" if d.node is not None else "a given value"
            lines.append(f"first divergence: {where}, value {d.value!r}: {_figures_text(d.figures)}")
            differ = [i["name"] for i in d.inputs if i["agreed"] is False]
            if differ:
                lines.append(f"  inputs that already differ: {', '.join(differ)}")
        width = max([len(v.name) for v in self.values[:top]] + [5])
        lines.append(
            f"{'value':<{width}}  {'op':<18} {'max abs':>10} {'max rel':>10} {'mismatch':>9}  cosine"
        )
        for v in self.values[:top]:
            f = v.figures
            cos = f"{f.cosine:.6f}" if f.cosine is not None else "-"
            flag = "" if f.agreed else "  DIFFERS"
            lines.append(
                f"{v.name:<{width}}  {(v.op_type or '-'):<18} {f.max_abs:>10.3g} {f.max_rel:>10.3g} "
                f"{f.mismatch_fraction:>8.2%}  {cos}{flag}{'  ' + f.note if f.note else ''}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def compare(
    model_a: ModelLike,
    model_b: ModelLike | None = None,
    feeds: dict[str, Any] | None = None,
    *,
    against: str | None = None,
    rtol: float = 1e-3,
    atol: float = 1e-5,
    seed: int = 0,
    dims: dict[str, int] | None = None,
    level: int = 99,
) -> CompareResult:
    """Compare every value of ``model_a`` with its counterpart and blame the first node that diverges.

    With ``model_b``, both models run (unoptimized, on onyx unless ``against`` names "onnxruntime" or
    "reference") and ``model_a`` is the reference; values match by name and through quantizers' renames.
    Without it, ``model_a`` runs on onyx (unoptimized) against ``against``: "onnxruntime" (the default),
    "reference" (onnx's ReferenceEvaluator), or "unoptimized" (onyx at ORT_DISABLE_ALL as the reference
    for onyx optimized at ``level``, over the values that survive optimization). ``feeds`` default to
    random inputs drawn from ``model_a``'s input types (``seed``; symbolic sizes from ``dims``, else 1).
    """
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    a = as_model(model_a)
    b = as_model(model_b) if model_b is not None else None
    feeds = _feeds(a, b, feeds, seed, dims)
    if b is not None:
        runtime = against or "onyx"
        if runtime not in TWO_MODEL_RUNTIMES:
            raise InvalidArgument(
                f"two models run on one of {', '.join(TWO_MODEL_RUNTIMES)}, got against={against!r}"
            )
        expected = {**given_values(a, feeds), **values_on(runtime, a, feeds)}
        feeds_b = _cast_floats(b, feeds)  # a float16 conversion takes float16 inputs
        actual = {**given_values(b, feeds_b), **values_on(runtime, b, feeds_b)}
        ref_label, cmp_label = f"model A on {runtime}", f"model B on {runtime}"
    else:
        runtime = against or "onnxruntime"
        if runtime not in AGAINST:
            raise InvalidArgument(f"against must be one of {', '.join(AGAINST)}, got {against!r}")
        if runtime == "unoptimized":
            expected = values_on("onyx", a, feeds)
            actual = values_on("optimized", a, feeds, level=level)
            ref_label, cmp_label = "onyx unoptimized", f"onyx optimized (level {level})"
        else:
            actual = values_on("onyx", a, feeds)  # first: a bad feed is reported by onyx, in its words
            expected = values_on(runtime, a, feeds)
            ref_label, cmp_label = runtime, "onyx"
    return _result(a, expected, actual, rtol, atol, ref_label, cmp_label)


def _result(
    model: Model,
    expected: dict[str, Any],
    actual: dict[str, Any],
    rtol: float,
    atol: float,
    ref_label: str,
    cmp_label: str,
) -> CompareResult:
    producers = {v.name: n for n in model.graph.nodes for v in n.outputs if v.name}
    order = [n for n in expected if n not in producers] + [n for n in computed_names(model) if n in expected]
    matches = match_values({n: expected[n] for n in order}, actual)
    reports: dict[str, ValueReport] = {}
    for name in order:
        if name in matches:
            label, value = matches[name]
            reports[name] = _report(name, label, producers.get(name), expected[name], value, rtol, atol)
    first = _first_divergence(model, reports)
    table = sorted(
        reports.values(), key=lambda r: (r.agreed, -r.figures.mismatch_fraction, -r.figures.max_abs)
    )
    return CompareResult(
        first_divergence=first,
        values=table,
        agreed=all(r.agreed for r in reports.values()),
        reference=ref_label,
        compared=cmp_label,
        rtol=rtol,
        atol=atol,
        unmatched=[n for n in order if n not in matches],
    )


def _report(
    name: str, other: str, node: Node | None, e: Any, a: Any, rtol: float, atol: float
) -> ValueReport:
    arr = e if isinstance(e, np.ndarray | np.generic) else None
    return ValueReport(
        name=name,
        other=other,
        node=node.name if node is not None else None,
        op_type=node.op_type if node is not None else None,
        shape=list(np.shape(arr)) if arr is not None else None,
        dtype=str(np.asarray(arr).dtype) if arr is not None else None,
        figures=error_figures(e, a, rtol, atol),
    )


def _first_divergence(model: Model, reports: dict[str, ValueReport]) -> Divergence | None:
    for node in topological_nodes(model):
        for v in node.outputs:
            r = reports.get(v.name)
            if r is not None and not r.agreed:
                inputs = [
                    {"name": i.name, "agreed": reports[i.name].agreed if i.name in reports else None}
                    for i in node.inputs
                    if i is not None and i.name
                ]
                return Divergence(node.name, node.op_type, r.name, r.other, inputs, r.figures)
    for r in reports.values():  # nothing computed differs, but a given value (a weight, an input) does
        if not r.agreed:
            return Divergence(None, None, r.name, r.other, [], r.figures)
    return None


def _feeds(
    a: Model, b: Model | None, feeds: dict[str, Any] | None, seed: int, dims: dict[str, int] | None
) -> dict[str, Any]:
    inputs_a = _input_names(a)
    if b is not None:
        inputs_b = _input_names(b)
        if set(inputs_a) != set(inputs_b):
            raise InvalidArgument(
                f"the models have different inputs: model A has {inputs_a}, model B has {inputs_b}"
            )
    if feeds is None:
        return random_feeds(a, seed, dims)
    if not isinstance(feeds, dict):
        raise InvalidArgument(f"feeds must be a dict of input name -> array, got {type(feeds).__name__}")
    allowed = set(inputs_a) | set(a.graph.initializers)
    unknown = sorted(set(feeds) - allowed)
    if unknown:
        raise InvalidArgument(f"unknown input name(s) {unknown}: the model's inputs are {inputs_a}")
    missing = [n for n in inputs_a if n not in feeds]
    if missing:
        filled = random_feeds(a, seed, dims)
        feeds = {**{n: filled[n] for n in missing}, **feeds}
    return {k: v if isinstance(v, np.ndarray | list | dict) else np.asarray(v) for k, v in feeds.items()}


def _cast_floats(m: Model, feeds: dict[str, Any]) -> dict[str, Any]:
    """``feeds`` with float arrays cast to the float type ``m`` declares for them (others unchanged)."""
    from onyx.ir.dtypes import DataType
    from onyx.ir.types import TensorType

    out = dict(feeds)
    for v in m.graph.inputs:
        x = feeds.get(v.name)
        if not isinstance(x, np.ndarray) or not isinstance(v.type, TensorType) or not v.type.elem_type:
            continue
        try:
            want = DataType(v.type.elem_type).numpy_dtype
        except (ValueError, OnyxError):
            continue
        if want != x.dtype and _is_float(want) and _is_float(x.dtype):
            out[v.name] = x.astype(want)
    return out


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or (dt.kind == "V" and dt.itemsize <= 4)


def _input_names(m: Model) -> list[str]:
    return [v.name for v in m.graph.inputs if v.name not in m.graph.initializers]


def _tolerance(name: str, x: Any) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be a number, got {x!r}") from None
    if not x >= 0:
        raise InvalidArgument(f"{name} must be a non-negative number, got {x}")
    return x


def _figures_dict(f: ErrorFigures) -> dict[str, Any]:
    return {
        "max_abs": f.max_abs,
        "max_rel": f.max_rel,
        "mismatches": f.mismatches,
        "size": f.size,
        "mismatch_fraction": f.mismatch_fraction,
        "cosine": f.cosine,
        "note": f.note,
    }


def _figures_text(f: ErrorFigures) -> str:
    cos = f", cosine {f.cosine:.6f}" if f.cosine is not None else ""
    note = f" ({f.note})" if f.note else ""
    return (
        f"max abs {f.max_abs:.3g}, max rel {f.max_rel:.3g}, {f.mismatches} of {f.size} elements "
        f"({f.mismatch_fraction:.2%}) beyond tolerance{cos}{note}"
    )


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x
