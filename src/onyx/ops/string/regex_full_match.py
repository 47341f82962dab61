"""RegexFullMatch: whether each string matches a regular expression in full.

The spec prescribes RE2 syntax; onyx runs Python's ``re`` (``fullmatch``) on a translation of the
pattern. The translation makes RE2 constructs Python spells differently behave as in RE2:

* ``\\d \\w \\s \\b`` (and their negations) are ASCII-only, as in RE2 (Python's are Unicode-aware);
  ``\\s`` is ``[\\t\\n\\f\\r ]`` (no ``\\v``), as in RE2.
* POSIX classes inside brackets: ``[[:alpha:]]``, ``[[:^digit:]]`` ... (ASCII, as in RE2).
* ``\\z`` (end of text), ``\\Q...\\E`` (literal text), ``\\x{10FFFF}`` (hex code point), ``(?<name>re)``
  (named group) and ``$`` meaning end of text unless the ``m`` flag is set (Python's ``$`` also matches
  before a final newline).
* Flag groups such as ``(?i)`` in the middle of a pattern (Python accepts them only at the start):
  they become scoped groups ``(?i:...)`` running to the end of the enclosing group or alternative.

Remaining differences: Unicode classes ``\\pN``/``\\p{Greek}`` and ``\\C`` are refused (NotImplemented);
RE2's ``(?U)`` (ungreedy) flag is not available; Python accepts backreferences, lookahead and
lookbehind, which RE2 rejects, so some patterns that are invalid RE2 still run here.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.registry import op, shape_rule
from onyx.ops.string._common import as_strings

_MAX = 0x10FFFF

_POSIX = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_PERL = {"d": _POSIX["digit"], "w": _POSIX["word"], "s": [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)]}
_WORD = "[0-9A-Za-z_]"


def _complement(ranges):
    out, lo = [], 0
    for a, b in sorted(ranges):
        if a > lo:
            out.append((lo, a - 1))
        lo = max(lo, b + 1)
    if lo <= _MAX:
        out.append((lo, _MAX))
    return out


def _ranges(ranges) -> str:
    """Class items (without brackets) for a list of code-point ranges."""

    def ch(c):
        return f"\\U{c:08x}"

    return "".join(ch(a) if a == b else f"{ch(a)}-{ch(b)}" for a, b in ranges)


def _translate(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    in_class = False
    class_start = False
    multiline = False
    depth = 0
    pending: list[tuple[int, str]] = []  # scoped flag groups still open: (group depth, flags)
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            e = p[i + 1]
            if e == "Q":
                j = p.find("\\E", i + 2)
                lit = p[i + 2 : j if j >= 0 else n]
                out.append("".join(f"\\U{ord(ch):08x}" for ch in lit) if in_class else re.escape(lit))
                i = j + 2 if j >= 0 else n
                class_start = False
                continue
            if e in "pPC":
                raise OnyxNotImplemented(
                    f"RegexFullMatch: RE2 escape \\{e} (Unicode classes / bytes) is not supported by onyx's "
                    f"Python-based matcher, in pattern {p!r}"
                )
            if e == "x" and i + 2 < n and p[i + 2] == "{":
                j = p.find("}", i + 3)
                if j < 0:
                    raise InvalidArgument(f"RegexFullMatch: unterminated \\x{{...}} in pattern {p!r}")
                try:
                    code = int(p[i + 3 : j], 16)
                except ValueError:
                    raise InvalidArgument(f"RegexFullMatch: bad \\x{{...}} escape in pattern {p!r}") from None
                out.append(f"\\U{code:08x}")
                i = j + 1
                class_start = False
                continue
            if e == "z" and not in_class:
                out.append("\\Z")
            elif e in "dws":
                out.append(_ranges(_PERL[e]) if in_class else f"[{_ranges(_PERL[e])}]")
            elif e in "DWS":
                comp = _complement(_PERL[e.lower()])
                out.append(_ranges(comp) if in_class else f"[{_ranges(comp)}]")
            elif e == "b" and not in_class:
                out.append(f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))")
            elif e == "B" and not in_class:
                out.append(f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))")
            else:
                out.append(p[i : i + 2])
            i += 2
            class_start = False
            continue
        if in_class:
            if c == "[" and p.startswith("[:", i):
                j = p.find(":]", i + 2)
                name = p[i + 2 : j] if j >= 0 else ""
                neg = name.startswith("^")
                key = name[1:] if neg else name
                if j >= 0 and key in _POSIX:
                    ranges = _complement(_POSIX[key]) if neg else _POSIX[key]
                    out.append(_ranges(ranges))
                    i = j + 2
                    class_start = False
                    continue
                out.append("\\[")
            elif c == "]" and not class_start:
                in_class = False
                out.append(c)
            elif c == "[":
                out.append("\\[")
            else:
                out.append(c)
            class_start = False
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and p[i] == "^":
                out.append("^")
                i += 1
            class_start = True
            continue
        if c == "(":
            if p.startswith("(?", i):
                m = re.match(r"\(\?<([A-Za-z_]\w*)>", p[i:])
                if m:
                    out.append(f"(?P<{m.group(1)}>")
                    depth += 1
                    i += m.end()
                    continue
                m = re.match(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)\)", p[i:])
                if m:
                    # RE2 flags last to the end of the enclosing group; Python wants them at the start
                    # of the pattern or scoped: open a scoped group, closed with the enclosing group.
                    flags = m.group(1)
                    multiline |= "m" in flags.split("-")[0]
                    out.append(f"(?{flags}:")
                    pending.append((depth, flags))
                    i += m.end()
                    continue
                m = re.match(r"\(\?([a-zA-Z]*)(?:-[a-zA-Z]*)?:", p[i:])
                multiline |= bool(m and "m" in m.group(1))
            depth += 1
            out.append(c)
            i += 1
            continue
        if c == ")" or c == "|":
            here = [fl for d, fl in pending if d == depth]
            out.append(")" * len(here))
            if c == ")":
                pending = [(d, fl) for d, fl in pending if d != depth]
                depth -= 1
                out.append(c)
            else:
                out.append(c)
                out.extend(f"(?{fl}:" for fl in here)
            i += 1
            continue
        if c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    out.append(")" * len(pending))
    return "".join(out)


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern:
    try:
        return re.compile(_translate(pattern))
    except re.error as e:
        raise InvalidArgument(f"RegexFullMatch: invalid pattern {pattern!r}: {e}") from None


@op("RegexFullMatch", since=20)
def regex_full_match(X, *, pattern=None):
    if pattern is None:
        raise InvalidArgument("RegexFullMatch: the pattern attribute is required")
    x = as_strings(X, "RegexFullMatch")
    match = _compile(pattern).fullmatch
    flat = x.reshape(-1).tolist()
    return np.fromiter((match(s) is not None for s in flat), dtype=np.bool_, count=len(flat)).reshape(x.shape)


@shape_rule("RegexFullMatch")
def _regex_full_match_shape(ctx) -> None:
    """bool, X's shape."""
    ctx.set_output(0, 9, ctx.input_shape(0))
