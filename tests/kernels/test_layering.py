"""The layering of issue 18: operators call typed functions of onyx.kernels and never import a compiler,
pointers, threads or BLAS thread control themselves. Checked on the source with ``ast`` (no import
runs), so that a new operator that reaches past the kernels layer fails here, naming the file."""

from __future__ import annotations

import ast
from pathlib import Path

import onyx.ops

OPS = Path(onyx.ops.__file__).parent

#: modules (and their submodules) no operator may import
FORBIDDEN = (
    "numba",
    "ctypes",
    "threading",
    "concurrent.futures",
    "onyx.kernels.parallel",
    "onyx.kernels.blas_threads",
    "onyx.kernels.mkl",
    "onyx.kernels._threads",
    "onyx.kernels._loader",
)


#: what an operator module may take from ``threading``: a lock guarding a cache shared by sessions on
#: several threads (the registry's lazy imports, a tree cache) is not threads of its own
LOCKS = ("Lock", "RLock")


def forbidden(module: str) -> bool:
    """Whether importing ``module`` reaches past the kernels layer: a FORBIDDEN module or one below it,
    or a compiled extension ``onyx.kernels._<name>``."""
    if any(module == f or module.startswith(f + ".") for f in FORBIDDEN):
        return True
    parts = module.split(".")
    return parts[:2] == ["onyx", "kernels"] and len(parts) > 2 and parts[2].startswith("_")


def imported_modules(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, module) of every module an import in ``tree`` names, ``from a import b`` giving both
    ``a`` and ``a.b`` (b may be a module); relative imports resolved against ``package``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"]
    return found


def locks_only(tree: ast.AST) -> bool:
    """Whether the module uses nothing of ``threading`` but its locks (``threading.Lock()``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "threading" and node.attr not in LOCKS:
                return False
        if isinstance(node, ast.Import) and any(a.name == "threading" and a.asname for a in node.names):
            return False  # an alias hides its uses
    return True


def violations(path: Path, root: Path = OPS.parent.parent) -> list[str]:
    """The forbidden imports of one source file, as 'file:line imports module' (file relative to
    ``root``, the folder above the package)."""
    rel = path.relative_to(root)
    package = ".".join(rel.with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    allowed = {"threading"} if locks_only(tree) else set()
    allowed |= {f"threading.{name}" for name in LOCKS}
    return [
        f"{rel}:{line} imports {mod}"
        for line, mod in imported_modules(tree, package)
        if forbidden(mod) and mod not in allowed
    ]


def test_ops_import_no_thread_compiler_or_blas_thread_module():
    files = sorted(OPS.rglob("*.py"))
    assert len(files) > 100  # the walk found the operator library
    bad = [v for path in files for v in violations(path)]
    assert not bad, "operators must call typed onyx.kernels functions instead:\n" + "\n".join(bad)


def test_threading_is_allowed_for_locks_only(tmp_path):
    """A lock guarding shared state passes; threads, or an alias that hides what is used, do not."""
    cases = {
        "lock.py": ("import threading\n_lock = threading.Lock()\n", False),
        "from_lock.py": ("from threading import RLock\n", False),
        "thread.py": ("import threading\nthreading.Thread(target=print).start()\n", True),
        "from_thread.py": ("from threading import Lock, Thread\n", True),
        "alias.py": ("import threading as t\nt.Lock()\n", True),
    }
    for name, (src, bad) in cases.items():
        (tmp_path / name).write_text(src)
        got = violations(tmp_path / name, tmp_path)
        assert bool(got) == bad, (name, got)
        assert all(g.startswith(f"{name}:1 imports threading") for g in got), got


def test_the_check_catches_each_kind_of_import(tmp_path):
    """The walker sees plain, from, submodule, aliased, nested and relative imports."""
    src = (
        "import threading\n"
        "import concurrent.futures as cf\n"
        "from onyx.kernels import parallel, blas\n"
        "from onyx.kernels._conv import thing\n"
        "from onyx.kernels import _pool\n"
        "def f():\n"
        "    import numba\n"
        "from ..kernels import mkl\n"
        "from onyx.kernels.conv import depthwise_conv\n"
        "from onyx.kernels import blas as b2\n"
    )
    found = [m for _, m in imported_modules(ast.parse(src), "onyx.ops") if forbidden(m)]
    assert sorted(found) == [
        "concurrent.futures",
        "numba",
        "onyx.kernels._conv",
        "onyx.kernels._conv.thing",
        "onyx.kernels._pool",
        "onyx.kernels.mkl",
        "onyx.kernels.parallel",
        "threading",
    ]
