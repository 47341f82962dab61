"""The values of every node of one model on one runtime: onyx, onnxruntime or onnx's reference evaluator.

Each function returns ``{name: value}`` for the main graph's computed values in topological order; the
peers run a copy of the model whose every value is made a graph output (onnxruntime, like onyx, keeps
graph outputs alive through its optimizations).
"""

from __future__ import annotations

from typing import Any

from onyx.debug.intermediates import computed_names, run_all
from onyx.errors import Fail, InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ir.model import Model

RUNTIMES = ("onnxruntime", "reference", "unoptimized")


def onyx_values(model: Model, feed: dict[str, Any], level: int = 0) -> dict[str, Any]:
    """onyx's values: the unoptimized graph (``level=0``), or what survives optimizing at ``level``."""
    return run_all(model, feed, level=level)


def onnxruntime_values(model: Model, feed: dict[str, Any]) -> dict[str, Any]:
    """onnxruntime's values, from a copy of the model with every value as a graph output."""
    try:
        import onnxruntime
    except ImportError:
        raise OnyxNotImplemented("comparing against onnxruntime needs the onnxruntime package") from None
    data, names = _all_outputs_bytes(model)
    if not names:
        return {}
    try:
        sess = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        outs = sess.run(names, feed)
    except Exception as e:  # noqa: BLE001 - the peer's own exception types: reported as onyx's
        raise Fail(f"onnxruntime could not run the model: {type(e).__name__}: {e}") from None
    return dict(zip(names, outs))


def reference_values(model: Model, feed: dict[str, Any]) -> dict[str, Any]:
    """onnx's ReferenceEvaluator's values (slow, but written straight from the specification)."""
    try:
        import onnx
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        raise OnyxNotImplemented("comparing against the reference evaluator needs the onnx package") from None
    data, names = _all_outputs_bytes(model)
    try:
        ref = ReferenceEvaluator(onnx.load_from_string(data))
        results = ref.run(None, feed, intermediate=True)
    except Exception as e:  # noqa: BLE001 - the peer's own exception types: reported as onyx's
        raise Fail(f"onnx's reference evaluator could not run the model: {type(e).__name__}: {e}") from None
    return {n: results[n] for n in names if n in results}


def _all_outputs_bytes(model: Model) -> tuple[bytes, list[str]]:
    from onyx.model_io import serialize
    from onyx.runtime.intermediates import with_outputs

    m = model.clone()
    names = computed_names(m)
    return serialize(with_outputs(m, names)), names


def values_on(runtime: str, model: Model, feed: dict[str, Any], level: int = 99) -> dict[str, Any]:
    """The values of ``model`` on ``runtime`` ("onyx", "onnxruntime", "reference", "optimized")."""
    if runtime == "onyx":
        return onyx_values(model, feed)
    if runtime == "optimized":
        return onyx_values(model, feed, level=level)
    if runtime == "onnxruntime":
        return onnxruntime_values(model, feed)
    if runtime == "reference":
        return reference_values(model, feed)
    raise InvalidArgument(f"unknown runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
