"""The entry points: quantize_static, quantize_dynamic, quantize (with a config), get_qdq_config.

Everything a user can get wrong is checked before any work, and the output is written once, at the end,
through onyx.save (a temporary file renamed into place): a failure never leaves a partial output file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from onyx.errors import InvalidArgument, NoSuchFile
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ir.model import Model
from onyx.quantization import _graph, calibrate
from onyx.quantization.calibrate import CalibrationDataReader
from onyx.quantization.options import Options, read_extra
from onyx.quantization.qdq import QDQ_OPS, QLINEAR_OPS, STATIC_OPS, QDQQuantizer
from onyx.quantization.types import (
    FOUR_BIT,
    SIXTEEN_BIT,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    as_enum,
    as_quant_type,
)

PRODUCER = ("onnx.quantize", "0.1.0")  # what onnxruntime's quantizer writes
DYNAMIC_OPS = {"Conv", "MatMul", "Gemm", "Transpose"}
# onnxruntime's default dynamic op types that onyx leaves float (see docs/quantization.md)
DYNAMIC_SKIPPED = {"Attention", "LSTM", "Gather", "EmbedLayerNormalization"}


class QuantConfig:
    def __init__(
        self,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=None,
        nodes_to_quantize=None,
        nodes_to_exclude=None,
        per_channel=False,
        reduce_range=False,
        use_external_data_format=False,
    ):
        self.op_types_to_quantize = op_types_to_quantize or []
        self.per_channel = per_channel
        self.reduce_range = reduce_range
        self.weight_type = weight_type
        self.activation_type = activation_type
        self.nodes_to_quantize = nodes_to_quantize or []
        self.nodes_to_exclude = nodes_to_exclude or []
        self.use_external_data_format = use_external_data_format


class StaticQuantConfig(QuantConfig):
    def __init__(
        self,
        calibration_data_reader: CalibrationDataReader,
        calibrate_method=CalibrationMethod.MinMax,
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=None,
        nodes_to_quantize=None,
        nodes_to_exclude=None,
        per_channel=False,
        reduce_range=False,
        use_external_data_format=False,
        calibration_providers=None,
        extra_options=None,
    ):
        super().__init__(
            activation_type,
            weight_type,
            op_types_to_quantize,
            nodes_to_quantize,
            nodes_to_exclude,
            per_channel,
            reduce_range,
            use_external_data_format,
        )
        self.calibration_data_reader = calibration_data_reader
        self.calibrate_method = calibrate_method
        self.quant_format = quant_format
        self.calibration_providers = calibration_providers
        self.extra_options = extra_options or {}


class DynamicQuantConfig(QuantConfig):
    def __init__(
        self,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=None,
        nodes_to_quantize=None,
        nodes_to_exclude=None,
        per_channel=False,
        reduce_range=False,
        use_external_data_format=False,
        extra_options=None,
    ):
        super().__init__(
            QuantType.QUInt8,
            weight_type,
            op_types_to_quantize,
            nodes_to_quantize,
            nodes_to_exclude,
            per_channel,
            reduce_range,
            use_external_data_format,
        )
        self.extra_options = extra_options or {}


# ------------------------------------------------------------------------------------------------
# checks


def _check_output(model_output: Any) -> str:
    if not isinstance(model_output, str | os.PathLike):
        raise InvalidArgument(f"model_output must be a file path, got {type(model_output).__name__}")
    path = os.fspath(model_output)
    if os.path.isdir(path):
        raise InvalidArgument(f"model_output {path!r} is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise NoSuchFile(f"the folder of model_output {path!r} does not exist")
    return path


def _check_float8(
    quant_format: QuantFormat,
    activation: QuantType,
    weight: QuantType,
    method: CalibrationMethod,
    reduce: bool,
) -> None:
    """onnxruntime's rules for QFLOAT8E4M3FN: both types float8, Distribution calibration, no reduce_range;
    QOperator is refused (onnxruntime refuses it for Conv and otherwise writes com.microsoft QLinearMatMul
    / QGemm nodes that its CPU provider cannot load)."""
    f8 = QuantType.QFLOAT8E4M3FN
    if f8 not in (activation, weight):
        return
    if activation != weight:
        raise InvalidArgument(
            f"activation_type={activation} with weight_type={weight}: QFLOAT8E4M3FN must be used for both"
        )
    if method != CalibrationMethod.Distribution:
        raise InvalidArgument(
            "QFLOAT8E4M3FN quantization needs calibrate_method=CalibrationMethod.Distribution, "
            f"got {method.name}"
        )
    if quant_format != QuantFormat.QDQ:
        raise OnyxNotImplemented("QFLOAT8E4M3FN quantization is supported in QuantFormat.QDQ only")
    if reduce:
        raise InvalidArgument("reduce_range=True is not supported with QFLOAT8E4M3FN")


def _check_types(quant_format: QuantFormat, activation: QuantType, weight: QuantType) -> None:
    if activation == QuantType.QInt8 and weight == QuantType.QUInt8:
        raise InvalidArgument("activation_type=QInt8 with weight_type=QUInt8 is not a supported combination")
    if quant_format == QuantFormat.QOperator and ({activation, weight} & (SIXTEEN_BIT | FOUR_BIT)):
        raise InvalidArgument(
            f"QuantFormat.QOperator supports 8-bit types only "
            f"(got activation {activation}, weight {weight}); "
            "use QuantFormat.QDQ for 16-bit and 4-bit types"
        )


def _check_names(model: Model, names, what: str) -> set[str]:
    if names is None:
        return set()
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise InvalidArgument(f"{what} must be a list of node names")
    known = {n.name for n in model.graph.nodes if n.name}
    unknown = sorted(set(names) - known)
    if unknown:
        raise InvalidArgument(
            f"{what} names node(s) the model does not have: {', '.join(map(repr, unknown))}"
        )
    return set(names)


def _check_op_types(op_types, allowed: set[str], default: set[str], mode: str) -> set[str]:
    if not op_types:
        return set(default)
    if isinstance(op_types, str) or not all(isinstance(t, str) for t in op_types):
        raise InvalidArgument("op_types_to_quantize must be a list of operator type names")
    unknown = sorted(set(op_types) - allowed)
    if unknown:
        raise InvalidArgument(
            f"{mode} quantization does not know op type(s) {', '.join(map(repr, unknown))}; "
            f"it quantizes {', '.join(sorted(allowed))}"
        )
    return set(op_types)


def _check_overrides(model: Model, extra: dict) -> None:
    names = set(model.graph.values())
    unknown = sorted(set(extra.get("TensorQuantOverrides", {})) - names)
    if unknown:
        raise InvalidArgument(f"TensorQuantOverrides names tensor(s) the model does not have: {unknown}")


def _needs_opset21(model: Model, activation: QuantType | None, weight: QuantType, extra: dict) -> Model:
    types = {weight, activation} | {
        d.get("quant_type") for items in extra.get("TensorQuantOverrides", {}).values() for d in items
    }
    if types & (SIXTEEN_BIT | FOUR_BIT):
        target = 21
    elif QuantType.QFLOAT8E4M3FN in types:
        target = 19  # float8 QuantizeLinear/DequantizeLinear, as onnxruntime converts for float8 weights
    else:
        return model
    if _graph.opset(model) >= target:
        return model
    from onyx.shape_inference import infer_shapes
    from onyx.version_converter import convert_version

    # onnxruntime converts to opset 21 for 16-bit types and uses com.microsoft Q/DQ for 4-bit ones;
    # onyx converts to opset 21 for both (standard QuantizeLinear/DequantizeLinear support them there)
    return infer_shapes(convert_version(model, target))


def _save(model: Model, path: str, external: bool) -> None:
    from onyx.model_io import save

    model.producer_name, model.producer_version = PRODUCER
    if external:
        save(
            model,
            path,
            save_as_external_data=True,
            location=os.path.basename(path) + ".data",
            convert_attribute=True,
        )
    else:
        save(model, path)


# ------------------------------------------------------------------------------------------------
# entry points


def quantize_static(
    model_input: str | os.PathLike | Model,
    model_output: str | os.PathLike,
    calibration_data_reader: CalibrationDataReader | None = None,
    quant_format=QuantFormat.QDQ,
    op_types_to_quantize=None,
    per_channel: bool = False,
    reduce_range: bool = False,
    activation_type=QuantType.QInt8,
    weight_type=QuantType.QInt8,
    nodes_to_quantize=None,
    nodes_to_exclude=None,
    use_external_data_format: bool = False,
    calibrate_method=CalibrationMethod.MinMax,
    calibration_providers=None,
    extra_options: dict | None = None,
    calibration_cache_path=None,
    show_progress: bool = True,
) -> None:
    """Calibrate on ``calibration_data_reader`` with onyx, then write the quantized model (onnxruntime's
    quantize_static, same arguments and extra_options keys)."""
    quant_format = as_enum(quant_format, QuantFormat, "quant_format")
    activation = as_quant_type(activation_type, "activation_type")
    weight = as_quant_type(weight_type, "weight_type")
    method = as_enum(calibrate_method, CalibrationMethod, "calibrate_method")
    _check_float8(quant_format, activation, weight, method, bool(reduce_range))
    _check_types(quant_format, activation, weight)
    if calibration_cache_path is not None:
        raise OnyxNotImplemented("calibration_cache_path is not supported by onyx's quantizer")
    if calibration_data_reader is None or not callable(getattr(calibration_data_reader, "get_next", None)):
        raise InvalidArgument("quantize_static needs a calibration_data_reader with get_next()")
    path = _check_output(model_output)
    extra = read_extra(extra_options)
    model = _graph.load_model(model_input)
    if quant_format == QuantFormat.QOperator:
        allowed = QLINEAR_OPS
    else:
        from onyx.ops.registry import load_all, registered

        load_all()
        allowed = STATIC_OPS | {op for (_, op) in registered()}
    opts = Options(
        per_channel=bool(per_channel),
        reduce_range=bool(reduce_range),
        activation_type=activation.tensor_type,
        weight_type=weight.tensor_type,
        op_types=_check_op_types(op_types_to_quantize, allowed, QDQ_OPS | QLINEAR_OPS, "static"),
        nodes_to_quantize=_check_names(model, nodes_to_quantize, "nodes_to_quantize"),
        nodes_to_exclude=_check_names(model, nodes_to_exclude, "nodes_to_exclude"),
        extra=extra,
    )
    _check_overrides(model, extra)
    model = _needs_opset21(model, activation, weight, extra)
    calib_options = {
        key: extra[name]
        for name, key in (
            ("CalibTensorRangeSymmetric", "symmetric"),
            ("CalibMovingAverage", "moving_average"),
            ("CalibMovingAverageConstant", "averaging_constant"),
            ("CalibMaxIntermediateOutputs", "max_intermediate_outputs"),
            ("CalibPercentile", "percentile"),
        )
        if name in extra
    }
    names = calibrate.tensors_to_calibrate(model, opts.op_types)
    ranges = calibrate.collect(model, calibration_data_reader, names, method, calib_options, show_progress)
    if quant_format == QuantFormat.QDQ:
        quantized = QDQQuantizer(model, ranges, opts).run()
    else:
        from onyx.quantization.qoperator import QOperatorQuantizer

        quantized = QOperatorQuantizer(model, ranges, opts, static=True).run()
    _save(quantized, path, use_external_data_format)


def quantize_dynamic(
    model_input: str | os.PathLike | Model,
    model_output: str | os.PathLike,
    op_types_to_quantize=None,
    per_channel: bool = False,
    reduce_range: bool = False,
    weight_type=QuantType.QInt8,
    nodes_to_quantize=None,
    nodes_to_exclude=None,
    use_external_data_format: bool = False,
    extra_options: dict | None = None,
) -> None:
    """Weights quantized ahead of time, activations at run time by DynamicQuantizeLinear (onnxruntime's
    quantize_dynamic: ConvInteger / MatMulInteger + Cast + Mul, Gemm as MatMul + Add)."""
    weight = as_quant_type(weight_type, "weight_type")
    if weight not in (QuantType.QInt8, QuantType.QUInt8):
        raise InvalidArgument(f"dynamic quantization supports QInt8 and QUInt8 weights, got {weight}")
    path = _check_output(model_output)
    extra = read_extra(extra_options)
    extra.setdefault("MatMulConstBOnly", True)
    model = _graph.load_model(model_input)
    if _graph.opset(model) < 11:
        raise InvalidArgument(
            f"dynamic quantization needs opset >= 11 (DynamicQuantizeLinear); "
            f"the model has opset {_graph.opset(model)}"
        )
    opts = Options(
        per_channel=bool(per_channel),
        reduce_range=bool(reduce_range),
        activation_type=QuantType.QUInt8.tensor_type,
        weight_type=weight.tensor_type,
        op_types=_check_op_types(op_types_to_quantize, DYNAMIC_OPS | DYNAMIC_SKIPPED, DYNAMIC_OPS, "dynamic"),
        nodes_to_quantize=_check_names(model, nodes_to_quantize, "nodes_to_quantize"),
        nodes_to_exclude=_check_names(model, nodes_to_exclude, "nodes_to_exclude"),
        extra=extra,
    )
    _check_overrides(model, extra)
    from onyx.quantization.qoperator import QOperatorQuantizer

    quantized = QOperatorQuantizer(model, None, opts, static=False).run()
    _save(quantized, path, use_external_data_format)


def quantize(
    model_input: str | os.PathLike | Model, model_output: str | os.PathLike, quant_config: QuantConfig
):
    """Quantize with a StaticQuantConfig or a DynamicQuantConfig."""
    if isinstance(quant_config, StaticQuantConfig):
        c = quant_config
        quantize_static(
            model_input,
            model_output,
            c.calibration_data_reader,
            c.quant_format,
            c.op_types_to_quantize,
            c.per_channel,
            c.reduce_range,
            c.activation_type,
            c.weight_type,
            c.nodes_to_quantize,
            c.nodes_to_exclude,
            c.use_external_data_format,
            c.calibrate_method,
            c.calibration_providers,
            c.extra_options,
        )
    elif isinstance(quant_config, DynamicQuantConfig):
        c = quant_config
        quantize_dynamic(
            model_input,
            model_output,
            c.op_types_to_quantize,
            c.per_channel,
            c.reduce_range,
            c.weight_type,
            c.nodes_to_quantize,
            c.nodes_to_exclude,
            c.use_external_data_format,
            c.extra_options,
        )
    else:
        raise InvalidArgument(
            f"quant_config must be a StaticQuantConfig or a DynamicQuantConfig, "
            f"got {type(quant_config).__name__}"
        )


def get_qdq_config(
    model_input: str | os.PathLike | Model,
    calibration_data_reader: CalibrationDataReader,
    calibrate_method=CalibrationMethod.MinMax,
    calibrate_args: dict[str, Any] | None = None,
    activation_type=QuantType.QUInt8,
    weight_type=QuantType.QInt8,
    activation_symmetric: bool = False,
    weight_symmetric: bool | None = None,
    per_channel: bool = False,
    reduce_range: bool = False,
    keep_removable_activations: bool = False,
    min_real_range: float | None = None,
    tensor_quant_overrides: dict[str, list[dict[str, Any]]] | None = None,
    calibration_providers: list[str] | None = None,
    op_types_to_quantize: list[str] | None = None,
    nodes_to_exclude: list[str] | Callable[[Model, Any], bool] | None = None,
    extra_options: dict | None = None,
) -> StaticQuantConfig:
    """A StaticQuantConfig (QDQ) that quantizes every op type present in the model."""
    model = _graph.load_model(model_input)
    wanted = set(op_types_to_quantize) if op_types_to_quantize else None
    excluded = set(nodes_to_exclude) if isinstance(nodes_to_exclude, list) else set()
    op_types = set()
    for node in model.graph.nodes:
        if wanted and node.op_type not in wanted:
            continue
        if node.name in excluded:
            continue
        if callable(nodes_to_exclude) and nodes_to_exclude(model, node):
            excluded.add(node.name)
        else:
            op_types.add(node.op_type)
    extra = {
        "MinimumRealRange": min_real_range,
        "QDQKeepRemovableActivations": keep_removable_activations,
        "ActivationSymmetric": activation_symmetric,
        "WeightSymmetric": weight_symmetric,
        "ForceQuantizeNoInputCheck": True,
        "TensorQuantOverrides": tensor_quant_overrides or {},
    }
    for name, key in (
        ("symmetric", "CalibTensorRangeSymmetric"),
        ("moving_average", "CalibMovingAverage"),
        ("averaging_constant", "CalibMovingAverageConstant"),
        ("max_intermediate_outputs", "CalibMaxIntermediateOutputs"),
        ("percentile", "CalibPercentile"),
    ):
        if calibrate_args and name in calibrate_args:
            extra[key] = calibrate_args[name]
    extra.update(extra_options or {})
    return StaticQuantConfig(
        calibration_data_reader,
        calibrate_method=calibrate_method,
        quant_format=QuantFormat.QDQ,
        activation_type=activation_type,
        weight_type=weight_type,
        op_types_to_quantize=list(wanted)
        if wanted
        else sorted(op_types - {"Cast", "DequantizeLinear", "QuantizeLinear"}),
        nodes_to_exclude=sorted(excluded),
        per_channel=per_channel,
        reduce_range=reduce_range,
        calibration_providers=calibration_providers,
        extra_options=extra,
    )
