"""Team tasks as cached machine code (onyx.ops._native): the first process compiles them with numba and
caches their object code; later processes load it without importing numba and compute the same
values. A corrupt or foreign cache file is compiled again and replaced, an unwritable cache folder
only costs the compilation, and the loader refuses objects it does not handle."""

from __future__ import annotations

import glob
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onyx.ops import _native, _perf

pytestmark = pytest.mark.skipif(
    not _native.available() or not _native._loadable_here(), reason="needs numba on x86-64 Linux"
)

NN = "onyx.ops.nn._jit"

# a MobileNet block (1x1 expand, depthwise, 1x1 project) on the compiled channels-last path, run in a
# fresh process that imports nothing but onyx
_RUN = """
import hashlib, sys
import numpy as np
import onyx
x = np.load(sys.argv[2])
y = onyx.InferenceSession(sys.argv[1]).run(None, {"x": x})[0]
print(hashlib.sha256(np.ascontiguousarray(y).tobytes()).hexdigest(), "numba" in sys.modules)
"""


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    from tests.perf.test_conv_channels_last import _block

    folder = tmp_path_factory.mktemp("block")
    model, feeds = _block(1, 8, 24, 8, (13, 11), (3, 3), 1, [1, 1, 1, 1], "Clip", np.float32, True)
    (folder / "block.onnx").write_bytes(model)
    np.save(folder / "x.npy", feeds["x"])
    return str(folder / "block.onnx"), str(folder / "x.npy")


def _run(cache: str, block) -> tuple[str, str]:
    env = dict(os.environ, ONYX_CACHE_DIR=cache)
    out = subprocess.run(
        [sys.executable, "-c", _RUN, *block], capture_output=True, text=True, env=env, check=True
    )
    digest, numba_loaded = out.stdout.split()
    return digest, numba_loaded


def _objects(cache: str) -> list[str]:
    return sorted(glob.glob(os.path.join(cache, f"{NN}.*.o")))


def test_a_second_process_runs_the_cached_code_without_numba(tmp_path, block):
    cache = str(tmp_path / "cache")
    first, loaded_first = _run(cache, block)
    names = [os.path.basename(p).split(".")[4] for p in _objects(cache)]
    assert names == ["_depthwise_cl_task", "_epilogue_cl_task"]
    assert loaded_first == "True"  # compiled by numba
    second, loaded_second = _run(cache, block)
    assert (second, loaded_second) == (first, "False")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_cache_file_is_compiled_again(tmp_path, block, damage):
    cache = str(tmp_path / "cache")
    want, _ = _run(cache, block)
    path = _objects(cache)[0]
    good = Path(path).read_bytes()
    bad = {"garbage": b"not an object file" * 50, "truncated": good[: len(good) // 3], "empty": b""}[damage]
    Path(path).write_bytes(bad)
    got, loaded = _run(cache, block)
    assert (got, loaded) == (want, "True")  # numba compiled the damaged task again ...
    assert (
        Path(path).read_bytes()[:4] == b"\x7fELF" and len(Path(path).read_bytes()) > 1000
    )  # ... and rewrote it


def test_an_unwritable_cache_folder_only_costs_the_compilation(tmp_path, block):
    want, _ = _run(str(tmp_path / "cache"), block)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    got, loaded = _run(str(blocker / "cache"), block)
    assert (got, loaded) == (want, "True")
    assert blocker.read_text() == "not a folder"


def _cached_object(tmp_path, block) -> bytes:
    cache = str(tmp_path / "cache")
    _run(cache, block)
    return Path(_objects(cache)[0]).read_bytes()


def test_the_loader_refuses_what_it_does_not_handle(tmp_path, block):
    obj = _cached_object(tmp_path, block)
    assert _native._load_object(obj) > 0
    with pytest.raises(_native.NativeError):
        _native._load_object(b"\x7fELF" + b"\0" * 60)  # not a 64-bit little-endian file
    other_machine = obj[:18] + struct.pack("<H", 183) + obj[20:]  # AArch64
    with pytest.raises(_native.NativeError):
        _native._load_object(other_machine)
    with pytest.raises(_native.NativeError):
        _native._load_object(_with_relocation_type(obj, 42))  # R_X86_64_REX_GOTPCRELX: needs a GOT
    with pytest.raises(_native.NativeError):
        _native._load_object(b"")
    # damaged tables never read or write outside the file and the mapped sections
    with pytest.raises(_native.NativeError):
        _native._load_object(_with_section_field(obj, ".ltext", 4, len(obj) * 2))  # its offset past the end
    with pytest.raises(_native.NativeError):
        _native._load_object(_with_relocation_offset(obj, 1 << 40))


def _section_headers(obj: bytes) -> list[tuple[str, int, tuple]]:
    """(name, header offset, fields) of every section of ``obj``."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = []
    for i, h in enumerate(headers):
        start = names_at + h[0]
        out.append((obj[start : obj.index(b"\0", start)].decode(), shoff + i * shentsize, h))
    return out


def _with_section_field(obj: bytes, name: str, field: int, value: int) -> bytes:
    """``obj`` with field ``field`` (0-based, of the 10 in a section header) of section ``name`` set."""
    data = bytearray(obj)
    for sname, at, h in _section_headers(obj):
        if sname == name:
            fields = list(h)
            fields[field] = value
            struct.pack_into("<IIQQQQIIQQ", data, at, *fields)
            return bytes(data)
    raise AssertionError(f"no {name} section")


def _with_relocation_offset(obj: bytes, offset: int) -> bytes:
    """``obj`` with its first relocation in .rela.ltext pointing ``offset`` bytes into its section."""
    data = bytearray(obj)
    for sname, _, h in _section_headers(obj):
        if sname == ".rela.ltext":
            _, info, addend = struct.unpack_from("<QQq", obj, h[4])
            struct.pack_into("<QQq", data, h[4], offset, info, addend)
            return bytes(data)
    raise AssertionError("no .rela.ltext section")


def _with_relocation_type(obj: bytes, kind: int) -> bytes:
    """``obj`` with its first relocation in .rela.ltext changed to type ``kind``."""
    data = bytearray(obj)
    for sname, _, h in _section_headers(obj):
        if sname == ".rela.ltext":
            offset, info, addend = struct.unpack_from("<QQq", obj, h[4])
            struct.pack_into("<QQq", data, h[4], offset, (info >> 32) << 32 | kind, addend)
            return bytes(data)
    raise AssertionError("no .rela.ltext section")


def test_cache_keys_follow_module_and_stay_stable():
    assert _native._source_key(NN) == _native._source_key(NN)
    assert _native._source_key(NN) != _native._source_key("onyx.ops.math._jit")


def test_no_perf_means_no_tasks(monkeypatch):
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    assert not _native.available()
    assert _native.task(NN, "_a_task_that_is_never_compiled") is None
    assert _perf.jit_module(NN) is None


def test_no_home_folder_means_no_cache(monkeypatch):
    monkeypatch.delenv("ONYX_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(_native.os.path, "expanduser", lambda p: p)  # HOME unknown: "~" stays "~"
    assert _native._cache_dir() is None  # not a folder named "~" in the working directory


def test_a_cache_file_owned_by_another_user_is_not_run(tmp_path, block):
    cache = str(tmp_path / "cache")
    want, _ = _run(cache, block)
    path = _objects(cache)[0]
    try:
        os.chown(path, os.getuid() + 1, -1)
    except (PermissionError, AttributeError):
        pytest.skip("cannot give a file to another user here")
    got, loaded = _run(cache, block)
    assert (got, loaded) == (want, "True")  # compiled again instead of running the foreign file
