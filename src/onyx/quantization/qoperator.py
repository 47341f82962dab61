"""QOperator format (static: QLinearConv, QLinearMatMul, QGemm, QLinearAdd/Mul/Concat/Sigmoid...) and dynamic
quantization (DynamicQuantizeLinear + ConvInteger / MatMulInteger + Cast + Mul), written as
onnxruntime's ONNXQuantizer writes them: one walk over the nodes in order, each either replaced by its
quantized form or kept float with DequantizeLinear nodes in front of the quantized inputs it reads.

Names follow onnxruntime: ``X_quantized`` / ``X_scale`` / ``X_zero_point`` for a quantized tensor,
``<node>_quant`` for the quantized node, ``X_QuantizeLinear`` / ``X_DequantizeLinear`` for the converters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onyx.ir.builder import make_attr
from onyx.ir.dtypes import DataType
from onyx.ir.model import Model, Node, Value
from onyx.quantization import _graph, params
from onyx.quantization.calibrate import TensorData
from onyx.quantization.options import Options
from onyx.quantization.qdq import activation_params, adjust_ranges
from onyx.quantization.types import numpy_dtype

MS = "com.microsoft"
DIRECT_8BIT = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "MaxPool"}


@dataclass
class QValue:
    q: Value
    scale: Value
    zero_point: Value
    axis: int | None = None


def _suffix(node: Node, text: str) -> str:
    return node.name + text if node.name else ""


class QOperatorQuantizer:
    def __init__(self, model: Model, ranges: dict[str, TensorData] | None, opts: Options, static: bool):
        self.model = model
        self.graph = model.graph
        self.opts = opts
        self.static = static
        self.opset = _graph.opset(model)
        self.names = _graph.Names(self.graph)
        ranges = dict(ranges or {})
        if static:
            adjust_ranges(model, ranges, opts)
        self.act = {k: activation_params(td, {}, opts) for k, td in ranges.items()}
        self.qmap: dict[str, QValue] = {}
        self.param_inits: dict[str, tuple[Value, Value]] = {}
        self.generated: set[str] = set(_graph.graph_input_names(self.graph))
        self.new_nodes: list[Node] = []
        self.values = self.graph.values()
        self.dq_made: dict[str, Node] = {}
        self.extra_mul: dict[str, Value] = {}

    # -- helpers -------------------------------------------------------------------------------
    def _init(self, name: str, array) -> Value:
        old = self.graph.initializers.get(name)
        if old is not None:
            return old
        self.names.used.add(name)
        return _graph.add_initializer(self.graph, name, np.asarray(array))

    def _emit(self, node: Node) -> Node:
        node.graph = self.graph
        self.new_nodes.append(node)
        for o in node.outputs:
            self.generated.add(o.name)
        return node

    def _params_for(self, name: str) -> tuple[Value, Value] | None:
        """``name_scale`` / ``name_zero_point`` initializers from the calibrated range, if any."""
        if name in self.param_inits:
            return self.param_inits[name]
        p = self.act.get(name)
        if p is None:
            return None
        zp = self._init(name + "_zero_point", np.asarray(p.zero_point, numpy_dtype(p.elem_type)))
        sc = self._init(name + "_scale", np.asarray(p.scale))
        self.param_inits[name] = (sc, zp)
        return sc, zp

    def _quantize_initializer(self, v: Value, weight: bool, reduce_range: bool, axis: int | None) -> QValue:
        if v.name in self.qmap:
            return self.qmap[v.name]
        qt = self.opts.weight_type if weight else self.opts.activation_type
        data = v.const.numpy()
        if axis is not None:
            axis = axis + data.ndim if axis < 0 else axis
            symmetric = self.opts.weight_symmetric(qt)
        elif qt == self.opts.weight_type:
            symmetric = self.opts.weight_symmetric(qt)
        else:
            symmetric = self.opts.activation_symmetric
        zp, scale = params.data_params(
            data if axis is not None else data.reshape(-1),
            qt,
            symmetric,
            self.opts.reduce_range and reduce_range,
            self.opts.extra.get("MinimumRealRange"),
            axis=axis,
        )
        q = params.quantize_values(data, scale, zp, qt, axis)
        qv = QValue(
            self._init(v.name + "_quantized", q),
            self._init(v.name + "_scale", scale.astype(data.dtype)),
            self._init(v.name + "_zero_point", zp),
            axis,
        )
        self.qmap[v.name] = qv
        return qv

    def _quantize_input(
        self,
        node: Node,
        i: int,
        weight: bool = False,
        reduce_range: bool = False,
        axis: int | None = None,
        pending: list | None = None,
    ) -> QValue | None:
        v = node.inputs[i]
        if v is None:
            return None
        if v.name in self.qmap:
            return self.qmap[v.name]
        if v.const is not None:
            return self._quantize_initializer(v, weight, reduce_range, axis)
        qname = v.name + "_quantized"
        if self.static:
            found = self._params_for(v.name)
            if found is None:
                return None
            sc, zp = found
            q = _graph.new_value(qname, int(zp.const.data_type), v)
            n = _graph.make_node("QuantizeLinear", [v, sc, zp], [q], v.name + "_QuantizeLinear")
        else:
            q = _graph.new_value(qname, int(DataType.UINT8), v)
            sc = _graph.new_value(v.name + "_scale", v.elem_type)
            zp = _graph.new_value(v.name + "_zero_point", int(DataType.UINT8))
            n = _graph.make_node("DynamicQuantizeLinear", [v], [q, sc, zp], v.name + "_QuantizeLinear")
        (pending if pending is not None else self.new_nodes).append(n)
        qv = QValue(q, sc, zp)
        self.qmap[v.name] = qv
        return qv

    def _flush(self, pending: list[Node]) -> None:
        for n in pending:
            self._emit(n)

    def _dequantize(self, v: Value | None) -> None:
        """Put a DequantizeLinear in front of a float reader of a quantized value (named as the value)."""
        if v is None or v.name not in self.qmap or v.name in self.generated or v.name in self.dq_made:
            return
        qv = self.qmap[v.name]
        n = _graph.make_node(
            "DequantizeLinear",
            [qv.q, qv.scale, qv.zero_point],
            [],
            v.name + "_DequantizeLinear",
            axis=qv.axis,
        )
        n.append_output(v)
        self.dq_made[v.name] = n
        self._emit(n)

    def _keep_float(self, node: Node) -> None:
        for v in node.inputs:
            self._dequantize(v)
        self._emit(node)

    def _output_value(self, node: Node, name: str, elem_type: int) -> Value:
        self.names.used.add(name)
        return _graph.new_value(name, elem_type, node.outputs[0])

    # -- static operators ----------------------------------------------------------------------
    def _qlinear(self, node: Node) -> bool:
        op = node.op_type
        out = node.outputs[0]
        outp = (
            self._params_for(out.name) if op in ("Conv", "MatMul", "Gemm", "Add", "Mul", "Concat") else None
        )
        pending: list[Node] = []
        if op == "Conv":
            if outp is None:
                return False
            x = self._quantize_input(node, 0, pending=pending)
            if x is None:
                return False
            w_axis = 0 if self.opts.per_channel and node.inputs[1].const is not None else None
            w = self._quantize_input(
                node, 1, weight=True, reduce_range=w_axis is not None or self.opts.reduce_range, axis=w_axis
            )
            if w is None:
                return False
            inputs = [x.q, x.scale, x.zero_point, w.q, w.scale, w.zero_point, outp[0], outp[1]]
            if len(node.inputs) > 2 and node.inputs[2] is not None:
                inputs.append(self._bias(node.inputs[2], x, w, node.inputs[1]))
            self._flush(pending)
            self._replace(node, "QLinearConv", inputs, outp, "")
            return True
        if op in ("MatMul", "Gemm"):
            if outp is None or not self._matmul_ok(node):
                return False
            x = self._quantize_input(node, 0, pending=pending)
            if x is None or node.inputs[1] is None:
                return False
            if op == "Gemm":
                axis = (
                    (0 if node.attr("transB", 0) else 1)
                    if self.opts.per_channel and node.inputs[1].const is not None
                    else None
                )
                w = self._quantize_input(node, 1, weight=True, reduce_range=True, axis=axis)
            else:
                axis = -1 if self.opts.per_channel and node.inputs[1].const is not None else None
                w = self._quantize_input(node, 1, weight=True, reduce_range=True, axis=axis, pending=pending)
            if w is None:
                return False
            inputs = [x.q, x.scale, x.zero_point, w.q, w.scale, w.zero_point]
            if op == "Gemm":
                bias = ""
                if len(node.inputs) > 2 and node.inputs[2] is not None:
                    if node.inputs[2].const is None:
                        return False
                    bias = self._bias(node.inputs[2], x, w, node.inputs[1], float(node.attr("beta", 1.0)))
                inputs += [bias or None, outp[0], outp[1]]
                self._flush(pending)
                attrs = {k: a for k, a in node.attributes.items() if k != "beta"}
                self._replace(node, "QGemm", inputs, outp, MS, attrs)
            else:
                self._flush(pending)
                self._replace(node, "QLinearMatMul", inputs + [outp[0], outp[1]], outp, "")
            return True
        if op in ("Add", "Mul"):
            if outp is None:
                return False
            a = self._quantize_input(node, 0, pending=pending)
            b = self._quantize_input(node, 1, pending=pending)
            if a is None or b is None:
                return False
            self._flush(pending)
            self._replace(
                node,
                "QLinear" + op,
                [a.q, a.scale, a.zero_point, b.q, b.scale, b.zero_point, outp[0], outp[1]],
                outp,
                MS,
            )
            return True
        if op == "Concat":
            if outp is None:
                return False
            parts = [self._quantize_input(node, i, pending=pending) for i in range(len(node.inputs))]
            if any(p is None for p in parts):
                return False
            self._flush(pending)
            inputs = [outp[0], outp[1]] + [v for p in parts for v in (p.q, p.scale, p.zero_point)]
            self._replace(node, "QLinearConcat", inputs, outp, MS)
            return True
        if op in ("Sigmoid", "LeakyRelu", "Softmax", "GlobalAveragePool"):
            return self._qlinear_unary(node)
        if op in ("Relu", "Clip"):
            src = node.inputs[0]
            if src is None or src.name not in self.qmap or self.opts.activation_symmetric:
                return False
            self.qmap[out.name] = self.qmap[src.name]
            node.detach()
            return True
        return False

    def _fixed_params(self, name: str, scale: float, zero_point: int) -> tuple[Value, Value] | None:
        """Output parameters onnxruntime fixes for some operators (Softmax, NNAPI's Sigmoid)."""
        if name not in self.act:
            return None
        dtype = numpy_dtype(self.opts.activation_type)
        zp = self._init(name + "_zero_point", np.array(zero_point, dtype))
        sc = self._init(name + "_scale", np.array(scale, np.asarray(self.act[name].scale).dtype))
        self.param_inits[name] = (sc, zp)
        return sc, zp

    def _qlinear_unary(self, node: Node) -> bool:
        """QLinearSigmoid / QLinearLeakyRelu / QLinearSoftmax / QLinearGlobalAveragePool (com.microsoft)."""
        op, out = node.op_type, node.outputs[0]
        attrs = dict(node.attributes)
        if op == "GlobalAveragePool":
            x = self.qmap.get(node.inputs[0].name)
            if x is None:
                return False
            outp = self._params_for(out.name) or (x.scale, x.zero_point)
            attrs["channels_last"] = make_attr("channels_last", 0)
            self._replace(
                node, "QLinear" + op, [x.q, x.scale, x.zero_point, outp[0], outp[1]], outp, MS, attrs
            )
            return True
        if op == "Softmax":
            zero = 0 if self.opts.activation_type == DataType.UINT8 else -128
            outp = self._fixed_params(out.name, 1 / 256.0, zero)
            attrs["opset"] = make_attr("opset", self.opset)
        elif op == "Sigmoid" and self.opts.flag("extra.Sigmoid.nnapi"):
            outp = self._fixed_params(out.name, 1 / 256.0, 0)
        else:
            outp = self._params_for(out.name)
        pending: list[Node] = []
        x = self._quantize_input(node, 0, pending=pending)
        if outp is None or x is None:
            return False
        self._flush(pending)
        self._replace(node, "QLinear" + op, [x.q, x.scale, x.zero_point, outp[0], outp[1]], outp, MS, attrs)
        return True

    def _matmul_ok(self, node: Node) -> bool:
        if not (_graph.is_float(node.inputs[0]) or _graph.is_float(node.inputs[1])):
            return False
        if self.opts.flag("MatMulConstBOnly") and node.inputs[1] is not None and node.inputs[1].const is None:
            return False
        return True

    def _bias(self, b: Value, x: QValue, w: QValue, weight: Value, beta: float = 1.0) -> Value:
        if b.name in self.qmap:
            return self.qmap[b.name].q
        w_scale = w.scale.const.numpy()
        x_scale = x.scale.const.numpy()
        w_zp = w.zero_point.const.numpy()
        if w_zp.size and not w_zp.any() and self.opts.weight_type == DataType.INT8:
            new = params.adjust_weight_scale_for_bias(
                x_scale, w_scale, b.const.numpy(), self.opts.per_channel
            )
            if new is not None:
                self._requantize(weight, w, new)
                w_scale = new
        q, _ = params.quantize_bias(b.const.numpy(), x_scale, w_scale, beta)
        v = self._init(b.name + "_quantized", q)
        self.qmap[b.name] = QValue(v, w.scale, w.zero_point)
        return v

    def _requantize(self, weight: Value, w: QValue, scale: np.ndarray) -> None:
        data = weight.const.numpy()
        zp = w.zero_point.const.numpy()
        for v, arr in (
            (w.scale, scale.astype(data.dtype).reshape(w.scale.const.dims)),
            (w.q, params.quantize_values(data, scale, zp, int(w.q.const.data_type), w.axis)),
        ):
            t = _graph.add_initializer(self.graph, v.name, arr)
            v.const = t.const

    def _replace(
        self, node: Node, op_type: str, inputs: list, outp, domain: str, attrs: dict | None = None
    ) -> None:
        out = node.outputs[0]
        sc, zp = outp
        qout = self._output_value(node, out.name + "_quantized", int(zp.const.data_type))
        new = _graph.make_node(op_type, inputs, [qout], _suffix(node, "_quant"), domain=domain)
        new.attributes = dict(node.attributes if attrs is None else attrs)
        self._emit(new)
        self.qmap[out.name] = QValue(qout, sc, zp)
        node.detach()

    def _direct(self, node: Node) -> bool:
        if node.op_type == "MaxPool" and self.opset < 12:
            return False
        src = node.inputs[0]
        if self.opts.flag("ForceQuantizeNoInputCheck") and src is not None and src.name not in self.qmap:
            if src.const is not None:
                return False
            pending: list[Node] = []
            if self._quantize_input(node, 0, pending=pending) is None:
                return False
            self._flush(pending)
        if src is None or src.name not in self.qmap:
            return False
        qin = self.qmap[src.name]
        out = node.outputs[0]
        qout = self._output_value(node, out.name + "_quantized", int(qin.q.elem_type or DataType.UINT8))
        node.set_input(0, qin.q)
        node.outputs[0] = qout
        qout.producer, qout.index = node, 0
        out.producer = None
        self.qmap[out.name] = QValue(qout, qin.scale, qin.zero_point, qin.axis)
        self._emit(node)
        return True

    # -- dynamic operators ---------------------------------------------------------------------
    def _integer(self, node: Node) -> bool:
        op = node.op_type
        if op == "MatMul":
            if not self._matmul_ok(node):
                return False
            x = self._quantize_input(node, 0)
            w = self._quantize_input(
                node,
                1,
                weight=True,
                reduce_range=True,
                axis=-1 if self.opts.per_channel and node.inputs[1].const is not None else None,
            )
            return self._integer_tail(node, "MatMulInteger", x, w, {})
        if op == "Conv":
            x = self._quantize_input(node, 0)
            w = self._quantize_input(node, 1, weight=True, reduce_range=self.opts.reduce_range)
            return self._integer_tail(node, "ConvInteger", x, w, dict(node.attributes))
        return False

    def _integer_tail(
        self, node: Node, op_type: str, x: QValue | None, w: QValue | None, attrs: dict
    ) -> bool:
        if x is None or w is None:
            return False
        out = node.outputs[0]
        name = _suffix(node, "_quant")
        int_out = self._output_value(node, out.name + "_output_quantized", int(DataType.INT32))
        n = _graph.make_node(op_type, [x.q, w.q, x.zero_point, w.zero_point], [int_out], name)
        n.attributes = attrs
        self._emit(n)
        cast_out = self._output_value(node, int_out.name + "_cast_output", out.elem_type)
        self._emit(
            _graph.make_node("Cast", [int_out], [cast_out], int_out.name + "_cast", to=out.elem_type or 1)
        )
        mul_name = name + "_scales_mul" if name else x.scale.name + "_" + w.scale.name + "_mul"
        scales = self.extra_mul.get(mul_name)
        if scales is None:
            scales = _graph.new_value(mul_name + ":0", out.elem_type)
            self._emit(_graph.make_node("Mul", [x.scale, w.scale], [scales], mul_name))
            self.extra_mul[mul_name] = scales
        has_bias = op_type == "ConvInteger" and len(node.inputs) > 2 and node.inputs[2] is not None
        node.detach()
        if not has_bias:
            self._emit(
                _graph.make_node("Mul", [cast_out, scales], [out], _suffix(node, "_quant_output_scale_mul"))
            )
            return True
        scaled = self._output_value(node, out.name + "quant_scaled_output", out.elem_type)
        self._emit(
            _graph.make_node("Mul", [cast_out, scales], [scaled], _suffix(node, "_quant_output_scale_mul"))
        )
        rank = len(node.inputs[1].const.dims) if node.inputs[1].const is not None else 4
        shape = np.ones(rank, np.int64)
        shape[1] = -1
        shp = self._init(out.name + "_bias_reshape_shape", shape)
        reshaped = self._output_value(node, out.name + "_bias_reshape_output", out.elem_type)
        self._emit(_graph.make_node("Reshape", [node.inputs[2], shp], [reshaped], None))
        self._emit(_graph.make_node("Add", [scaled, reshaped], [out], out.name + "_bias_add"))
        return True

    def _gemm_to_matmul(self) -> None:
        """Dynamic mode first rewrites Gemm (alpha = beta = 1, no transA) as MatMul (+ Add), as ORT does."""
        nodes = []
        transposed: dict[str, Value] = {}
        for node in self.graph.nodes:
            if (
                node.op_type != "Gemm"
                or node.attr("alpha", 1.0) != 1.0
                or node.attr("beta", 1.0) != 1.0
                or node.attr("transA", 0)
            ):
                nodes.append(node)
                continue
            a, b = node.inputs[0], node.inputs[1]
            if node.attr("transB", 0):
                if b.const is not None:
                    if b.name not in transposed:
                        name = b.name + "_Transposed"
                        k = 0
                        while any(
                            name + s in self.names.used for s in ("", "_quantized", "_scale", "_zero_point")
                        ):
                            k += 1
                            name = f"{b.name}_Transposed_{k}"
                        for s in ("", "_quantized", "_scale", "_zero_point"):
                            self.names.used.add(name + s)
                        transposed[b.name] = _graph.add_initializer(
                            self.graph, name, b.const.numpy().T.copy()
                        )
                    b = transposed[b.name]
                else:
                    tb = _graph.new_value(self.names.take(b.name + "_Transposed"), b.elem_type)
                    nodes.append(
                        _graph.make_node("Transpose", [b], [tb], _suffix(node, "_Transpose") or None)
                    )
                    b = tb
            out = node.outputs[0]
            has_c = len(node.inputs) > 2 and node.inputs[2] is not None
            c = node.inputs[2] if has_c else None
            node.detach()
            if has_c:
                mm_out = _graph.new_value(self.names.take(out.name + "_MatMul"), out.elem_type, out)
                mm = _graph.make_node("MatMul", [a, b], [mm_out], _suffix(node, "_MatMul") or None)
                add = _graph.make_node("Add", [mm_out, c], [], _suffix(node, "_Add") or None)
                add.append_output(out)
                nodes += [mm, add]
            else:
                mm = _graph.make_node("MatMul", [a, b], [], _suffix(node, "_MatMul") or None)
                mm.append_output(out)
                nodes.append(mm)
        for n in nodes:
            n.graph = self.graph
        self.graph.nodes[:] = nodes

    # -- driver --------------------------------------------------------------------------------
    def run(self) -> Model:
        if not self.static:
            self._gemm_to_matmul()
            from onyx.shape_inference import infer_shapes

            infer_shapes(self.model)
            self.names = _graph.Names(self.graph)
        for node in list(self.graph.nodes):
            before = set(self.qmap)
            done = False
            first = node.inputs[0] if node.inputs else None
            if self.opts.should_quantize(node) and (
                first is None or _graph.is_float(first) or node.op_type in ("MatMul", "Gemm")
            ):
                if node.op_type in DIRECT_8BIT:
                    done = self._direct(node)
                elif self.static:
                    done = self._qlinear(node)
                else:
                    done = self._integer(node)
            if not done:
                emitted = {id(n) for n in self.new_nodes}
                for k in set(self.qmap) - before:  # a half-quantized node: forget its unwritten converters
                    q = self.qmap[k].q
                    if q.const is None and id(q.producer) not in emitted:
                        del self.qmap[k]
                self._keep_float(node)
        for v in self.graph.outputs:
            self._dequantize(v)
        self.graph.nodes[:] = self.new_nodes
        _graph.drop_unused_initializers(self.graph)
        _graph.toposort(self.graph)
        if any(n.domain == MS for n in self.graph.nodes) and MS not in self.model.opsets:
            self.model.opset_imports.append((MS, 1))
        return self.model
