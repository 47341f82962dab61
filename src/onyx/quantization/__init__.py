"""onnxruntime.quantization's API on onyx: calibrate with onyx's runtime, write int8/int16/int4 models.

``quantize_dynamic`` / ``quantize_static`` / ``quantize`` write the same graphs and the same scales and
zero points as onnxruntime's quantizer for the same calibration data; :func:`report` measures the
quantization noise per tensor. Blockwise int4 weight-only quantization lives in
``onyx.quantization.matmul_nbits_quantizer``.
"""

from onyx.quantization.calibrate import CalibrationDataReader, TensorData
from onyx.quantization.preprocess import quant_pre_process
from onyx.quantization.quantize import (
    DynamicQuantConfig,
    QuantConfig,
    StaticQuantConfig,
    get_qdq_config,
    quantize,
    quantize_dynamic,
    quantize_static,
)
from onyx.quantization.report import TensorReport, report
from onyx.quantization.types import CalibrationMethod, QuantFormat, QuantizationMode, QuantType

__all__ = [
    "CalibrationDataReader",
    "CalibrationMethod",
    "DynamicQuantConfig",
    "QuantConfig",
    "QuantFormat",
    "QuantType",
    "QuantizationMode",
    "StaticQuantConfig",
    "TensorData",
    "TensorReport",
    "get_qdq_config",
    "quant_pre_process",
    "quantize",
    "quantize_dynamic",
    "quantize_static",
    "report",
]
