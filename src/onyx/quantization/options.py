"""The quantizer's settings, read once from the arguments and extra_options (onnxruntime's keys)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.quantization.types import QuantType, as_quant_type

# extra_options keys this quantizer reads; any other key is refused (a typo must not pass silently)
KNOWN_EXTRA = {
    "ActivationSymmetric",
    "WeightSymmetric",
    "MatMulConstBOnly",
    "AddQDQPairToWeight",
    "ForceQuantizeNoInputCheck",
    "CalibMovingAverage",
    "CalibMovingAverageConstant",
    "CalibMaxIntermediateOutputs",
    "CalibTensorRangeSymmetric",
    "CalibPercentile",
    "TensorQuantOverrides",
    "QDQKeepRemovableActivations",
    "QDQDisableWeightAdjustForInt32Bias",
    "OpTypesToExcludeOutputQuantization",
    "QDQOpTypePerChannelSupportToAxis",
    "MinimumRealRange",
    "QuantizeBias",
    "EnableSubgraph",
    "extra.Sigmoid.nnapi",
    "UseQDQContribOps",
    "DedicatedQDQPair",
}
OVERRIDE_KEYS = {"quant_type", "scale", "zero_point", "symmetric", "reduce_range", "rmax", "rmin", "axis"}


@dataclass
class Options:
    per_channel: bool = False
    reduce_range: bool = False
    activation_type: int = int(DataType.INT8)
    weight_type: int = int(DataType.INT8)
    op_types: set[str] = field(default_factory=set)
    nodes_to_quantize: set[str] = field(default_factory=set)
    nodes_to_exclude: set[str] = field(default_factory=set)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def activation_symmetric(self) -> bool:
        return bool(self.extra.get("ActivationSymmetric", False))

    def weight_symmetric(self, elem_type: int) -> bool:
        explicit = self.extra.get("WeightSymmetric")
        if explicit is not None:
            return bool(explicit)
        return elem_type in (DataType.INT4, DataType.INT8, DataType.INT16, DataType.FLOAT8E4M3FN)

    @property
    def overrides(self) -> dict[str, list[dict[str, Any]]]:
        return self.extra.get("TensorQuantOverrides") or {}

    def flag(self, key: str, default: bool = False) -> bool:
        return bool(self.extra.get(key, default))

    def should_quantize(self, node) -> bool:
        if self.nodes_to_quantize and node.name not in self.nodes_to_quantize:
            return False
        if node.op_type not in self.op_types or node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            return False
        return node.name not in self.nodes_to_exclude


def read_extra(extra_options: dict | None) -> dict[str, Any]:
    extra = dict(extra_options or {})
    unknown = sorted(k for k in extra if k not in KNOWN_EXTRA)
    if unknown:
        raise InvalidArgument(
            f"unknown extra_options key(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(sorted(KNOWN_EXTRA))}"
        )
    if extra.get("UseQDQContribOps") or extra.get("DedicatedQDQPair") or extra.get("EnableSubgraph"):
        raise NotImplementedError(
            "extra_options UseQDQContribOps, DedicatedQDQPair and EnableSubgraph are not supported "
            "by onyx's quantizer"
        )
    overrides = extra.get("TensorQuantOverrides") or {}
    if not isinstance(overrides, dict):
        raise InvalidArgument("TensorQuantOverrides must be a dict of tensor name -> list of dicts")
    clean = {}
    for name, items in overrides.items():
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list) or not items or not all(isinstance(d, dict) for d in items):
            raise InvalidArgument(f"TensorQuantOverrides[{name!r}] must be a non-empty list of dicts")
        out = []
        for d in items:
            bad = sorted(set(d) - OVERRIDE_KEYS)
            if "convert" in d:
                raise NotImplementedError(f"TensorQuantOverrides[{name!r}]: 'convert' is not supported")
            if bad:
                raise InvalidArgument(f"TensorQuantOverrides[{name!r}]: unknown key(s) {bad}")
            if ("scale" in d) != ("zero_point" in d):
                raise InvalidArgument(
                    f"TensorQuantOverrides[{name!r}]: give both scale and zero_point, or neither"
                )
            if "scale" in d and any(k in d for k in ("symmetric", "reduce_range", "rmin", "rmax")):
                raise InvalidArgument(
                    f"TensorQuantOverrides[{name!r}]: scale/zero_point exclude symmetric, reduce_range, "
                    "rmin and rmax"
                )
            d = dict(d)
            if "quant_type" in d:
                d["quant_type"] = as_quant_type(d["quant_type"], f"TensorQuantOverrides[{name!r}] quant_type")
            out.append(d)
        clean[name] = out
    if overrides:
        extra["TensorQuantOverrides"] = clean
    return extra


def override_type(d: dict, default: int) -> int:
    qt = d.get("quant_type")
    return qt.tensor_type if isinstance(qt, QuantType) else default
