"""Types of values: tensors with symbolic shapes, sequences, maps, optionals, sparse tensors.

A shape is a :class:`Shape`, a list of dims where each dim is an ``int`` (dim_value), a ``str``
(dim_param, a symbolic name) or ``None`` (unknown). ``None`` as a shape means unknown rank.
"""

from __future__ import annotations

from typing import Any

from onyx.ir.dtypes import DataType

Dim = int | str | None


def _copy_slotted(obj: Any) -> Any:
    """A copy of a small slotted type object: lists are copied and nested types/shapes copied in turn,
    so that editing the copy (a free-dimension override, say) never changes the original."""
    new = object.__new__(type(obj))
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if not hasattr(obj, name):
                continue
            v = getattr(obj, name)
            if isinstance(v, TypeBase | Shape):
                v = v.copy()
            elif isinstance(v, list):
                v = [_copy_item(x) for x in v]
            setattr(new, name, v)
    return new


def _copy_item(x: Any) -> Any:
    if isinstance(x, TypeBase | Shape):
        return x.copy()
    return list(x) if isinstance(x, list) else x


class Shape:
    """A tensor shape with symbolic dims."""

    __slots__ = ("dims", "denotations", "dim_unknown", "unknown", "explicit")

    def __init__(self, dims: Any = ()):
        self.dims: list[Dim] = list(dims)
        self.denotations: list[str | None] | None = None
        self.dim_unknown: list[list[bytes]] | None = None  # unknown fields per dim
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()

    @property
    def rank(self) -> int:
        return len(self.dims)

    def copy(self) -> Shape:
        """An independent copy (dims, denotations and kept unknown fields)."""
        return _copy_slotted(self)

    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.dims)

    def __iter__(self):
        return iter(self.dims)

    def __len__(self) -> int:
        return len(self.dims)

    def __getitem__(self, i):
        return self.dims[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self.dims == other.dims
        if isinstance(other, list | tuple):
            return self.dims == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self.dims))

    def __repr__(self) -> str:
        return "[" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"


class TypeBase:
    """Common fields of every TypeProto kind."""

    __slots__ = ("denotation", "unknown", "inner_unknown", "explicit")

    def __init__(self) -> None:
        self.denotation: str | None = None
        self.unknown: list[bytes] = []
        self.inner_unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()

    def ort_name(self) -> str:
        raise NotImplementedError

    def copy(self) -> TypeBase:
        """An independent copy, nested element types and shapes included."""
        return _copy_slotted(self)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return ()


def _elem_name(elem_type: int | None) -> str:
    try:
        return DataType(elem_type or 0).onnx_name
    except ValueError:
        return f"unknown({elem_type})"


class TensorType(TypeBase):
    """tensor(elem_type) with an optional shape."""

    __slots__ = ("elem_type", "shape")

    def __init__(self, elem_type: int | None = None, shape: Shape | list | tuple | None = None):
        super().__init__()
        self.elem_type = elem_type
        self.shape = shape if shape is None or isinstance(shape, Shape) else Shape(shape)

    def ort_name(self) -> str:
        return f"tensor({_elem_name(self.elem_type)})"

    def _key(self) -> tuple:
        return (self.elem_type, None if self.shape is None else tuple(self.shape.dims))

    def __repr__(self) -> str:
        return f"{self.ort_name()}{self.shape if self.shape is not None else ''}"


class SparseTensorType(TensorType):
    """sparse_tensor(elem_type) with an optional shape."""

    __slots__ = ()

    def ort_name(self) -> str:
        return f"sparse_tensor({_elem_name(self.elem_type)})"


class SequenceType(TypeBase):
    """seq(elem)."""

    __slots__ = ("elem",)

    def __init__(self, elem: TypeBase | None = None):
        super().__init__()
        self.elem = elem

    def ort_name(self) -> str:
        return f"seq({self.elem.ort_name() if self.elem else 'undefined'})"

    def _key(self) -> tuple:
        return (self.elem,)

    def __repr__(self) -> str:
        return self.ort_name()


class OptionalType(TypeBase):
    """optional(elem)."""

    __slots__ = ("elem",)

    def __init__(self, elem: TypeBase | None = None):
        super().__init__()
        self.elem = elem

    def ort_name(self) -> str:
        return f"optional({self.elem.ort_name() if self.elem else 'undefined'})"

    def _key(self) -> tuple:
        return (self.elem,)

    def __repr__(self) -> str:
        return self.ort_name()


class MapType(TypeBase):
    """map(key_type, value)."""

    __slots__ = ("key_type", "value")

    def __init__(self, key_type: int | None = None, value: TypeBase | None = None):
        super().__init__()
        self.key_type = key_type
        self.value = value

    def ort_name(self) -> str:
        v = self.value.ort_name() if self.value else "undefined"
        return f"map({_elem_name(self.key_type)},{v})"

    def _key(self) -> tuple:
        return (self.key_type, self.value)

    def __repr__(self) -> str:
        return self.ort_name()


class OpaqueType(TypeBase):
    """opaque(domain, name)."""

    __slots__ = ("domain", "name")

    def __init__(self, domain: str | None = None, name: str | None = None):
        super().__init__()
        self.domain = domain
        self.name = name

    def ort_name(self) -> str:
        return f"opaque({self.domain or ''},{self.name or ''})"

    def _key(self) -> tuple:
        return (self.domain, self.name)


class UnknownType(TypeBase):
    """A TypeProto with no value set (or a kind this version does not know)."""

    __slots__ = ()

    def ort_name(self) -> str:
        return "undefined"

    def __repr__(self) -> str:
        return "undefined"


def tensor_type(elem: Any, shape: Any = None) -> TensorType:
    """Build a TensorType from a DataType, numpy dtype or name and a list of dims."""
    from onyx.ir.dtypes import from_numpy

    if isinstance(elem, str) and elem.upper() in DataType.__members__:
        code = int(DataType[elem.upper()])
    elif isinstance(elem, int):
        code = int(elem)
    else:
        code = int(from_numpy(elem))
    return TensorType(code, None if shape is None else Shape(shape))
