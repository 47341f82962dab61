"""Random inputs drawn from a model's declared input types, for comparing models without data."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument, OnyxError
from onyx.ir.dtypes import DataType
from onyx.ir.model import Model
from onyx.ir.types import TensorType


def symbolic_dims(model: Model) -> list[str]:
    """The symbolic dimension names of the model's inputs, in order of appearance."""
    names: dict[str, None] = {}
    for v in _fed_inputs(model):
        if isinstance(v.type, TensorType) and v.type.shape is not None:
            names.update((d, None) for d in v.type.shape.dims if isinstance(d, str))
    return list(names)


def random_feeds(model: Model, seed: int = 0, dims: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """One array per graph input: floats from a standard normal, integers in [0, 10), booleans at random.

    Symbolic dimensions take their size from ``dims`` (by name), else 1; unknown dimensions are 1.
    """
    dims = dict(dims or {})
    known = symbolic_dims(model)
    unknown = sorted(set(dims) - set(known))
    if unknown:
        raise InvalidArgument(
            f"unknown dimension name(s) {unknown}: the model's symbolic input dimensions are {known}"
        )
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for v in _fed_inputs(model):
        t = v.type
        if not isinstance(t, TensorType) or not t.elem_type:
            raise InvalidArgument(
                f"input {v.name!r} is not a tensor of known type ({t.ort_name() if t else 'no type'}): "
                "give its value with --input"
            )
        try:
            dtype = DataType(t.elem_type).numpy_dtype
        except (ValueError, OnyxError):
            raise InvalidArgument(f"input {v.name!r}: no random values for {t.ort_name()}") from None
        shape = [
            d if isinstance(d, int) and d >= 0 else dims.get(d, 1) if isinstance(d, str) else 1
            for d in (t.shape.dims if t.shape is not None else [])
        ]
        feeds[v.name] = _draw(rng, dtype, shape, v.name)
    return feeds


def _draw(rng: np.random.Generator, dtype: np.dtype, shape: list[int], name: str) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 10, size=shape).astype(dtype)
    if dtype.kind in "fc" or dtype.kind == "V":  # V: ml_dtypes' float types (bfloat16, float8...)
        return rng.standard_normal(shape).astype(dtype)
    raise InvalidArgument(f"input {name!r}: no random values for element type {dtype}: give it with --input")


def _fed_inputs(model: Model) -> list[Any]:
    g = model.graph
    return [v for v in g.inputs if v.name not in g.initializers]
