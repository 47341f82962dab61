"""Weight-only blockwise quantization of MatMul weights (onnxruntime's ``MatMulNBitsQuantizer``).

Each MatMul whose weight B is a float initializer of shape (K, N) is rewritten, with the weight
quantized to 2, 4 or 8 bits in blocks of ``block_size`` along K:

* QOperator (default): one com.microsoft ``MatMulNBits`` node; its initializers are byte-for-byte
  the ones onnxruntime writes (packing and rounding in :mod:`onyx.quantization._nbits_pack`);
* QDQ (4 bits): an opset-21 blockwise ``DequantizeLinear`` on an INT4 (symmetric) / UINT4 weight
  feeding the MatMul, the model's opset raised to 21 and its IR version to 10 when lower.

With "Gather" in ``op_types_to_quantize`` (QOperator, 4 bits), each Gather of a float initializer (an
embedding table) becomes a com.microsoft ``GatherBlockQuantized`` over an INT4 (symmetric) / UINT4
table blocked along ``quant_axes["Gather"]`` (default 1), the numbers of
:mod:`onyx.quantization._nbits_gather`; the model's opset goes to 21 and IR version to 10 as for QDQ.

Names follow onnxruntime (``<B>_Q4``, ``<B>_scales``, ``<B>_zero_points``; ``<node>_Q4``), so a
script written for ``onnxruntime.quantization`` runs unchanged with ``onyx.quantization``. Two
algorithms exist: ``DEFAULT`` (MLAS's min/max rounding, what onnxruntime uses by default) and
``RTN`` (onnxruntime's round-to-nearest port from Neural Compressor, with per-weight clip ratios).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ir.model import Graph, Model, Node, Value
from onyx.ir.tensor import Tensor
from onyx.ir.types import Shape, TensorType
from onyx.quantization._nbits_gather import gather_int4_weights
from onyx.quantization._nbits_model import NBitsModel
from onyx.quantization._nbits_pack import matmul_nbits_weights, qdq_int4_weights
from onyx.quantization._nbits_rtn import rtn_matmul_nbits_weights

logger = logging.getLogger(__name__)

MS_DOMAIN = "com.microsoft"
_FLOAT, _FLOAT16, _BFLOAT16 = 1, 10, 16


def _format_name(quant_format: Any) -> str:
    """'QOperator' or 'QDQ' from onnxruntime's / onyx's QuantFormat, its name, or its value (0 / 1)."""
    name = getattr(quant_format, "name", quant_format)
    if name in (0, "QOperator"):
        return "QOperator"
    if name in (1, "QDQ"):
        return "QDQ"
    raise InvalidArgument(
        f"quant_format must be QuantFormat.QOperator or QuantFormat.QDQ, got {quant_format!r}"
    )


class WeightOnlyQuantConfig:
    """What every weight-only algorithm's configuration holds (onnxruntime's base class)."""

    def __init__(
        self,
        algorithm: str,
        quant_format: Any = "QOperator",
        op_types_to_quantize: Iterable[str] | None = None,
        quant_axes: Iterable[tuple[str, int]] | None = None,
        customized_weight_config: dict | None = None,
    ):
        self.algorithm = algorithm
        self.quant_format = quant_format
        self.op_types_to_quantize = set(op_types_to_quantize) if op_types_to_quantize else {"MatMul"}
        self.quant_axes = dict(quant_axes) if quant_axes else {"MatMul": 0, "Gather": 1}
        self.customized_weight_config = customized_weight_config


class DefaultWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    """MLAS's blockwise min/max quantization (onnxruntime's default algorithm)."""

    def __init__(
        self,
        block_size: int = 128,
        is_symmetric: bool = False,
        accuracy_level: int | None = None,
        quant_format: Any = "QOperator",
        op_types_to_quantize: Iterable[str] | None = None,
        quant_axes: Iterable[tuple[str, int]] | None = None,
        bits: int = 4,
        channel_wised_quantize: bool = False,
    ):
        super().__init__("DEFAULT", quant_format, op_types_to_quantize, quant_axes)
        self.block_size = block_size
        self.is_symmetric = is_symmetric
        self.bits = bits
        self.accuracy_level = accuracy_level
        self.channel_wised_quantize = channel_wised_quantize
        if channel_wised_quantize and _format_name(quant_format) == "QOperator":
            raise OnyxNotImplemented("QuantFormat.QOperator does not support channel_wised_quantize")


class RTNWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    """Round-to-nearest with optional clip ratios per weight name (``ratios={"W": 0.9}``); QOperator
    only, as in onnxruntime."""

    def __init__(
        self,
        ratios: dict[str, float] | None = None,
        quant_format: Any = "QOperator",
        op_types_to_quantize: Iterable[str] | None = None,
        customized_weight_config: dict | None = None,
    ):
        if _format_name(quant_format) != "QOperator":
            raise InvalidArgument("RTN weight-only quantization supports the QOperator format only")
        super().__init__(
            "RTN", quant_format, op_types_to_quantize, customized_weight_config=customized_weight_config
        )
        self.ratios = dict(ratios or {})


def _load(model: Any) -> tuple[Model, str | None]:
    if isinstance(model, Model):
        return model, None
    if isinstance(model, str | os.PathLike):
        from onyx.model_io import load

        return load(model), os.fspath(model)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        from onyx.model_io import load

        return load(model.SerializeToString()), None
    raise InvalidArgument(
        f"MatMulNBitsQuantizer expects a model path, an onyx Model or an onnx ModelProto, "
        f"got {type(model).__name__}"
    )


class MatMulNBitsQuantizer:
    """Quantize the constant weights of MatMul nodes to 2/4/8 bits, blockwise (see the module)."""

    def __init__(
        self,
        model: Model | str | os.PathLike,
        bits: int = 4,
        block_size: int = 128,
        is_symmetric: bool = False,
        accuracy_level: int | None = None,
        nodes_to_exclude: Iterable[str] | None = None,
        nodes_to_include: Iterable[str] | None = None,
        quant_format: Any = "QOperator",
        op_types_to_quantize: Iterable[str] | None = None,
        quant_axes: Iterable[tuple[str, int]] | None = None,
        channel_wised_quantize: bool = False,
        algo_config: WeightOnlyQuantConfig | None = None,
    ):
        onyx_model, self.model_path = _load(model)
        self.model = NBitsModel(onyx_model)
        self.bits = bits
        self.block_size = block_size
        self.is_symmetric = is_symmetric
        self.accuracy_level = accuracy_level
        self.nodes_to_exclude = set(nodes_to_exclude or [])
        self.nodes_to_include = set(nodes_to_include) if nodes_to_include else None
        if algo_config is None:
            algo_config = DefaultWeightOnlyQuantConfig(
                block_size=block_size,
                is_symmetric=is_symmetric,
                accuracy_level=accuracy_level,
                quant_format=quant_format,
                op_types_to_quantize=op_types_to_quantize,
                quant_axes=quant_axes,
                bits=bits,
                channel_wised_quantize=channel_wised_quantize,
            )
        if not isinstance(algo_config, WeightOnlyQuantConfig):
            raise InvalidArgument(
                f"algo_config must be a WeightOnlyQuantConfig, got {type(algo_config).__name__}"
            )
        if algo_config.algorithm not in ("DEFAULT", "RTN"):
            raise OnyxNotImplemented(
                f"weight-only algorithm {algo_config.algorithm!r} is not implemented in onyx "
                "(DEFAULT and RTN are)"
            )
        self.algo_config = algo_config
        bits = getattr(algo_config, "bits", bits)
        if bits not in (2, 4, 8):
            raise InvalidArgument(f"bits must be 2, 4 or 8, got {bits}")
        if algo_config.algorithm == "RTN" and bits not in (4, 8):
            raise InvalidArgument(f"RTN quantizes to 4 or 8 bits, got {bits}")
        bs = getattr(algo_config, "block_size", block_size)
        if not isinstance(bs, int | np.integer) or bs < 16 or bs & (bs - 1):
            raise InvalidArgument(f"block_size must be a power of two >= 16, got {bs!r}")
        self._format = _format_name(algo_config.quant_format)
        if self._format == "QDQ" and bits != 4:
            raise InvalidArgument(f"the QDQ format quantizes MatMul weights to 4 bits only, got bits={bits}")
        known = {"MatMul", "Gather"} if algo_config.algorithm == "DEFAULT" else {"MatMul"}
        unknown = algo_config.op_types_to_quantize - known
        if unknown:
            raise OnyxNotImplemented(
                f"{algo_config.algorithm} weight-only quantization of {sorted(unknown)} is not implemented "
                f"in onyx ({' and '.join(sorted(known))} are)"
            )

    # -- driving ------------------------------------------------------------------------------
    def process(self) -> None:
        """Quantize the model in place (``self.model.model``), subgraphs included."""
        m = self.model
        if self._format == "QOperator":
            m.set_opset_import(MS_DOMAIN, 1)
        if self._format == "QDQ" or "Gather" in self.algo_config.op_types_to_quantize:
            if m.model.opsets.get("", 1) < 21:
                logger.warning("opset below 21 has no int4 type: raising the model's opset to 21")
                m.set_opset_import("", 21)
            if (m.model.ir_version or 0) < 10:
                m.model.ir_version = 10
        self._process_graph([m.model.graph])

    def _process_graph(self, stack: list[Graph]) -> None:
        graph = stack[-1]
        for node in list(graph.nodes):
            for sub in node.subgraphs():
                self._process_graph([*stack, sub])
            if node.name in self.nodes_to_exclude:
                continue
            listed = bool(self.nodes_to_include) and node.name in self.nodes_to_include
            wanted = listed or node.op_type in self.algo_config.op_types_to_quantize
            if not wanted or node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "MatMul":
                self._quantize_matmul(node, stack)
            elif node.op_type == "Gather":
                self._quantize_gather(node, stack)

    # -- one MatMul ---------------------------------------------------------------------------
    def _weight_of(self, node: Node, stack: list[Graph]) -> tuple[np.ndarray, Graph, Value, int] | None:
        """(the (K, N) weight, the graph holding it, its value, the leading axes of 1 the output must
        get back: a weight (1, .., K, N) multiplied by an input of lower rank) or None: left alone."""
        if len(node.inputs) != 2 or node.inputs[1] is None:
            return None
        b = node.inputs[1]
        owner = next((g for g in reversed(stack) if g.initializers.get(b.name) is b), None)
        if owner is None or not isinstance(b.const, Tensor):
            logger.info("MatMul %s has no constant weight: left as is", node.name)
            return None
        if int(b.const.data_type) not in (_FLOAT, _FLOAT16, _BFLOAT16):
            return None
        w = b.const.numpy()
        if w.ndim < 2 or any(d != 1 for d in w.shape[:-2]):
            logger.info("MatMul %s: weight of shape %s is not (K, N): left as is", node.name, w.shape)
            return None
        extra = 0
        if w.ndim > 2:
            a = node.inputs[0]
            rank = len(a.type.shape.dims) if a is not None and getattr(a.type, "shape", None) else None
            if rank is None:  # onnxruntime reshapes at run time; onyx needs A's rank
                logger.info(
                    "MatMul %s: %d-D weight with input of unknown rank: left as is", node.name, w.ndim
                )
                return None
            out_rank = max(rank, 2, w.ndim) - (1 if rank == 1 else 0)  # numpy.matmul's
            extra = out_rank - rank
            w = w.reshape(w.shape[-2:])
        return w, owner, b, extra

    def _quantize_matmul(self, node: Node, stack: list[Graph]) -> None:
        found = self._weight_of(node, stack)
        if found is None:
            return
        w, owner, b, extra = found
        scale_dtype = w.dtype if w.dtype == np.float16 else np.dtype(np.float32)
        bf16 = w.dtype.name == "bfloat16"
        w32 = w.astype(np.float32)
        cfg = self.algo_config
        k, n = w32.shape
        graph = stack[-1]
        if self._format == "QOperator":
            bits = cfg.bits if cfg.algorithm == "DEFAULT" else self._rtn_bits(node)
            if cfg.algorithm == "DEFAULT":
                block, sym = cfg.block_size, cfg.is_symmetric
                packed, scales, zp = matmul_nbits_weights(w32, bits, block, sym, scale_dtype)
                suffix = f"_Q{bits}"
                names = (b.name + suffix, b.name + "_scales", b.name + "_zero_points")
            else:
                block, sym = self._rtn_block_and_scheme(node)
                ratio = cfg.ratios.get(b.name, 1.0)
                packed, scales, zp = rtn_matmul_nbits_weights(w32, bits, block, sym, ratio)
                scales = scales.astype(scale_dtype)
                names = (f"{b.name}_Q{bits}G{block}", b.name + "_scale", b.name + "_zp")
            if bf16:
                scales = scales.astype(w.dtype)
            inputs = [node.inputs[0], _init(owner, names[0], packed), _init(owner, names[1], scales)]
            if zp is not None:
                inputs.append(_init(owner, names[2], zp))
            level = (
                getattr(cfg, "accuracy_level", None) if cfg.algorithm == "DEFAULT" else self.accuracy_level
            )
            attrs: dict[str, Any] = {"K": k, "N": n, "bits": bits, "block_size": block}
            if level:
                attrs["accuracy_level"] = int(level)
            suffix = f"_Q{bits}"
            new = [
                _node("MatMulNBits", inputs, node, node.name + suffix if node.name else "", MS_DOMAIN, attrs)
            ]
        else:
            new = self._qdq_nodes(node, owner, b, w32, scale_dtype if not bf16 else w.dtype)
        if extra:  # MatMulNBits / a 2-D MatMul drops B's leading 1s: Unsqueeze puts them back
            new.append(self._unsqueeze(new[-1], owner, b.name, extra))
        self._replace(node, new, graph)
        _drop_if_unused(owner, b)

    # -- one Gather ---------------------------------------------------------------------------
    def _quantize_gather(self, node: Node, stack: list[Graph]) -> None:
        """Gather of a float table -> GatherBlockQuantized on its int4 blocks (onnxruntime's rules:
        QOperator only, 4 bits only, quant_axes["Gather"] along which to block)."""
        cfg = self.algo_config
        if self._format != "QOperator":
            raise OnyxNotImplemented(
                f"Gather {node.name!r}: weight-only quantization of Gather supports the QOperator format "
                "only (onnxruntime: Gather has no int4 type for a QDQ form)"
            )
        if cfg.bits != 4:
            logger.error("Gather %s: only 4-bit quantization is supported: left as is", node.name)
            return
        if len(node.inputs) != 2 or node.inputs[0] is None:
            return
        data = node.inputs[0]
        owner = next((g for g in reversed(stack) if g.initializers.get(data.name) is data), None)
        if owner is None or not isinstance(data.const, Tensor):
            logger.info("Gather %s has no constant data: left as is", node.name)
            return
        if int(data.const.data_type) not in (_FLOAT, _FLOAT16, _BFLOAT16):
            logger.info("Gather %s: data %s is not float: left as is", node.name, data.name)
            return
        table = data.const.numpy()
        rank = table.ndim
        axis = int(cfg.quant_axes.get("Gather", 1))
        if not -rank <= axis < rank:
            raise InvalidArgument(
                f"Gather {node.name!r}: quant_axes['Gather']={axis} is out of range for data {data.name!r} "
                f"of shape {table.shape}"
            )
        axis %= rank
        codes, scales, zp = gather_int4_weights(table, axis, cfg.block_size, cfg.is_symmetric)
        import ml_dtypes

        qtype = ml_dtypes.int4 if cfg.is_symmetric else ml_dtypes.uint4
        inputs = [
            _init(owner, data.name + "_Q4", codes.astype(qtype)),
            node.inputs[1],
            _init(owner, data.name + "_scales", scales),
        ]
        if zp is not None:
            inputs.append(_init(owner, data.name + "_zero_points", zp.astype(qtype)))
        axis_attr = node.attributes.get("axis")
        gather_axis = axis_attr.value if axis_attr is not None else 0
        attrs = {"gather_axis": int(gather_axis), "quantize_axis": axis, "block_size": cfg.block_size}
        name = node.name + "_Q4" if node.name else ""
        new = _node("GatherBlockQuantized", inputs, node, name, MS_DOMAIN, attrs)
        self._replace(node, [new], stack[-1])
        _drop_if_unused(owner, data)

    def _replace(self, node: Node, new: list[Node], graph: Graph) -> None:
        """Put ``new`` where ``node`` was, the last new node producing node's outputs."""
        pos = graph.nodes.index(node)
        outputs = list(node.outputs)
        node.detach()
        graph.nodes.remove(node)
        node.graph = None
        node.outputs = []
        for v in outputs:
            new[-1].append_output(v)
        for i, nn in enumerate(new):
            graph.insert_node(pos + i, nn)

    def _qdq_nodes(self, node: Node, owner: Graph, b: Value, w32: np.ndarray, scale_dtype) -> list[Node]:
        cfg = self.algo_config
        k, n = w32.shape
        sym = cfg.is_symmetric
        block = k if cfg.channel_wised_quantize else cfg.block_size
        packed, scales, zp, elem = qdq_int4_weights(w32, block, sym, scale_dtype)
        import ml_dtypes

        qtype = ml_dtypes.int4 if sym else ml_dtypes.uint4
        values = _unpack4(packed, k * n).reshape(k, n).view(qtype)
        npu = cfg.channel_wised_quantize and sym  # onnxruntime stores these transposed (Intel NPU)
        scales = scales.astype(scale_dtype)
        if npu:
            values, scales = np.ascontiguousarray(values.T), scales.reshape(n, 1)
        inputs = [_init(owner, b.name + "_DQ_Q4", values), _init(owner, b.name + "_DQ_scales", scales)]
        if zp is not None:
            zps = _unpack4(zp, scales.size).reshape(scales.shape).view(qtype)
            inputs.append(_init(owner, b.name + "_DQ_zero_points", zps))
        deq = Value(b.name + "_DQ_Q4_output")
        dq = _node(
            "DequantizeLinear", inputs, node, node.name + "_DQ_Q4" if node.name else "", "",
            {"axis": 1 if npu else 0, "block_size": block},
        )  # fmt: skip
        dq.append_output(deq)
        nodes = [dq]
        weight = deq
        if npu:
            weight = Value(deq.name + "_transposed")
            tp = _node("Transpose", [deq], node, "", "", {"perm": [1, 0]})
            tp.append_output(weight)
            nodes.append(tp)
        nodes.append(
            _node(
                "MatMul",
                [node.inputs[0], weight],
                node,
                node.name + "_matmul_Q4" if node.name else "",
                "",
                {},
            )
        )
        return nodes

    def _unsqueeze(self, last: Node, owner: Graph, hint: str, extra: int) -> Node:
        mid = Value(f"{hint}_pre_unsqueeze_{id(last)}")
        last.append_output(mid)
        axes = list(range(extra))
        if self.model.model.opsets.get("", 1) >= 13:
            return _node("Unsqueeze", [mid, _init(owner, hint + "_unsqueeze_axes", np.array(axes, np.int64))],
                         last, "", "", {})  # fmt: skip
        return _node("Unsqueeze", [mid], last, "", "", {"axes": axes})

    def _rtn_block_and_scheme(self, node: Node) -> tuple[int, bool]:
        block, sym = self.block_size, self.is_symmetric
        custom = (self.algo_config.customized_weight_config or {}).get(node.name, {})
        block = int(custom.get("group_size", block))
        if "scheme" in custom:
            sym = custom["scheme"] == "sym"
        if block == -1:
            block = 0
        return block, sym

    def _rtn_bits(self, node: Node) -> int:
        custom = (self.algo_config.customized_weight_config or {}).get(node.name, {})
        return int(custom.get("bits", 4))


def _unpack4(packed: np.ndarray, count: int) -> np.ndarray:
    from onyx.quantization._nbits_pack import unpack_bits

    return unpack_bits(packed, 4, count)


def _init(graph: Graph, name: str, array: np.ndarray) -> Value:
    """A new initializer of ``graph`` (its name made unique there)."""
    base, k = name, 1
    while name in graph.initializers:
        name = f"{base}_{k}"
        k += 1
    t = Tensor.from_numpy(array, name)
    v = Value(name, TensorType(t.data_type, Shape(t.dims)), const=t)
    graph.add_initializer(v)
    return v


def _node(op_type: str, inputs: list, like: Node, name: str, domain: str, attrs: dict) -> Node:
    from onyx.ir.builder import make_attr

    n = Node(
        op_type, inputs, [], {k: make_attr(k, v) for k, v in attrs.items()}, domain=domain, name=name or None
    )
    n.metadata_props = list(like.metadata_props)
    return n


def _drop_if_unused(graph: Graph, b: Value) -> None:
    """Remove the float weight once nothing reads it (and the graph input of its name, as onnxruntime
    does: a quantized weight can no longer be fed)."""
    if b.uses or any(v is b for v in graph.outputs):
        return
    if graph.initializers.get(b.name) is b:
        del graph.initializers[b.name]
    graph.inputs[:] = [v for v in graph.inputs if v is not b]
