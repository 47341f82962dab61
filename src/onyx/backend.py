"""onyx as an ONNX backend (``onnx.backend.base.Backend``), so that onnx's BackendTest runner runs onyx.

    import onnx.backend.test, onyx.backend
    tests = onnx.backend.test.BackendTest(onyx.backend, __name__)

The ``onnx`` package is imported lazily: onyx itself never needs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.runtime.options import GraphOptimizationLevel, SessionOptions
from onyx.runtime.session import InferenceSession


def _proto_bytes(model: Any) -> bytes:
    if isinstance(model, bytes | bytearray):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    from onyx.ir.model import Model
    from onyx.model_io import serialize

    if isinstance(model, Model):
        return serialize(model)
    raise TypeError(f"cannot prepare a {type(model).__name__}")


class BackendRep:
    """A prepared model: ``run(inputs)`` takes a list (in input order) or a dict of arrays."""

    def __init__(self, session: InferenceSession):
        self.session = session
        self.input_names = [i.name for i in session.get_inputs()]

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs))
        return tuple(self.session.run(None, feeds))


class Backend:
    """The onnx backend API over onyx sessions."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().startswith("CPU")

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> BackendRep:
        opts = SessionOptions()
        level = kwargs.get("graph_optimization_level")
        if level is not None:
            opts.graph_optimization_level = GraphOptimizationLevel(level)
        return BackendRep(InferenceSession(_proto_bytes(model), opts))

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU", outputs_info: Any = None, **kwargs: Any):
        """Run a single onnx NodeProto by wrapping it in a model."""
        from onnx import helper

        opset = kwargs.get("opset_version")
        in_vi = []
        feeds = []
        for name, value in zip(node.input, inputs):
            arr = np.asarray(value)
            if not name:
                continue
            in_vi.append(
                helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape)
            )
            feeds.append(arr)
        out_vi = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = helper.make_graph([node], "run_node", in_vi, out_vi)
        opsets = [helper.make_opsetid(node.domain or "", opset or 21)]
        model = helper.make_model(graph, opset_imports=opsets)
        return cls.run_model(model, feeds, device)


# module-level functions, as onnx's runner calls them on the backend module
is_compatible = Backend.is_compatible
prepare = Backend.prepare
run_model = Backend.run_model
run_node = Backend.run_node
supports_device = Backend.supports_device
