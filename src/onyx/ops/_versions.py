"""One implementation registered for several opset versions whose attribute sets differ.

The registry reads a kernel's inputs and attributes from its signature. When versions of an operator
differ only by an attribute or two (LSTM-7 lacks LSTM-1's ``output_sequence``, TreeEnsembleRegressor-3
adds ``*_as_tensor``), writing each version's full signature repeats the spec. Here the spec is written
once, as a table of attributes per version, and each version gets a kernel whose signature is exactly
its attribute set (so that the registry, the binder and shape inference see the version as the spec
defines it), all calling one implementation with every attribute filled in.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from onyx.ops.registry import op

_KW = inspect.Parameter.KEYWORD_ONLY
_POS = inspect.Parameter.POSITIONAL_OR_KEYWORD


def versioned_kernel(
    core: Callable[..., Any],
    name: str,
    inputs: Sequence[str],
    required_inputs: int,
    attributes: Mapping[str, Any],
    specials: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """A kernel named ``name`` with positional ``inputs`` (the first ``required_inputs`` required, the
    others defaulting to None) and keyword-only ``attributes`` (name -> default) plus ``specials``
    (``_num_outputs``, ``_ctx``... -> default), calling ``core(*inputs, **every attribute)``."""
    specials = dict(specials or {})
    defaults = {**dict(attributes), **specials}
    params = [
        inspect.Parameter(n, _POS, **({} if i < required_inputs else {"default": None}))
        for i, n in enumerate(inputs)
    ]
    params += [inspect.Parameter(n, _KW, default=v) for n, v in defaults.items()]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return core(*args, **{**defaults, **kwargs})

    kernel.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__module__ = core.__module__
    kernel.__doc__ = core.__doc__
    return kernel


def register_versions(
    op_type: str,
    core: Callable[..., Any],
    *,
    inputs: Sequence[str],
    required_inputs: int,
    attributes: Mapping[str, Any],
    versions: Sequence[tuple[int, int | None, Mapping[str, Any], Sequence[str]]],
    specials: Mapping[str, Any] | None = None,
    domain: str = "",
    prepare: Callable[..., Any] | None = None,
) -> list[Callable[..., Any]]:
    """Register ``core`` for each ``(since, until, added, removed)`` of ``versions``: the version's
    attributes are ``attributes`` with ``added`` (name -> default, also overriding a default) and
    without ``removed``. ``prepare`` (see the registry) is shared by every version. Returns the kernels."""
    kernels = []
    for since, until, added, removed in versions:
        attrs = {k: v for k, v in {**dict(attributes), **dict(added)}.items() if k not in removed}
        attrs = dict(sorted(attrs.items()))
        name = f"{op_type.lower()}_{since}"
        fn = versioned_kernel(core, name, inputs, required_inputs, attrs, specials)
        kernels.append(op(op_type, domain=domain, since=since, until=until, prepare=prepare)(fn))
    return kernels
