"""What the ONNX spec says of each default-domain operator version, read from ``_spec.json``.

The table (made by ``_generate_spec.py`` from the ``onnx`` package) lists, per operator, every version at
which its schema changed, with the element types of each input and output, the formal inputs, the
attributes and their defaults. The converter walks those versions between two opsets.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Any

SINGLE, OPTIONAL, VARIADIC = 0, 1, 2


@dataclass(frozen=True)
class Schema:
    """One version of an operator."""

    op_type: str
    since: int
    deprecated: bool
    input_types: tuple[tuple[int, ...] | None, ...]
    output_types: tuple[tuple[int, ...] | None, ...]
    inputs: tuple[tuple[str, int], ...]  # (name, SINGLE / OPTIONAL / VARIADIC)
    attributes: dict[str, Any]  # name -> default (None: required or no comparable default)
    max_outputs: int

    @property
    def variadic(self) -> bool:
        return bool(self.inputs) and self.inputs[-1][1] == VARIADIC

    def input_types_at(self, i: int) -> tuple[int, ...] | None:
        if i < len(self.input_types):
            return self.input_types[i]
        return self.input_types[-1] if self.variadic and self.input_types else None

    def output_types_at(self, i: int) -> tuple[int, ...] | None:
        if i < len(self.output_types):
            return self.output_types[i]
        return self.output_types[-1] if self.output_types else None


@functools.cache
def _table() -> dict[str, tuple[Schema, ...]]:
    with open(os.path.join(os.path.dirname(__file__), "_spec.json")) as fh:
        raw = json.load(fh)
    out = {}
    for name, versions in raw.items():
        out[name] = tuple(
            Schema(
                name,
                since,
                bool(dep),
                tuple(tuple(t) if t is not None else None for t in ins),
                tuple(tuple(t) if t is not None else None for t in outs),
                tuple((n, o) for n, o in formal),
                attrs,
                max_out,
            )
            for since, dep, ins, outs, formal, attrs, max_out in versions
        )
    return out


def max_opset() -> int:
    """The newest default-domain opset the table knows."""
    return max(s.since for versions in _table().values() for s in versions)


def versions(op_type: str) -> tuple[Schema, ...]:
    """Every version of ``op_type``, oldest first (empty: not a default-domain operator)."""
    return _table().get(op_type, ())


def schema_at(op_type: str, opset: int) -> Schema | None:
    """The version of ``op_type`` in force at ``opset`` (None: the operator does not exist there)."""
    found = None
    for s in versions(op_type):
        if s.since <= opset:
            found = s
    return found


def known(op_type: str) -> bool:
    return op_type in _table()
