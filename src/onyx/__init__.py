"""onyx: ONNX models read, checked, optimized and run in Python on numpy."""

__version__ = "0.1.0"
