"""Regenerate ``_spec.json`` from the installed ``onnx`` package (a development tool, never imported).

The converter needs, for every default-domain operator, the opset versions at which its schema changed
(and whether that version deprecated it) and, at each version, the element types (and other value kinds)
each input and output accepts, its formal inputs (name, 0 single / 1 optional / 2 variadic), its
attributes with their defaults and its largest output count. They are data, read once here, so that
converting needs no ``onnx``.

    python -m onyx.version_converter._generate_spec
"""

from __future__ import annotations

import json
import os

TYPE_CODES = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "string": 8,
    "bool": 9, "float16": 10, "double": 11, "uint32": 12, "uint64": 13, "complex64": 14, "complex128": 15,
    "bfloat16": 16, "float8e4m3fn": 17, "float8e4m3fnuz": 18, "float8e5m2": 19, "float8e5m2fnuz": 20,
    "uint4": 21, "int4": 22, "float4e2m1": 23, "float8e8m0": 24, "uint2": 25, "int2": 26,
}  # fmt: skip
MAX_OPSET = 28


def _elem_types(type_strs: list[str]) -> list[int]:
    """'tensor(float)' -> 1; sequences and optionals of tensors count by their element type."""
    out = set()
    for s in type_strs:
        inner = s
        while "(" in inner:
            inner = inner[inner.index("(") + 1 : inner.rindex(")")]
        if inner in TYPE_CODES:
            out.add(TYPE_CODES[inner])
    return sorted(out)


# value kinds other than tensors, as negative codes in an allowed-types list
KIND_CODES = {"seq": -1, "optional": -2, "map": -3, "sparse_tensor": -4}


def _param_types(schema, param) -> list[int] | None:
    """The element types a formal input/output allows as a tensor, plus a negative code for each other
    kind of value it takes (sequence, optional, map, sparse tensor); None: no constraint listed."""
    constraints = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    strs = list(constraints.get(param.type_str, [param.type_str]))
    tensors = _elem_types([s for s in strs if s.startswith("tensor(")])
    kinds = sorted({code for s in strs for name, code in KIND_CODES.items() if s.startswith(name + "(")})
    out = tensors + kinds
    return out or None


def _default(attr) -> object:
    """An attribute's default as JSON (None: required, or no default a node could match)."""
    import onnx.helper

    if attr.required or not attr.default_value.name:
        return None
    v = onnx.helper.get_attribute_value(attr.default_value)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, int | float):
        return v
    if isinstance(v, list) and all(isinstance(x, int | float) for x in v):
        return list(v)
    return None


def build() -> dict:
    import onnx.defs

    table: dict[str, list] = {}
    names = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})
    for name in names:
        versions = []
        seen = set()
        for opset in range(1, MAX_OPSET + 1):
            try:
                s = onnx.defs.get_schema(name, opset, "")
            except onnx.defs.SchemaError:
                continue
            if s.since_version in seen:
                continue
            seen.add(s.since_version)
            ins = [_param_types(s, p) for p in s.inputs]
            outs = [_param_types(s, p) for p in s.outputs]
            formal = [[p.name, int(p.option)] for p in s.inputs]
            attrs = {a: _default(s.attributes[a]) for a in sorted(s.attributes)}
            versions.append([s.since_version, int(s.deprecated), ins, outs, formal, attrs, s.max_output])
        table[name] = versions
    return table


def main() -> None:
    path = os.path.join(os.path.dirname(__file__), "_spec.json")
    with open(path, "w") as fh:
        json.dump(build(), fh, separators=(",", ":"), sort_keys=True)
        fh.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
