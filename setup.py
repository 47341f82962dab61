"""Builds onyx's compiled kernels: every ``src/onyx/kernels/_*.c`` becomes the optional extension
module ``onyx.kernels._*``.

They are C with OpenMP, compiled at install time as scikit-learn compiles its kernels. A machine with
no C compiler (or ``ONYX_NO_COMPILE=1``) still installs: each extension is optional, and onyx then runs
the numpy path of every kernel (``onyx info`` says which). Everything else about the package lives in
pyproject.toml.
"""

from __future__ import annotations

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

KERNELS = "src/onyx/kernels"


def _numpy_include() -> list[str]:
    """numpy's C headers (a build requirement; _arena.c uses its data memory handler API)."""
    try:
        import numpy
    except ImportError:  # an extension that needs them then fails to build and is left out
        return []
    return [numpy.get_include()]


def _extensions() -> list[Extension]:
    if os.environ.get("ONYX_NO_COMPILE", "") not in ("", "0"):
        return []
    numpy_include = _numpy_include()
    out = []
    for source in sorted(glob.glob(os.path.join(KERNELS, "_*.c"))):
        stem = os.path.splitext(os.path.basename(source))[0]
        out.append(
            Extension(
                f"onyx.kernels.{stem}",
                sources=[source.replace(os.sep, "/")],
                depends=glob.glob(os.path.join(KERNELS, "*.h")),
                include_dirs=[KERNELS, *numpy_include],
                optional=True,
            )
        )
    return out


class BuildKernels(build_ext):
    """Adds OpenMP (one flag per compiler family) and optimisation flags; an extension whose build
    fails with OpenMP is tried once more without it, and one that still fails is left out (the
    extensions are ``optional``: onyx then uses the numpy path)."""

    def build_extension(self, ext: Extension) -> None:
        msvc = self.compiler.compiler_type == "msvc"
        base = ["/O2"] if msvc else ["-O3", "-std=gnu11", "-ffp-contract=fast", "-fno-math-errno"]
        base += [] if msvc else ["-fno-trapping-math"]
        openmp = ["/openmp"] if msvc else ["-fopenmp"]
        link = [] if msvc else ["-fopenmp"]
        extra, extra_link = list(ext.extra_compile_args), list(ext.extra_link_args)
        if sys.platform != "darwin":  # Apple's clang has no OpenMP
            ext.extra_compile_args = extra + base + openmp
            ext.extra_link_args = extra_link + link
            try:
                return super().build_extension(ext)
            except Exception as exc:  # noqa: BLE001 - any compiler failure: try without OpenMP
                self.warn(f"{ext.name}: building with OpenMP failed ({exc}); trying without")
        ext.extra_compile_args = extra + base
        ext.extra_link_args = extra_link
        super().build_extension(ext)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildKernels})
