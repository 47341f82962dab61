"""``onnxruntime.capi._pybind_state``: onnxruntime re-exports its compiled module here; so does onyx."""

from onyx.capi.onnxruntime_pybind11_state import *  # noqa: F403
from onyx.capi.onnxruntime_pybind11_state import __all__  # noqa: F401
