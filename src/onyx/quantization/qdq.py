"""QDQ format: QuantizeLinear/DequantizeLinear pairs around the quantized operators, as onnxruntime's
QDQQuantizer writes them (same tensor and node names, same rules per operator type).

Two passes, as there: each node to quantize *marks* the tensors it wants quantized (activations,
weights with their per-channel axis, outputs that share their input's parameters, int32 biases); then
the marks are *emitted* as initializers and Q/DQ nodes. A Relu or Clip that follows a quantized tensor
is removed when activations are asymmetric (its range is folded into the producer's output).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Model, Node, Value
from onyx.quantization import _graph, params
from onyx.quantization.calibrate import TensorData
from onyx.quantization.options import Options, override_type
from onyx.quantization.types import numpy_dtype, qrange

# operators whose output reuses the input's scale and zero point
DIRECT_8BIT = {
    "Reshape",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "AveragePool",
    "Slice",
    "TopK",
    "MaxPool",
    "Resize",
}
REMOVABLE = {"Relu", "Clip"}
NORMALIZATION = {"InstanceNormalization", "LayerNormalization", "BatchNormalization"}
# the op types onnxruntime's QDQ quantizer (and its QOperator registry) knows; default op_types_to_quantize
QDQ_OPS = {
    "Conv",
    "ConvTranspose",
    "Gemm",
    "Clip",
    "Relu",
    "Reshape",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "Resize",
    "MaxPool",
    "AveragePool",
    "Slice",
    "Pad",
    "MatMul",
    "Split",
    "Gather",
    "GatherElements",
    "Where",
    "InstanceNormalization",
    "LayerNormalization",
    "BatchNormalization",
    "TopK",
    "CumSum",
}
QLINEAR_OPS = {
    "ArgMax",
    "Conv",
    "Gemm",
    "MatMul",
    "Add",
    "Mul",
    "Relu",
    "Clip",
    "LeakyRelu",
    "Sigmoid",
    "MaxPool",
    "GlobalAveragePool",
    "Split",
    "Pad",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "Resize",
    "AveragePool",
    "Concat",
    "Softmax",
    "Where",
    "Gather",
    "Transpose",
    "EmbedLayerNormalization",
}
STATIC_OPS = QDQ_OPS | QLINEAR_OPS


@dataclass
class Mark:
    weight: bool = False
    axis: int | None = None
    provider: tuple[str, Node] | None = None  # (input name, node): share that input's parameters


@dataclass
class QParams:
    zero_point: np.ndarray
    scale: np.ndarray
    elem_type: int
    axis: int | None = None


@dataclass
class Emitted:
    scale: Value
    zero_point: Value


def adjust_ranges(model: Model, ranges: dict[str, TensorData], opts: Options) -> None:
    """Relu/Clip inputs take their output's range (the activation is folded); Softmax outputs [0, 1]."""
    for node in model.graph.nodes:
        if not opts.should_quantize(node):
            continue
        if node.op_type in REMOVABLE:
            src, dst = node.inputs[0], node.outputs[0]
            if src is None or len({id(n) for n, _ in src.uses}) != 1:
                continue
            if src.name in ranges and dst.name in ranges:
                ranges[src.name] = ranges[dst.name]
        elif node.op_type == "Softmax":
            ranges[node.outputs[0].name] = TensorData(lowest=np.float32(0.0), highest=np.float32(1.0))


def activation_params(td: TensorData, override: dict, opts: Options, name: str = "") -> QParams:
    """Scale and zero point of an activation from its calibrated range and the user's overrides."""
    qt = override_type(override, opts.activation_type)
    if "scale" in override:
        return QParams(
            np.array(override["zero_point"], numpy_dtype(qt)), np.array(override["scale"], np.float32), qt
        )
    if qt == params.FLOAT8:
        std = getattr(td, "std", None)
        if std is None:
            raise InvalidArgument(
                f"FLOAT8E4M3FN quantization of tensor {name!r} needs its distribution (Distribution "
                "calibration); it has only a range (another calibration method, or a Softmax output's "
                "fixed [0, 1])"
            )
        return QParams(np.zeros((), numpy_dtype(qt)), params.float8_scale(std, f"tensor {name!r}"), qt)
    lo, hi = td.range_value
    lo = np.asarray(override.get("rmin", lo), dtype=np.asarray(lo).dtype)
    hi = np.asarray(override.get("rmax", hi), dtype=np.asarray(hi).dtype)
    symmetric = override.get("symmetric", opts.activation_symmetric)
    qmin, qmax = qrange(qt, override.get("reduce_range", False), symmetric)
    min_real = opts.extra.get("MinimumRealRange")
    zp, scale = params.compute_scale_zp(lo, hi, qmin, qmax, symmetric, min_real)
    return QParams(zp.astype(numpy_dtype(qt)).squeeze(), scale.squeeze(), qt)


class QDQQuantizer:
    def __init__(self, model: Model, ranges: dict[str, TensorData], opts: Options):
        self.model = model
        self.graph = model.graph
        self.opts = opts
        self.opset = _graph.opset(model)
        self.ranges = dict(ranges)
        adjust_ranges(model, self.ranges, opts)
        self.act_params = {
            name: activation_params(td, self._override(name), opts, name) for name, td in self.ranges.items()
        }
        self.marks: dict[str, Mark] = {}
        self.biases: dict[str, tuple[Node, str, str, float]] = {}
        self.removed: list[Node] = []
        self.init_params: dict[str, QParams] = {}
        self.done: dict[str, Emitted] = {}
        self.names = _graph.Names(self.graph)
        self.exclude_output_ops = set(opts.extra.get("OpTypesToExcludeOutputQuantization", []) or [])
        self.axis_by_op = dict(opts.extra.get("QDQOpTypePerChannelSupportToAxis", {}) or {})

    # -- marking -------------------------------------------------------------------------------
    def _override(self, name: str) -> dict:
        items = self.opts.overrides.get(name)
        return items[0] if items else {}

    def _values(self) -> dict[str, Value]:
        return self.graph.values()

    def _quantizable(self, v: Value | None) -> bool:
        return v is not None and bool(v.name) and _graph.is_float(v)

    def _mark(self, v: Value | None, weight: bool = False, axis: int | None = None, provider=None) -> None:
        if not self._quantizable(v):
            return
        if provider is not None:
            self.marks[v.name] = Mark(weight, None, provider)
        elif v.name not in self.marks:
            self.marks[v.name] = Mark(weight, axis)

    def _marked(self, v: Value | None) -> bool:
        return v is not None and (v.name in self.marks or v.name in self.biases)

    def _per_channel_axis(self, v: Value, default_axis: int, op_type: str | None = None) -> int | None:
        if v.const is None:
            return None
        items = self.opts.overrides.get(v.name)
        if items and "axis" not in items[0]:
            return None  # per-tensor overrides
        has_channel_overrides = bool(items)
        if not self.opts.per_channel and not has_channel_overrides:
            return None
        axis = self.axis_by_op.get(op_type, default_axis) if op_type else default_axis
        if has_channel_overrides:
            axis = items[0]["axis"]
        rank = len(v.const.dims)
        axis = axis + rank if axis < 0 else axis
        return axis if 0 <= axis < rank else None

    def _weight(self, node: Node, i: int, default_axis: int, op_type: str | None = None) -> None:
        v = node.inputs[i] if i < len(node.inputs) else None
        if v is None:
            return
        axis = self._per_channel_axis(v, default_axis, op_type)
        self._mark(v, weight=True, axis=axis)

    def _out(self, node: Node) -> bool:
        return node.op_type not in self.exclude_output_ops

    def _bias(self, node: Node, beta: float = 1.0) -> None:
        b = node.inputs[2]
        if b is None or b.const is None or not _graph.is_float(b):
            return
        if self.opts.overrides.get(b.name):
            self._weight(node, 2, 0)
            return
        if b.name in self.biases:  # a bias shared by two nodes: each gets its own copy
            copy = _graph.add_initializer(self.graph, self.names.take(b.name), b.const.numpy())
            node.set_input(2, copy)
            b = copy
        self.biases[b.name] = (node, node.inputs[0].name, node.inputs[1].name, beta)

    def mark_node(self, node: Node) -> None:
        op = node.op_type
        ins, out0 = node.inputs, node.outputs[0] if node.outputs else None
        if op in ("Conv", "ConvTranspose"):
            self._mark(ins[0])
            if self._out(node):
                self._mark(out0)
            self._weight(node, 1, 0 if op == "Conv" else 1)
            if len(ins) > 2:
                self._bias(node)
        elif op == "Gemm":
            self._mark(ins[0])
            if self._out(node):
                self._mark(out0)
            self._weight(node, 1, 0 if node.attr("transB", 0) else 1)
            if len(ins) > 2 and ins[2] is not None and ins[2].const is not None:
                self._bias(node, float(node.attr("beta", 1.0)))
                if "beta" in node.attributes:
                    node.attributes["beta"].value = 1.0
        elif op == "MatMul":
            for v in (*ins, *([out0] if self._out(node) else [])):
                if v is not None and v.const is not None:
                    self._mark(v, weight=True, axis=self._per_channel_axis(v, 1, op))
                else:
                    self._mark(v)
        elif op in NORMALIZATION:
            self._mark(ins[0])
            scale = ins[1] if len(ins) > 1 else None
            if scale is not None:
                axis = self._per_channel_axis(scale, 1, op)
                if scale.const is not None:
                    self._mark(scale, weight=True, axis=axis)
                else:
                    self._mark(scale)
            if len(ins) > 2 and ins[2] is not None:
                self._bias(node)
            if self._out(node):
                for v in node.outputs:
                    self._mark(v)
        elif op in REMOVABLE:
            if not self._marked(ins[0]):
                return
            if not (
                self.opts.activation_symmetric or self.opts.flag("QDQKeepRemovableActivations")
            ) and self._fold_into_producer(node):
                self.removed.append(node)
            else:
                self._mark(ins[0])
            if self._out(node):
                self._mark(out0)
        elif op == "MaxPool" and self.opts.activation_type == params.FLOAT8:
            return  # as onnxruntime: MaxPool stays float (unquantized) with float8 activations
        elif op in DIRECT_8BIT and not (op == "MaxPool" and self.opset < 12):
            if self.opts.flag("ForceQuantizeNoInputCheck"):
                self._mark(ins[0])
                if self._out(node):
                    self._mark(out0, provider=(ins[0].name, node))
            elif self._marked(ins[0]) and self._out(node):
                self._mark(out0, provider=(ins[0].name, node))
        else:
            for v in (*ins, *(node.outputs if self._out(node) else [])):
                self._mark(v)

    def _fold_into_producer(self, node: Node) -> bool:
        """Make the producer of a Relu/Clip input write the Relu's output directly (the Relu goes)."""
        up, out = node.inputs[0], node.outputs[0]
        if out.name not in self.act_params or up.name not in self.act_params:
            return False
        producer = up.producer
        if producer is None or up.const is not None or len({id(n) for n, _ in up.uses}) != 1:
            return False
        if any(v is up for v in self.graph.outputs):
            return False
        producer.outputs[up.index] = out
        out.producer, out.index = producer, up.index
        up.producer = None
        self.marks.pop(up.name, None)
        return True

    # -- parameters ----------------------------------------------------------------------------
    def _initializer_params(self) -> None:
        values = self._values()
        for name, mark in self.marks.items():
            v = values.get(name)
            if v is None or v.const is None:
                continue
            data = v.const.numpy()
            items = self.opts.overrides.get(name) or [{}]
            first = items[0]
            qt = override_type(first, self.opts.weight_type if mark.weight else self.opts.activation_type)
            axis = first.get("axis", mark.axis)
            if axis is not None:
                axis = axis + data.ndim if axis < 0 else axis
                if not 0 <= axis < data.ndim:
                    raise InvalidArgument(
                        f"per-channel axis {first.get('axis', mark.axis)} is out of range for "
                        f"weight {name!r} of rank {data.ndim}"
                    )
            if "scale" in first:
                zps = np.array([d["zero_point"] for d in items], numpy_dtype(qt))
                scales = np.array([d["scale"] for d in items], data.dtype)
                if axis is None:
                    zps, scales = zps[0], scales[0]
                self.init_params[name] = QParams(zps, scales, qt, axis)
                continue
            if qt == params.FLOAT8:
                if first.get("reduce_range", self.opts.reduce_range):
                    raise InvalidArgument(f"reduce_range is not supported for FLOAT8E4M3FN tensor {name!r}")
                zp, scale = params.float8_data_params(data.reshape(-1) if axis is None else data, name, axis)
                self.init_params[name] = QParams(zp, scale, qt, axis)
                continue
            default_sym = axis is not None or (
                self.opts.weight_symmetric(qt) if mark.weight else self.opts.activation_symmetric
            )
            symmetric = first.get("symmetric", default_sym)
            reduce = first.get("reduce_range", self.opts.reduce_range)
            zp, scale = params.data_params(
                data.reshape(-1) if axis is None else data,
                qt,
                symmetric,
                reduce,
                self.opts.extra.get("MinimumRealRange"),
                first.get("rmin"),
                first.get("rmax"),
                axis,
            )
            self.init_params[name] = QParams(zp, scale, qt, axis)

    def _adjust_for_bias(self) -> None:
        if self.opts.flag("QDQDisableWeightAdjustForInt32Bias"):
            return
        values = self._values()
        for bias_name, (_, input_name, weight_name, _) in self.biases.items():
            if input_name not in self.act_params or input_name not in self.marks:
                continue
            wp = self.init_params.get(weight_name)
            if wp is None or wp.elem_type not in (3, 5) or np.asarray(wp.zero_point).any():
                continue
            new = params.adjust_weight_scale_for_bias(
                self.act_params[input_name].scale,
                wp.scale,
                values[bias_name].const.numpy(),
                wp.axis is not None,
            )
            if new is not None:
                wp.scale = new

    # -- emitting ------------------------------------------------------------------------------
    def _scale_zp(self, base: str, p: QParams) -> Emitted:
        zp = _graph.add_initializer(
            self.graph,
            self.names.take(base + "_zero_point"),
            np.asarray(p.zero_point, numpy_dtype(p.elem_type)),
        )
        sc = _graph.add_initializer(self.graph, self.names.take(base + "_scale"), np.asarray(p.scale))
        return Emitted(sc, zp)

    def _node(self, op: str, inputs: list, outputs: list, name: str, axis: int | None = None) -> Node:
        n = _graph.make_node(op, inputs, outputs, self.names.take(name), axis=axis)
        self.graph.append_node(n)
        return n

    def _emit_initializer(self, v: Value) -> None:
        p = self.init_params[v.name]
        e = self._scale_zp(v.name, p)
        deq = _graph.new_value(self.names.take(v.name + "_DequantizeLinear_Output"), v.const.data_type, v)
        v.replace_all_uses_with(deq)
        if self.opts.flag("AddQDQPairToWeight"):
            q = _graph.new_value(self.names.take(v.name + "_QuantizeLinear_Output"), p.elem_type, v)
            self._node("QuantizeLinear", [v, e.scale, e.zero_point], [q], v.name + "_QuantizeLinear", p.axis)
        else:
            data = params.quantize_values(v.const.numpy(), p.scale, p.zero_point, p.elem_type, p.axis)
            q = _graph.add_initializer(self.graph, self.names.take(v.name + "_quantized"), data)
        self._node(
            "DequantizeLinear", [q, e.scale, e.zero_point], [deq], v.name + "_DequantizeLinear", p.axis
        )
        self.done[v.name] = e

    def _emit_activation(self, v: Value, e: Emitted, elem_type: int) -> None:
        name = v.name
        if any(o is v for o in self.graph.outputs) and v.producer is not None:
            pre = _graph.new_value(self.names.take(name + "_QuantizeLinear_Input"), v.elem_type, v)
            producer, idx = v.producer, v.index
            producer.outputs[idx] = pre
            pre.producer, pre.index = producer, idx
            q_in, deq = pre, v
        else:
            deq = _graph.new_value(self.names.take(name + "_DequantizeLinear_Output"), v.elem_type, v)
            v.replace_all_uses_with(deq)
            q_in = v
        q = _graph.new_value(self.names.take(name + "_QuantizeLinear_Output"), elem_type, v)
        self._node("QuantizeLinear", [q_in, e.scale, e.zero_point], [q], name + "_QuantizeLinear")
        dq = self._node("DequantizeLinear", [q, e.scale, e.zero_point], [deq], name + "_DequantizeLinear")
        if deq is v:
            v.producer, v.index = dq, 0
        self.done[name] = e

    def _emit_bias(self, name: str, node: Node, input_name: str, weight_name: str, beta: float) -> None:
        w, x = self.done.get(weight_name), self.done.get(input_name)
        values = self._values()
        b = values[name]
        if w is None or x is None or b.const is None:
            return  # its input or weight stayed float: the bias stays float too
        if self.opts.weight_type == params.FLOAT8:
            self._emit_float8_bias(name, b)
            return
        q, scale = params.quantize_bias(b.const.numpy(), x.scale.const.numpy(), w.scale.const.numpy(), beta)
        qv = _graph.add_initializer(self.graph, self.names.take(name + "_quantized"), q)
        sv = _graph.add_initializer(self.graph, self.names.take(name + "_quantized_scale"), scale)
        zp = np.zeros(scale.shape, np.int32) if scale.size > 1 else np.array(0, np.int32)
        zv = _graph.add_initializer(self.graph, self.names.take(name + "_quantized_zero_point"), zp)
        del self.graph.initializers[name]
        out = _graph.new_value(name, b.const.data_type, b)
        b.replace_all_uses_with(out)
        self.graph.inputs[:] = [i for i in self.graph.inputs if i is not b]
        self._node(
            "DequantizeLinear", [qv, sv, zv], [out], name + "_DequantizeLinear", 0 if scale.size > 1 else None
        )

    def _emit_float8_bias(self, name: str, b: Value) -> None:
        """With float8 weights onnxruntime keeps the bias float: a float32 copy Cast back to the bias's
        type (float8 GEMMs take a float bias), plus a unit scale and a float8 zero point left unused."""
        data = b.const.numpy()
        if data.dtype not in (np.float32, np.float16):
            raise InvalidArgument(
                f"bias {name!r} of a float8 node must be float32 or float16, got {data.dtype}"
            )
        copy = _graph.add_initializer(
            self.graph, self.names.take(name + "_quantized"), data.astype(np.float32)
        )
        _graph.add_initializer(self.graph, self.names.take(name + "_quantized_scale"), np.ones(1, np.float32))
        _graph.add_initializer(
            self.graph,
            self.names.take(name + "_quantized_zero_point"),
            np.zeros(1, numpy_dtype(params.FLOAT8)),
        )
        del self.graph.initializers[name]
        out = _graph.new_value(name, b.const.data_type, b)
        b.replace_all_uses_with(out)
        self.graph.inputs[:] = [i for i in self.graph.inputs if i is not b]
        cast = _graph.make_node(
            "Cast", [copy], [out], self.names.take(name + "_DequantizeLinear"), to=int(b.const.data_type)
        )
        self.graph.append_node(cast)

    def run(self) -> Model:
        for node in list(self.graph.nodes):
            if self.opts.should_quantize(node):
                self.mark_node(node)
        if self.opset < 13 and any(m.axis is not None for m in self.marks.values()):
            raise InvalidArgument(
                f"per-channel quantization needs opset >= 13; the model has opset {self.opset}"
            )
        self._initializer_params()
        self._adjust_for_bias()
        values = self._values()
        shared = {}
        for name, mark in list(self.marks.items()):
            if mark.provider is not None:
                shared[name] = mark
                continue
            v = values.get(name)
            if v is None or name in self.done:
                continue
            if v.producer is not None and v.producer.op_type == "DequantizeLinear":
                continue  # already quantized in the model
            if v.const is not None:
                self._emit_initializer(v)
                continue
            p = self.act_params.get(name)
            if p is None:
                raise InvalidArgument(f"no calibrated range for tensor {name!r}: quantizing it needs one")
            self._emit_activation(v, self._scale_zp(name, p), p.elem_type)
        while shared:
            progressed = False
            for name, mark in list(shared.items()):
                src = mark.provider[0]
                if src in self.done:
                    e = self.done[src]
                    del shared[name]
                    self._emit_activation(values[name], e, int(e.zero_point.const.data_type))
                    progressed = True
            if not progressed:
                break  # their inputs stayed float: so do they
        if self.opts.extra.get("QuantizeBias", True):
            for name, (node, input_name, weight_name, beta) in self.biases.items():
                self._emit_bias(name, node, input_name, weight_name, beta)
        for node in self.removed:
            self.graph.remove_node(node)
        if not self.opts.flag("AddQDQPairToWeight"):
            _graph.drop_unused_initializers(self.graph)
        _graph.toposort(self.graph)
        return self.model
