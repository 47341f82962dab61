"""onnxruntime.capi's module layout, for code that imports names from there.

``onyx.capi.onnxruntime_pybind11_state`` holds the error classes (onyx's own, see onyx.errors) and the
classes that onnxruntime implements in C++; ``onyx.capi.onnxruntime_inference_collection`` the Python
classes (InferenceSession, IOBinding, OrtValue, SparseTensor...); ``onyx.capi._pybind_state`` re-exports
the first, as onnxruntime's does.
"""

from onyx.capi import _pybind_state, onnxruntime_inference_collection, onnxruntime_pybind11_state

__all__ = ["onnxruntime_pybind11_state", "_pybind_state", "onnxruntime_inference_collection"]
