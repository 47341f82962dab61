"""The six attributes every convolution op has (Conv, ConvInteger, QLinearConv, ConvTranspose,
com.microsoft FusedConv), written once.

The registry reads an op's attributes from its kernel's keyword-only parameters. A kernel decorated
with :func:`with_conv_attributes` takes these six as ``**conv`` and is seen by the registry (through
``inspect.signature``) as declaring each of them, with the spec's default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple


class ConvAttributes(NamedTuple):
    """The attributes shared by the convolution ops, with the spec's defaults."""

    auto_pad: str = "NOTSET"
    dilations: Any = None
    group: int = 1
    kernel_shape: Any = None
    pads: Any = None
    strides: Any = None


DEFAULTS: dict[str, Any] = ConvAttributes()._asdict()


def with_conv_attributes(fn: Callable) -> Callable:
    """Decorator: declare the :class:`ConvAttributes` as keyword-only parameters of the kernel ``fn``,
    whose signature ends in ``**conv`` (they come after its own attributes and before ``_ctx`` and
    ``_node``). Changes no call: ``fn`` still gets them in ``conv``, with only those given."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if not params or params[-1].kind is not inspect.Parameter.VAR_KEYWORD:
        raise TypeError(f"{fn.__qualname__}: a convolution kernel takes its attributes as **conv")
    own = [p for p in params[:-1] if not p.name.startswith("_")]
    special = [p for p in params[:-1] if p.name.startswith("_")]
    shared = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v) for k, v in DEFAULTS.items()]
    fn.__signature__ = sig.replace(parameters=own + shared + special)
    return fn


def conv_kwargs(conv: dict[str, Any]) -> dict[str, Any]:
    """The six attributes for ``conv_forward``: those in ``conv``, the spec's defaults for the rest."""
    return {**DEFAULTS, **conv}
