"""Execution providers. onyx's numpy provider answers to onnxruntime's name CPUExecutionProvider.

The table is open: another provider (an accelerator) registers itself with :func:`register_provider`
and sessions list it when asked for by name.
"""

from __future__ import annotations

import warnings
from typing import Any

from onyx.errors import Fail, InvalidArgument

CPU = "CPUExecutionProvider"
_providers: dict[str, dict[str, Any]] = {CPU: {}}


def register_provider(name: str, default_options: dict[str, Any] | None = None) -> None:
    """Make a provider name available to sessions."""
    _providers[name] = dict(default_options or {})


def get_available_providers() -> list[str]:
    """The providers this installation can run, CPUExecutionProvider last (as onnxruntime orders them)."""
    return [p for p in _providers if p != CPU] + [CPU]


def get_all_providers() -> list[str]:
    return get_available_providers()


def resolve_providers(
    providers: list[Any] | None, provider_options: list[dict] | None, strict: bool = False
) -> tuple[list[str], list[dict[str, Any]]]:
    """Normalise the ``providers`` argument; unknown names fall back to the CPU provider with a warning
    (``strict``, as set_providers: they raise, naming the available ones)."""
    if providers is None:
        return [CPU], [{}]
    if isinstance(providers, str):
        providers = [providers]
    if provider_options is not None and len(provider_options) != len(providers):
        raise InvalidArgument("provider_options must have one dict per provider")
    names: list[str] = []
    options: list[dict[str, Any]] = []
    for i, p in enumerate(providers):
        if isinstance(p, tuple | list):
            name, opts = p[0], dict(p[1]) if len(p) > 1 else {}
        else:
            name, opts = p, {}
        if provider_options is not None:
            opts.update(provider_options[i])
        if not isinstance(name, str):
            raise InvalidArgument(f"provider names are strings, got {type(name).__name__}")
        if name not in _providers and strict:
            raise Fail(
                f"Unknown Provider Type: {name}. "
                f"Available providers: '{', '.join(get_available_providers())}'"
            )
        if name not in _providers:
            warnings.warn(
                f"Specified provider '{name}' is not in available provider names. "
                f"Available providers: '{', '.join(get_available_providers())}'",
                stacklevel=3,
            )
            continue
        if name not in names:
            names.append(name)
            options.append({**_providers[name], **{k: str(v) for k, v in opts.items()}})
    if CPU not in names:
        names.append(CPU)
        options.append({})
    return names, options
