"""report(): how much noise quantization added, per tensor, measured on real data.

For every float tensor of the float model that the quantized model still has, the signal-to-quantization-
noise ratio SQNR = 10 log10(sum x^2 / sum (x - x_q)^2) in dB, summed over all batches (higher is better),
worst first. Tensors are matched by name: a QDQ model keeps activation names and its dequantized copy
is ``<name>_DequantizeLinear_Output``; a QOperator model renames a quantized tensor ``<name>_quantized``,
which is dequantized here (with the scale and zero point its readers use) before comparing, and its
Relu/Clip folded into the producer makes the producer's quantized output stand for the Relu's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Model
from onyx.quantization import _graph
from onyx.quantization.calibrate import iterate_reader


@dataclass
class TensorReport:
    """One tensor's noise: SQNR in dB (inf when identical), and the tensor it was read from."""

    name: str
    sqnr_db: float
    quantized_name: str
    signal_power: float
    noise_power: float


def _batches(data: Any) -> Iterable[dict]:
    if isinstance(data, dict):
        return [data]
    if hasattr(data, "get_next"):
        return iterate_reader(data)
    if isinstance(data, list | tuple):
        return data
    raise InvalidArgument(
        f"report needs a CalibrationDataReader, a feed dict or a list of feed dicts, "
        f"got {type(data).__name__}"
    )


def _qparams(q, depth: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """The scale and zero point a QOperator model reads ``q`` with: a reader takes (q, scale, zero point)."""
    for node, i in q.uses:
        if i + 2 < len(node.inputs):
            sc, zp = node.inputs[i + 1], node.inputs[i + 2]
            if sc is not None and zp is not None and sc.const is not None and zp.const is not None:
                s, z = sc.const.numpy(), zp.const.numpy()
                if s.dtype.kind == "f" and z.dtype.kind in "iu" and s.size == 1:
                    return s.reshape(()), z.reshape(())
    producer = q.producer
    if producer is None or depth > 32:
        return None
    at = _OUTPUT_PARAMS.get(producer.op_type)
    if at is not None and at + 1 < len(producer.inputs):
        sc, zp = producer.inputs[at], producer.inputs[at + 1]
        if sc is not None and zp is not None and sc.const is not None and zp.const is not None:
            return sc.const.numpy().reshape(()), zp.const.numpy().reshape(())
        return None
    # an operator that moves quantized values (MaxPool, Reshape...) keeps its input's parameters
    return (
        _qparams(producer.inputs[0], depth + 1)
        if producer.inputs and producer.inputs[0] is not None
        else None
    )


# where a quantizing operator reads its output's scale (the zero point follows)
_OUTPUT_PARAMS = {
    "QuantizeLinear": 1,
    "QLinearConv": 6,
    "QLinearMatMul": 6,
    "QLinearAdd": 6,
    "QLinearMul": 6,
    "QGemm": 7,
}


def _match(float_model: Model, quant_model: Model) -> dict[str, tuple[str, str, Any]]:
    """float tensor name -> (quantized model tensor, how to read it, dequantization parameters)."""
    qvalues = quant_model.graph.values()
    qinits = quant_model.graph.initializers
    out = {}
    for node in float_model.graph.nodes:
        for v in node.outputs:
            name = v.name
            if not name or not _graph.is_float(v):
                continue
            dq = name + "_DequantizeLinear_Output"
            if dq in qvalues:
                out[name] = (dq, "float", None)
            elif name in qvalues and _graph.is_float(qvalues[name]) and name not in qinits:
                out[name] = (name, "float", None)
            elif name + "_quantized" in qvalues:
                found = _qparams(qvalues[name + "_quantized"])
                if found is not None:
                    out[name] = (name + "_quantized", "dequantize", found)
    # QOperator folds a Relu/Clip into its producer: the producer's quantized output is the Relu's output
    for node in float_model.graph.nodes:
        if node.op_type in ("Relu", "Clip") and node.inputs and node.inputs[0] is not None:
            src, dst = node.inputs[0].name, node.outputs[0].name
            if dst not in out and src in out and out[src][1] == "dequantize":
                out[dst] = out.pop(src)
    return out


def report(
    float_model: str | os.PathLike | Model,
    quantized_model: str | os.PathLike | Model,
    data_reader_or_feeds: Any,
) -> list[TensorReport]:
    """Per-tensor SQNR (dB) between the float and the quantized model on the given data, worst first."""
    fm = _graph.load_model(float_model)
    qm = _graph.load_model(quantized_model)
    matches = _match(fm, qm)
    if not matches:
        return []
    fsess = _graph.session(_graph.with_outputs(fm, matches))
    qsess = _graph.session(_graph.with_outputs(qm, {m[0] for m in matches.values()}))
    fnames = [o.name for o in fsess.get_outputs()]
    qnames = [o.name for o in qsess.get_outputs()]
    inputs = _graph.graph_input_names(fm.graph)
    signal = dict.fromkeys(matches, 0.0)
    noise = dict.fromkeys(matches, 0.0)
    seen = 0
    for batch in _batches(data_reader_or_feeds):
        feeds = _graph.check_feeds(batch, inputs, "the report's data")
        fout = dict(zip(fnames, fsess.run(None, feeds), strict=True))
        qout = dict(zip(qnames, qsess.run(None, feeds), strict=True))
        for name, (qname, how, prm) in matches.items():
            x = np.asarray(fout[name], dtype=np.float64)
            y = np.asarray(qout[qname])
            y = (
                (y.astype(np.float64) - prm[1].astype(np.float64)) * prm[0].astype(np.float64)
                if how == "dequantize"
                else y.astype(np.float64)
            )
            if x.shape != y.shape:
                continue
            signal[name] += float(np.sum(x * x))
            noise[name] += float(np.sum((x - y) ** 2))
        seen += 1
    if seen == 0:
        raise InvalidArgument("the report's data gave no batch")
    rows = []
    for name, (qname, _, _) in matches.items():
        s, n = signal[name], noise[name]
        sqnr = float("inf") if n == 0 else (10.0 * np.log10(s / n) if s > 0 else float("-inf"))
        rows.append(TensorReport(name, sqnr, qname, s, n))
    rows.sort(key=lambda r: r.sqnr_db)
    return rows
