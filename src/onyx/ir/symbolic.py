"""Symbolic dimensions: integer polynomials over named dims (``batch``, ``2*seq``, ``batch*seq``).

A :class:`Sym` supports +, -, * with ints and other Syms, and exact // and % by ints, so that shape
subgraphs (Shape -> Gather -> Mul -> Concat -> Reshape) can be evaluated on symbolic values with numpy
object arrays. ``str(sym)`` is how the dim is written into a model's ``dim_param``.
"""

from __future__ import annotations

import re
from typing import Union

Monomial = tuple[str, ...]  # sorted symbol names, repeated for powers
DimLike = Union[int, "Sym"]


class Sym:
    """An integer polynomial in named dims; immutable and hashable."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict[Monomial, int]):
        self.terms = {m: c for m, c in terms.items() if c != 0}
        self._hash = hash(frozenset(self.terms.items()))

    @classmethod
    def named(cls, name: str) -> Sym:
        return cls({(name,): 1})

    @staticmethod
    def make(value: DimLike | dict) -> DimLike:
        """Normalise: a constant polynomial becomes a plain int."""
        if isinstance(value, Sym):
            if not value.terms:
                return 0
            if list(value.terms) == [()]:
                return value.terms[()]
        return value

    # -- arithmetic ----------------------------------------------------------------------------
    @staticmethod
    def _lift(x: object) -> Sym | None:
        if isinstance(x, Sym):
            return x
        if isinstance(x, bool):
            return None
        if isinstance(x, int):
            return Sym({(): x})
        try:
            import numpy as np

            if isinstance(x, np.integer):
                return Sym({(): int(x)})
        except ImportError:  # pragma: no cover
            pass
        return None

    def __add__(self, other: object):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        terms = dict(self.terms)
        for m, c in o.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Sym.make(Sym(terms))

    __radd__ = __add__

    def __neg__(self):
        return Sym.make(Sym({m: -c for m, c in self.terms.items()}))

    def __sub__(self, other: object):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        return self + (-o)

    def __rsub__(self, other: object):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        return o + (-self)

    def __mul__(self, other: object):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Sym.make(Sym(terms))

    __rmul__ = __mul__

    def __floordiv__(self, other: object):
        o = Sym.make(self._lift(other)) if self._lift(other) is not None else None
        if isinstance(o, int) and o != 0 and all(c % o == 0 for c in self.terms.values()):
            return Sym.make(Sym({m: c // o for m, c in self.terms.items()}))
        if isinstance(o, Sym):
            q = self._divide_exact(o)
            if q is not None:
                return q
        return Sym.named(f"({self})//({other})")

    def _divide_exact(self, o: Sym) -> DimLike | None:
        if len(o.terms) != 1:
            if o == self:
                return 1
            return None
        ((mono, coef),) = o.terms.items()
        out: dict[Monomial, int] = {}
        for m, c in self.terms.items():
            rest = list(m)
            for s in mono:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % coef:
                return None
            out[tuple(rest)] = c // coef
        return Sym.make(Sym(out))

    __truediv__ = __floordiv__

    def __mod__(self, other: object):
        if isinstance(other, int) and other != 0 and all(c % other == 0 for c in self.terms.values()):
            return 0
        return Sym.named(f"({self})%({other})")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sym):
            return self.terms == other.terms
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return self._hash

    def __index__(self):  # a Sym is never a concrete index
        raise TypeError(f"symbolic dim {self} has no integer value")

    def __repr__(self) -> str:
        return f"Sym({self})"

    def __str__(self) -> str:
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda mc: (-len(mc[0]), mc[0])):
            name = "*".join(m)
            if not m:
                parts.append(str(c))
            elif c == 1:
                parts.append(name)
            elif c == -1:
                parts.append("-" + name)
            else:
                parts.append(f"{c}*{name}")
        s = "+".join(parts).replace("+-", "-")
        return s or "0"


_TERM = re.compile(r"^(-?\d+\*)?[A-Za-z_][\w.:]*(\*[A-Za-z_][\w.:]*)*$")


def parse_dim(text: str) -> DimLike:
    """Read a dim_param back: plain names and the products/sums this module writes; else one opaque name."""
    s = text.replace(" ", "")
    if not s:
        return Sym.named(text)
    pieces = re.split(r"(?<=.)(?=[+-])", s)
    total: DimLike = 0
    for p in pieces:
        sign = -1 if p.startswith("-") else 1
        body = p.lstrip("+-")
        if body.isdigit():
            total = total + sign * int(body)
            continue
        if not _TERM.match(body):
            return Sym.named(text)
        factors = body.split("*")
        coef = sign
        names = []
        for f in factors:
            if f.isdigit():
                coef *= int(f)
            else:
                names.append(f)
        total = total + Sym({tuple(sorted(names)): coef})
    return Sym.make(total) if isinstance(total, Sym) else total


def dim_to_proto(d: DimLike | None) -> int | str | None:
    """How a dim is stored in a Shape: int, dim_param string, or None."""
    if d is None or isinstance(d, int):
        return d
    return str(d)
