"""Compiled team tasks kept as machine code on disk and run without importing numba.

numba and its compiler (LLVM) cost ~130 MB of memory and ~0.4 s once imported, more than a small
model's whole run needs (MobileNetV2 runs in ~60 MB without them). The team tasks of the ``perf``
extra (numba ``cfunc`` s of the C signature ``void task(int32 *, int32 *, int64 *params)``, see
onyx.runtime.team) call no Python, so their machine code can live on its own: the first process that
needs a task compiles it with numba and writes its object code (an x86-64 ELF relocatable file) to
the cache; later processes map that file themselves (:func:`_load_object`, a minimal loader:
allocated sections copied into fresh pages, absolute relocations applied, code pages made
executable) and never import numba. The few runtime symbols the code refers to come from numba's
own C helper libraries (loaded as extension modules, without the numba package), Python's C API and
the C library.

A cache entry is keyed by the task's source files, numba's and llvmlite's versions, the Python
version and the CPU's model and feature flags (numba compiles for the host CPU). Where anything
is missing or unusual (not x86-64 Linux, no writable cache, an unknown relocation), tasks are
compiled by numba in the process, as before. ``ONYX_CACHE_DIR`` sets the cache folder (default
``$XDG_CACHE_HOME/onyx`` or ``~/.cache/onyx``); ``ONYX_NO_PERF=1`` turns compiled code off.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import platform
import struct
import sys
import threading
from functools import cache

try:  # CPython's own BLAKE2: hashlib would load OpenSSL's libcrypto (~3 MB of memory) for one hash
    from _blake2 import blake2b as _hash
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import blake2b as _hash

from onyx.ops import _perf

_LOCK = threading.Lock()
_ADDRESSES: dict[tuple[str, str], int] = {}
_KEEP: list = []  # compiled numba cfuncs and mapped regions: alive for the process

_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4
_SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS = 2, 4, 8
_SHN_ABS, _SHN_COMMON = 0xFFF1, 0xFFF2
_R_X86_64_64, _R_X86_64_PC32, _R_X86_64_PLT32, _R_X86_64_PC64 = 1, 2, 4, 24
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_PRIVATE_ANONYMOUS = 0x22


class NativeError(Exception):
    """An object file this loader does not handle (the task is then compiled by numba)."""


@cache
def _numba_dir() -> str | None:
    spec = importlib.util.find_spec("numba")
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None


def available() -> bool:
    """Whether compiled tasks can be had at all (numba installed, ONYX_NO_PERF unset)."""
    return not _perf.perf_disabled() and _numba_dir() is not None


def _loadable_here() -> bool:
    return sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")


def _cache_dir() -> str | None:
    """The cache folder, or None where there is none to use (no home folder to put it in)."""
    explicit = os.environ.get("ONYX_CACHE_DIR")
    if explicit:
        return explicit
    root = os.environ.get("XDG_CACHE_HOME")
    if not root:
        home = os.path.expanduser("~")
        if home.startswith("~"):  # unexpanded: never a folder named "~" in the working directory
            return None
        root = os.path.join(home, ".cache")
    return os.path.join(root, "onyx")


@cache
def _machine_key() -> bytes:
    """What the compiled code depends on besides its source: numba's and llvmlite's versions, the
    Python version and the CPU (model name and feature flags)."""
    parts = [sys.version.encode(), platform.machine().encode()]
    for pkg in ("numba", "llvmlite"):
        spec = importlib.util.find_spec(pkg)
        version = os.path.join(os.path.dirname(spec.origin), "_version.py") if spec and spec.origin else ""
        try:
            with open(version, "rb") as fh:
                parts.append(fh.read())
        except OSError:
            parts.append(b"?")
    try:
        with open("/proc/cpuinfo", "rb") as fh:
            info = fh.read().split(b"\n\n")[0]
        parts += [ln for ln in info.splitlines() if ln.startswith((b"model name", b"flags", b"vendor_id"))]
    except OSError:
        parts.append(b"?")
    return _hash(b"\0".join(parts)).digest()


@cache
def _source_key(module: str) -> str:
    """The cache key of ``module``'s tasks: the machine (_machine_key) and every source file of the
    module's folder (the constants a task compiles in may come from its neighbours, such as the erf
    fits of onyx.ops.math._erf) and of _jit_team.py."""
    folder = os.path.dirname(importlib.util.find_spec(module).origin)
    digest = _hash(_machine_key())
    for path in sorted(glob.glob(os.path.join(folder, "*.py"))) + [
        os.path.join(os.path.dirname(__file__), "_jit_team.py")
    ]:
        with open(path, "rb") as fh:
            digest.update(os.path.basename(path).encode() + b"\0" + fh.read())
    return digest.hexdigest()[:32]


def task(module: str, name: str) -> int | None:
    """The address of the team task ``name`` of the numba module ``module`` (for example
    ``("onyx.ops.nn._jit", "_depthwise_cl_task")``): from the cache when it holds it (numba is not
    imported), else compiled by numba (and its object code cached). None without the perf extra."""
    key = (module, name)
    address = _ADDRESSES.get(key)
    if address is not None:
        return address
    if not available():
        return None
    with _LOCK:
        if key not in _ADDRESSES:
            _ADDRESSES[key] = _find_or_compile(module, name)
    return _ADDRESSES[key]


def _find_or_compile(module: str, name: str) -> int:
    path = None
    folder = _cache_dir() if _loadable_here() else None
    if folder is not None:
        path = os.path.join(folder, f"{module}.{name}.{_source_key(module)}.o")
        try:
            with open(path, "rb") as fh:
                if hasattr(os, "getuid") and os.fstat(fh.fileno()).st_uid != os.getuid():
                    raise NativeError("a cache file owned by another user is not run")
                return _load_object(fh.read())
        except Exception:  # noqa: BLE001 - absent, damaged or unusable: compile below (and rewrite it)
            pass
    address, obj = _compile(module, name)
    if path is not None and obj is not None:
        _write_atomically(path, obj)
    return address


def _compile(module: str, name: str) -> tuple[int, bytes | None]:
    """numba's compilation of the task: (its address in this process, its object code or None)."""
    from numba import cfunc

    from onyx.ops._jit_team import TASK

    compiled = cfunc(TASK, nogil=True)(getattr(_perf.jit_module(module), name))
    _KEEP.append(compiled)
    try:
        library = compiled._library
        obj = bytes(library.codegen._tm.emit_object(library._final_module))
        _load_object(obj)  # only what this loader handles is cached
    except Exception:  # noqa: BLE001 - numba internals moved, or an object this loader refuses
        obj = None
    return compiled.address, obj


def _write_atomically(path: str, data: bytes) -> None:
    import tempfile

    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk: the next process compiles again
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


# --- the loader --------------------------------------------------------------------------------


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.mprotect.restype = ctypes.c_int
    return libc


@cache
def _symbols() -> dict[str, int]:
    """Addresses of the runtime symbols numba's code refers to: its helper library's and runtime's
    (from their extension modules, loaded without the numba package)."""
    found: dict[str, int] = {}
    base = _numba_dir()
    for rel, modname, prefix in (
        ("_helperlib*.so", "numba._helperlib", "numba_"),
        (os.path.join("core", "runtime", "_nrt_python*.so"), "numba.core.runtime._nrt_python", "NRT_"),
    ):
        mod = sys.modules.get(modname)
        if mod is None:
            paths = glob.glob(os.path.join(base, rel))
            if not paths:
                raise NativeError(f"no {rel} in {base}")
            spec = importlib.util.spec_from_file_location(modname, paths[0])
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[modname] = mod  # numba, if imported later, finds the same module (one state)
        for key, address in mod.c_helpers.items():
            found[key if key.startswith("_") else prefix + key] = int(address)
    return found


_PROCESS = ctypes.CDLL(None)


def _resolve(name: str) -> int:
    address = _symbols().get(name)
    if address is not None:
        return address
    for lib in (ctypes.pythonapi, _PROCESS):
        try:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            continue
    raise NativeError(f"unresolved symbol {name}")


def _map(size: int) -> int:
    libc = _libc()
    size = max(4096, (size + 4095) // 4096 * 4096)
    base = libc.mmap(None, size, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE_ANONYMOUS, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        raise NativeError("mmap failed")
    return base


def _load_object(obj: bytes) -> int:
    """Map the ELF object ``obj`` and return the address of its one ``cfunc.*`` symbol."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise NativeError("not a 64-bit little-endian ELF file")
    e_type, e_machine = struct.unpack_from("<HH", obj, 16)
    if e_type != 1 or e_machine != 62:
        raise NativeError("not an x86-64 relocatable object")
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    secs = [
        dict(
            zip(("name", "type", "flags", "addr", "off", "size", "link", "info", "align", "entsize"), fields)
        )
        for fields in (struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum))
    ]

    def string(table: dict, offset: int) -> str:
        start = table["off"] + offset
        return obj[start : obj.index(b"\0", start)].decode()

    for s in secs:
        s["sname"] = string(secs[shstrndx], s["name"])
    symtab = next(s for s in secs if s["type"] == _SHT_SYMTAB)
    symbols = []  # (name, section index, value, size)
    for j in range(symtab["size"] // 24):
        st_name, _, _, shndx, value, size = struct.unpack_from("<IBBHQQ", obj, symtab["off"] + j * 24)
        symbols.append((string(secs[symtab["link"]], st_name) if st_name else "", shndx, value, size))
    # two regions: code (made read + execute) and data (read + write, COMMON symbols included: numba's
    # environment pointer, zero here, read only on paths that raise); .eh_frame is not needed
    regions = {True: 0, False: 0}

    def place(code: bool, align: int, size: int) -> int:
        at = (regions[code] + align - 1) // align * align
        regions[code] = at + size
        return at

    for s in secs:
        if s["flags"] & _SHF_ALLOC and s["size"] and s["sname"] != ".eh_frame":
            s["code"] = bool(s["flags"] & _SHF_EXECINSTR)
            s["at"] = place(s["code"], max(1, s["align"]), s["size"])
    commons = {
        j: place(False, max(1, value), size)
        for j, (_, shndx, value, size) in enumerate(symbols)
        if shndx == _SHN_COMMON
    }
    bases = {kind: _map(size) for kind, size in regions.items()}
    _KEEP.append(bases)
    for s in secs:
        if "at" in s:
            s["address"] = bases[s["code"]] + s["at"]
            if s["type"] != _SHT_NOBITS:  # NOBITS stays as the zeroed pages it is mapped as
                if s["off"] + s["size"] > len(obj):
                    raise NativeError(f"section {s['sname']} runs past the end of the file")
                ctypes.memmove(s["address"], obj[s["off"] : s["off"] + s["size"]], s["size"])
    names, addresses = [], []
    for j, (name, shndx, value, _) in enumerate(symbols):
        if shndx == 0:
            address = _resolve(name) if name else 0
        elif shndx < 0xFF00:
            if shndx >= len(secs):
                raise NativeError(f"symbol {name!r} in section {shndx} of {len(secs)}")
            address = secs[shndx].get("address", 0) + value if "address" in secs[shndx] else None
        elif shndx == _SHN_ABS:
            address = value
        elif shndx == _SHN_COMMON:
            address = bases[False] + commons[j]
        else:
            raise NativeError(f"symbol {name!r} in special section {shndx:#x}")
        names.append(name)
        addresses.append(address)
    for s in secs:
        target = secs[s["info"]] if s["type"] == _SHT_RELA else None
        if target is None or "address" not in target:
            continue
        for k in range(s["size"] // 24):
            offset, info, addend = struct.unpack_from("<QQq", obj, s["off"] + k * 24)
            kind, sym = info & 0xFFFFFFFF, info >> 32
            if addresses[sym] is None:
                raise NativeError(f"relocation against an unmapped section in {target['sname']}")
            width = 4 if kind in (_R_X86_64_PC32, _R_X86_64_PLT32) else 8
            if offset + width > target["size"] or sym >= len(addresses):
                raise NativeError(f"a relocation outside {target['sname']} or its symbols")
            where = target["address"] + offset
            value = addresses[sym] + addend
            if kind == _R_X86_64_64:
                ctypes.c_uint64.from_address(where).value = value & (2**64 - 1)
            elif kind == _R_X86_64_PC64:
                ctypes.c_uint64.from_address(where).value = (value - where) & (2**64 - 1)
            elif kind in (_R_X86_64_PC32, _R_X86_64_PLT32):
                rel = value - where
                if not -(2**31) <= rel < 2**31:
                    raise NativeError("a 32-bit relative relocation out of range")
                ctypes.c_int32.from_address(where).value = rel
            else:
                raise NativeError(f"relocation type {kind}")
    libc = _libc()
    code_size = max(4096, (regions[True] + 4095) // 4096 * 4096)
    if libc.mprotect(bases[True], code_size, _PROT_READ | _PROT_EXEC) != 0:
        raise NativeError("mprotect failed")
    entries = [a for n, a in zip(names, addresses) if n.startswith("cfunc.") and a]
    if len(entries) != 1:
        raise NativeError(f"{len(entries)} cfunc symbols")
    return entries[0]
