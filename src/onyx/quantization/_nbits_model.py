"""The object ``MatMulNBitsQuantizer.model`` is: an onyx :class:`Model` with the few methods of
onnxruntime's ``ONNXModel`` that weight-only quantization users call (``save_model_to_file``,
``graph``, ``nodes``, ``initializer``...)."""

from __future__ import annotations

import os

from onyx.errors import InvalidArgument
from onyx.ir.model import Graph, Model, Node, Value


class NBitsModel:
    """An onyx model being (or done being) quantized; ``.model`` is the :class:`onyx.Model`."""

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise InvalidArgument(f"expected an onyx Model, got {type(model).__name__}")
        self.model = model

    def graph(self) -> Graph:
        return self.model.graph

    def nodes(self) -> list[Node]:
        return self.model.graph.nodes

    def initializer(self) -> list[Value]:
        return list(self.model.graph.initializers.values())

    def get_initializer(self, name: str) -> Value | None:
        return self.model.graph.initializers.get(name)

    def opset_import(self) -> list[tuple[str, int]]:
        return self.model.opset_imports

    def ir_version(self) -> int | None:
        return self.model.ir_version

    def set_opset_import(self, domain: str, version: int) -> None:
        """Set (or add) the import of ``domain`` to ``version``."""
        imports = self.model.opset_imports
        default = ("", "ai.onnx")
        for i, (d, _) in enumerate(imports):
            if d == domain or (d in default and domain in default):
                imports[i] = (d, version)
                return
        imports.append((domain, version))

    def save_model_to_file(
        self, output_path: str | os.PathLike, use_external_data_format: bool = False
    ) -> None:
        """Write the model; with ``use_external_data_format`` the weights go to ``<file name>.data``
        beside it (onnxruntime's naming)."""
        from onyx.model_io import save

        location = os.path.basename(os.fspath(output_path)) + ".data" if use_external_data_format else None
        save(self.model, output_path, save_as_external_data=use_external_data_format, location=location)
