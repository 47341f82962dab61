"""docs/ort-compat.md against onnxruntime's and onyx's namespaces: every public name of onnxruntime's Python
package is listed, and every name listed as supported or partial exists in onyx. Also the small names the
other test files do not reach."""

from __future__ import annotations

import os
import re
import types

import numpy as np
import onnxruntime as ort
import onnxruntime.backend  # noqa: F401 - dir(onnxruntime) lists the submodules imported
import onnxruntime.capi.onnxruntime_inference_collection as ort_collection
import onnxruntime.capi.onnxruntime_pybind11_state as ort_c
import onnxruntime.datasets  # noqa: F401
import pytest

import onyx
import onyx.backend  # noqa: F401
import onyx.capi.onnxruntime_inference_collection as onyx_collection
import onyx.capi.onnxruntime_pybind11_state as onyx_c
import onyx.datasets
from onyx.errors import InvalidArgument, ModelLoadCanceled
from onyx.errors import NotImplemented as OnyxNotImplemented

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "ort-compat.md")
SECTIONS = {
    "onnxruntime": (ort, onyx),
    "onnxruntime.capi.onnxruntime_pybind11_state": (ort_c, onyx_c),
    "onnxruntime.capi.onnxruntime_inference_collection": (ort_collection, onyx_collection),
    "InferenceSession": (ort.InferenceSession, onyx.InferenceSession),
    "SessionOptions": (ort.SessionOptions, onyx.SessionOptions()),
    "RunOptions": (ort.RunOptions, onyx.RunOptions()),
    "OrtValue": (ort.OrtValue, onyx.OrtValue),
    "SparseTensor": (ort.SparseTensor, onyx.SparseTensor),
    "IOBinding": (ort.IOBinding, onyx.IOBinding),
    "OrtDevice": (ort.OrtDevice, onyx.OrtDevice),
    "OrtMemoryInfo": (ort.OrtMemoryInfo, onyx.OrtMemoryInfo()),
    "OrtArenaCfg": (ort.OrtArenaCfg, onyx.OrtArenaCfg()),
    "onnxruntime.backend": (ort.backend, onyx.backend),
    "onnxruntime.datasets": (ort.datasets, onyx.datasets),
}
STATUSES = {"supported", "partial", "not applicable", "internal"}


def _tables() -> dict[str, dict[str, tuple[str, str]]]:
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    current = None
    for line in open(DOC, encoding="utf-8"):
        head = re.match(r"## (\S+)\s*$", line)
        if head:
            current = head.group(1) if head.group(1) in SECTIONS else None
            if current:
                tables[current] = {}
            continue
        row = re.match(r"\| `([^`]+)` \| ([^|]+) \| (.*) \|\s*$", line)
        if row and current:
            tables[current][row.group(1)] = (row.group(2).strip(), row.group(3).strip())
    return tables


TABLES = _tables()


@pytest.mark.parametrize("section", list(SECTIONS))
def test_every_public_onnxruntime_name_is_listed(section):
    obj = SECTIONS[section][0]
    listed = TABLES.get(section, {})
    # a submodule shows up in dir() once anything imported it (onnxruntime.quantization, .tools...)
    theirs = {
        n
        for n in dir(obj)
        if not n.startswith("_") and (n in listed or not isinstance(getattr(obj, n), types.ModuleType))
    }
    # names a newer onnxruntime adds show up here: list them in docs/ort-compat.md with a status
    assert sorted(theirs - set(listed)) == []
    for name, (status, _) in listed.items():
        assert status in STATUSES, (section, name, status)


@pytest.mark.parametrize("section", list(SECTIONS))
def test_every_name_listed_as_supported_exists_in_onyx(section):
    ours = SECTIONS[section][1]
    missing = [
        n
        for n, (status, _) in TABLES[section].items()
        if status in ("supported", "partial") and not hasattr(ours, n)
    ]
    assert missing == []


def test_every_supported_name_names_a_test_that_exists():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    for section, rows in TABLES.items():
        for name, (status, note) in rows.items():
            if status in ("supported", "partial"):
                tests = re.findall(r"tests/[\w/]+\.py", note)
                assert tests, (section, name)
                for t in tests:
                    assert os.path.exists(os.path.join(root, t)), (section, name, t)


# -- the small names -----------------------------------------------------------------------------------


def _session() -> onyx.InferenceSession:
    return onyx.InferenceSession(onyx.datasets.get_example("mul_1.onnx"))


def test_module_constants_and_no_op_functions(capsys):
    assert onyx.version == onyx.__version__ and onyx.package_name == "onyx"
    assert onyx.cuda_version == ort.cuda_version == ""
    assert {k: int(v) for k, v in onyx.OrtDeviceVendorId.__members__.items()} == {
        k: int(v) for k, v in ort.OrtDeviceVendorId.__members__.items()
    }
    onyx.print_debug_info()
    assert "onyx" in capsys.readouterr().out
    assert onyx.preload_dlls() is None
    assert onyx.get_ep_devices() == []
    with pytest.raises(OnyxNotImplemented, match="native library"):
        onyx.register_execution_provider_library("my_ep", "/tmp/libmy_ep.so")
    with pytest.raises(InvalidArgument, match="my_ep"):
        onyx.unregister_execution_provider_library("my_ep")
    assert onyx_c.get_device() == "CPU" and onyx_c.get_version_string() == onyx.__version__
    assert isinstance(onyx_c.get_default_session_options(), onyx.SessionOptions)


def test_session_methods_for_accelerators():
    s = _session()
    assert s.get_tuning_results() == []
    assert s.set_tuning_results([]) is None
    assert s.release_captured_graph() is None
    with pytest.raises(InvalidArgument, match="no dynamic options"):
        s.set_ep_dynamic_options({"ep.dynamic.workload_type": "Efficient"})


def test_session_options_providers_and_cancellation():
    so = onyx.SessionOptions()
    assert so.has_providers() is ort.SessionOptions().has_providers() is False
    so.add_provider("CPUExecutionProvider", {})
    assert so.has_providers()
    with pytest.raises(InvalidArgument, match="Unknown Provider"):
        so.add_provider("CUDAExecutionProvider", {})
    so.set_load_cancellation_flag(True)
    with pytest.raises(ModelLoadCanceled):
        onyx.InferenceSession(onyx.datasets.get_example("mul_1.onnx"), so)
    so.set_load_cancellation_flag(False)
    onyx.InferenceSession(onyx.datasets.get_example("mul_1.onnx"), so)
    with pytest.raises(OnyxNotImplemented, match="LoRA"):
        onyx.RunOptions().add_active_adapter(object())


def test_inference_collection_helpers():
    names, options = onyx_collection.check_and_normalize_provider_args(["CPUExecutionProvider"], None, [])
    assert names == ["CPUExecutionProvider"] and options == [{}]
    assert onyx_collection.get_ort_device_type("cpu") == ort_collection.get_ort_device_type("cpu") == 0
    assert onyx_collection.Session is onyx.InferenceSession
    x = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(_session().run(None, {"X": x})[0], np.arange(1, 7).reshape(3, 2))
