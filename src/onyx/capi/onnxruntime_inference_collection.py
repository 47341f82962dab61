"""``onnxruntime.capi.onnxruntime_inference_collection``: the Python classes of onnxruntime's API."""

from onyx.runtime.environment import copy_tensors
from onyx.runtime.iobinding import IOBinding
from onyx.runtime.ortvalue import OrtDevice, OrtValue
from onyx.runtime.providers import resolve_providers
from onyx.runtime.session import InferenceSession
from onyx.runtime.sparse import SparseTensor

Session = InferenceSession  # onnxruntime's base class of InferenceSession


def check_and_normalize_provider_args(providers, provider_options, available_provider_names):
    """The providers and their options as two lists (unknown providers are dropped with a warning)."""
    names, options = resolve_providers(providers, provider_options)
    return names, options


def get_ort_device_type(device_type: str) -> int:
    return OrtDevice.make(device_type).device_type()


__all__ = [
    "InferenceSession",
    "Session",
    "IOBinding",
    "OrtValue",
    "OrtDevice",
    "SparseTensor",
    "copy_tensors",
    "check_and_normalize_provider_args",
    "get_ort_device_type",
]
