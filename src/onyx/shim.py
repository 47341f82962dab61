"""Serve ``import onnxruntime`` from onyx, in the manner of PyMySQL's ``install_as_MySQLdb()``.

In code::

    import onyx
    onyx.install_as_onnxruntime()      # False (and nothing changed) when a real onnxruntime is installed
    import onnxruntime                 # onyx, with onnxruntime.capi..., .backend, .datasets, .quantization

For programs one cannot edit, an opt-in that needs no extra package::

    python -m onyx.shim install        # writes onyx_as_onnxruntime.pth into this environment's site-packages
    ONYX_AS_ONNXRUNTIME=1 python app.py    # onyx serves onnxruntime (=force: even over a real one)
    python -m onyx.shim uninstall

The .pth file is one line that reads the environment variable and imports nothing else when it is unset,
so the interpreter's start-up is unchanged for every program that does not ask. A console script would
need an entry in pyproject and a second name to learn; ``python -m`` works wherever onyx is importable.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from typing import Any

ENV = "ONYX_AS_ONNXRUNTIME"
PTH_NAME = "onyx_as_onnxruntime.pth"
PTH_LINE = (
    f'import os; os.environ.get("{ENV}", "") in ("1", "force") and '
    '__import__("onyx.shim", fromlist=["install_from_env"]).install_from_env()\n'
)
# the submodules registered at once; any other onnxruntime.X is served from onyx.X when onyx has it
_EAGER = {
    "onnxruntime.capi": "onyx.capi",
    "onnxruntime.capi.onnxruntime_pybind11_state": "onyx.capi.onnxruntime_pybind11_state",
    "onnxruntime.capi._pybind_state": "onyx.capi._pybind_state",
    "onnxruntime.capi.onnxruntime_inference_collection": "onyx.capi.onnxruntime_inference_collection",
    "onnxruntime.backend": "onyx.backend",
    "onnxruntime.datasets": "onyx.datasets",
}


class _AliasLoader(importlib.abc.Loader):
    """Gives the already imported onyx module for an onnxruntime name."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return importlib.import_module(self.target)

    def exec_module(self, module: Any) -> None:  # onyx's module is already executed
        pass


class _OnnxruntimeFinder(importlib.abc.MetaPathFinder):
    """Resolves ``onnxruntime.X.Y`` to ``onyx.X.Y`` (quantization, tools...) when onyx has that module."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith("onnxruntime."):
            return None
        alias = "onyx." + fullname[len("onnxruntime.") :]
        try:
            found = importlib.util.find_spec(alias)
        except (ImportError, ValueError):
            return None
        if found is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(alias), is_package=found.submodule_search_locations is not None
        )


_finder = _OnnxruntimeFinder()


def real_onnxruntime_installed() -> bool:
    """Whether ``import onnxruntime`` would find a real onnxruntime (not onyx standing in for it)."""
    mod = sys.modules.get("onnxruntime")
    if mod is not None:
        return getattr(mod, "__name__", "") != "onyx"
    try:
        return importlib.util.find_spec("onnxruntime") is not None
    except (ImportError, ValueError):
        return False


def install_as_onnxruntime(force: bool = False) -> bool:
    """Register onyx as ``onnxruntime`` (and its submodules) in ``sys.modules`` for this process.

    A real onnxruntime, installed or already imported, is never shadowed unless ``force``; returns whether
    onyx now serves ``import onnxruntime``.
    """
    import onyx

    if sys.modules.get("onnxruntime") is onyx:
        return True
    if real_onnxruntime_installed() and not force:
        return False
    for name in [n for n in sys.modules if n == "onnxruntime" or n.startswith("onnxruntime.")]:
        del sys.modules[name]  # a real one imported before (force): its submodules must not mix in
    sys.modules["onnxruntime"] = onyx
    for alias, target in _EAGER.items():
        sys.modules[alias] = importlib.import_module(target)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    return True


def uninstall_from_process() -> None:
    """Undo :func:`install_as_onnxruntime` in this process (modules that already imported it keep it)."""
    import onyx

    for name in [n for n in sys.modules if n == "onnxruntime" or n.startswith("onnxruntime.")]:
        mod = sys.modules[name]
        if mod is onyx or getattr(mod, "__name__", "").startswith("onyx"):
            del sys.modules[name]
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def install_from_env() -> bool:
    """What the .pth line calls: ``ONYX_AS_ONNXRUNTIME=1`` installs onyx unless a real onnxruntime is
    there, ``=force`` installs it anyway."""
    value = os.environ.get(ENV, "")
    if value not in ("1", "force"):
        return False
    return install_as_onnxruntime(force=value == "force")


def site_packages() -> str:
    """This interpreter's site-packages (the virtual environment's, in one)."""
    return sysconfig.get_paths()["purelib"]


def write_pth(folder: str | None = None) -> str:
    path = os.path.join(folder or site_packages(), PTH_NAME)
    with open(path, "w") as fh:
        fh.write(PTH_LINE)
    return path


def remove_pth(folder: str | None = None) -> str | None:
    path = os.path.join(folder or site_packages(), PTH_NAME)
    if os.path.exists(path):
        os.unlink(path)
        return path
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m onyx.shim",
        description=f"Let {ENV}=1 make onyx serve `import onnxruntime` in this environment.",
    )
    parser.add_argument("action", choices=["install", "uninstall", "status"])
    parser.add_argument("--dir", help="the site-packages folder (default: this interpreter's)")
    args = parser.parse_args(argv)
    if args.action == "install":
        print(f"wrote {write_pth(args.dir)}: set {ENV}=1 (or =force) to serve onnxruntime from onyx")
    elif args.action == "uninstall":
        gone = remove_pth(args.dir)
        print(f"removed {gone}" if gone else "nothing to remove")
    else:
        path = os.path.join(args.dir or site_packages(), PTH_NAME)
        print(
            f"{path}: {'installed' if os.path.exists(path) else 'not installed'}; "
            f"{ENV}={os.environ.get(ENV, '')!r}; real onnxruntime installed: {real_onnxruntime_installed()}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
