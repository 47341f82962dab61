"""quant_pre_process: shape inference and graph optimization before quantization, on onyx.

onnxruntime's version runs symbolic shape inference, onnxruntime's basic optimizations and ONNX shape
inference; here onyx's optimizer at the basic level (constant folding, identity/dropout removal,
Conv+BatchNormalization folding...) and onyx's shape inference do the same job. The model is marked
as pre-processed with onnxruntime's metadata key.
"""

from __future__ import annotations

import os

from onyx.errors import InvalidArgument
from onyx.ir.model import Model
from onyx.quantization import _graph

PRE_PROCESS_KEY = "onnx.quant.pre_process"


def quant_pre_process(
    input_model: str | os.PathLike | Model | None = None,
    output_model_path: str | os.PathLike | None = None,
    skip_optimization: bool = False,
    skip_onnx_shape: bool = False,
    skip_symbolic_shape: bool = False,
    auto_merge: bool = False,
    int_max: int = 2**31 - 1,
    guess_output_rank: bool = False,
    verbose: int = 0,
    save_as_external_data: bool = False,
    all_tensors_to_one_file: bool = False,
    external_data_location: str | None = None,
    external_data_size_threshold: int = 1024,
    **deprecated_kwargs,
) -> None:
    """Optimize (basic level) and shape-infer ``input_model``, then write it to ``output_model_path``."""
    from onyx.model_io import save
    from onyx.optimizer import optimize
    from onyx.shape_inference import infer_shapes

    if "input_model_path" in deprecated_kwargs:
        input_model = deprecated_kwargs.pop("input_model_path")
    if deprecated_kwargs:
        raise InvalidArgument(f"unexpected argument(s) {sorted(deprecated_kwargs)}")
    if input_model is None or output_model_path is None:
        raise InvalidArgument("quant_pre_process needs input_model and output_model_path")
    model = _graph.load_model(input_model)
    if not skip_optimization:
        optimize(model, 1)
    if not (skip_onnx_shape and skip_symbolic_shape):
        infer_shapes(model)
    model.metadata_props = [(k, v) for k, v in model.metadata_props if k != PRE_PROCESS_KEY]
    model.metadata_props.append((PRE_PROCESS_KEY, "onnxruntime.quant"))
    if save_as_external_data:
        save(
            model,
            output_model_path,
            save_as_external_data=True,
            location=external_data_location,
            size_threshold=external_data_size_threshold,
        )
    else:
        save(model, output_model_path)
