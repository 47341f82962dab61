"""com.microsoft Tokenizer: split strings into tokens (skl2onnx's CountVectorizer/TfidfVectorizer).

Follows onnxruntime's CPU kernel: either a token expression (``tokenexp``, every match is a token) or
a list of separator expressions (applied one after the other, the text between matches are the
tokens); ``tokenexp="."`` or ``separators=[""]`` mean one token per character. Tokens shorter than
``mincharnum`` characters are dropped, every row is padded with ``pad_value`` to the longest, and
``mark`` frames each row with the start-of-text (0x02) and end-of-text (0x03) characters. Output
shape: the input's ([C] or [N, C]) plus the token axis (0 when no row has a token).

Expressions are RE2 ones in onnxruntime; we run them with Python's ``re`` in ASCII mode (RE2's
``\\w``, ``\\d``, ``\\b`` are ASCII). RE2 is asked for the leftmost-longest match, Python gives the
leftmost-first one: the two agree on the patterns exporters write (``[a-zA-Z0-9_]+``, ``\\b\\w\\w+\\b``,
plain separators) and may differ on alternations whose first branch is a prefix of a later one.
"""

from __future__ import annotations

import re

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.string._common import as_strings

START_TEXT = "\x02"
END_TEXT = "\x03"
STRING = 8


def _compile(expr: str, what: str) -> re.Pattern:
    try:
        return re.compile(expr, re.ASCII)
    except re.error as e:
        raise InvalidArgument(f"Tokenizer: can not digest {what} {expr!r}: {e}") from None


def _may_prefer_shorter(expr: str) -> bool:
    """Whether leftmost-first matching of ``expr`` can stop short of the longest match."""
    return "|" in expr or re.search(r"[*+?}]\?", expr) is not None


def _longest_end(regex: re.Pattern, s: str, start: int, stop: int) -> int:
    """The end of the longest match of ``regex`` starting at ``start`` (at least ``stop``)."""
    for end in range(len(s), stop, -1):
        if regex.fullmatch(s, start, end) is not None:
            return end
    return stop


def _search(regex: re.Pattern, s: str, pos: int, longest: bool) -> tuple[int, int] | None:
    m = regex.search(s, pos)
    if m is None:
        return None
    start, stop = m.span()
    return (start, _longest_end(regex, s, start, stop)) if longest else (start, stop)


def _by_expression(s: str, regex: re.Pattern, mincharnum: int, longest: bool) -> list[str]:
    """Every match of ``regex`` at least ``mincharnum`` long; a shorter one moves the search on by one
    character (so that a longer match starting inside it is still found)."""
    out = []
    pos, end = 0, len(s)
    while pos <= end:
        m = _search(regex, s, pos, longest)
        if m is None:
            break
        start, stop = m
        if stop - start >= mincharnum:
            out.append(s[start:stop])
            pos = stop
        else:
            pos = start + 1
    return out


def _split(text: str, sep: re.Pattern, mincharnum: int, longest: bool) -> list[str]:
    """The pieces of ``text`` between matches of ``sep`` at least ``mincharnum`` long. An empty match
    also swallows the character it stands before, as onnxruntime's loop does."""
    out = []
    pos, end = 0, len(text)
    while True:
        m = _search(sep, text, pos, longest) if pos <= end else None
        if m is None:
            if end - pos >= mincharnum:
                out.append(text[pos:])
            return out
        start, stop = m
        if start - pos >= mincharnum:
            out.append(text[pos:start])
        pos = stop if stop > start else start + 1


def _by_separators(s: str, seps: list[tuple[re.Pattern, bool]], mincharnum: int) -> list[str]:
    row = [s]
    for sep, longest in seps:
        row = [piece for text in row for piece in _split(text, sep, mincharnum, longest)]
    return row


def _prepare(mark, pad_value, mincharnum, separators, tokenexp):
    if mincharnum <= 0:
        raise InvalidArgument(f"Tokenizer: attribute mincharnum must be positive, got {mincharnum}")
    if separators is not None:
        separators = [s.decode() if isinstance(s, bytes) else s for s in separators]
        if not separators:
            raise InvalidArgument("Tokenizer: separators must not be empty")
        chars = separators == [""]
    elif tokenexp is not None:
        if isinstance(tokenexp, bytes):
            tokenexp = tokenexp.decode()
        if not tokenexp:
            raise InvalidArgument("Tokenizer: expecting a non-empty tokenexp")
        chars = tokenexp == "."
    else:
        raise InvalidArgument("Tokenizer: either one of the separators or tokenexp attributes is required")
    if chars and mincharnum >= 2:
        raise InvalidArgument("Tokenizer: mincharnum is too big for char level tokenization")
    if chars:
        return list
    if separators is not None:
        seps = [(_compile(s, "separator"), _may_prefer_shorter(s)) for s in separators]
        return lambda s: _by_separators(s, seps, mincharnum)
    regex = _compile(tokenexp, "tokenexp")
    longest = _may_prefer_shorter(tokenexp)
    return lambda s: _by_expression(s, regex, mincharnum, longest)


def _tokenize(X, split, mark: bool, pad_value: str) -> np.ndarray:
    x = as_strings(X, "Tokenizer")
    if x.ndim not in (1, 2):
        raise InvalidArgument(f"Tokenizer: input dimensions are either [C] or [N][C], got shape {x.shape}")
    if x.size == 0:  # onnxruntime: [0] for [0], [N, 0] for [N, 0]
        return np.empty(x.shape[:1] + (0,) if x.ndim == 2 else (0,), dtype=object)
    rows = []
    for s in x.reshape(-1).tolist():
        if isinstance(s, bytes):
            try:
                s = s.decode()
            except UnicodeDecodeError:
                raise InvalidArgument(f"Tokenizer: input string contains invalid utf8 chars: {s!r}") from None
        elif not isinstance(s, str):
            raise InvalidArgument(f"Tokenizer: expected strings, got {type(s).__name__}")
        rows.append(split(s))
    longest = max((len(r) for r in rows), default=0)
    if longest == 0:
        return np.empty(x.shape + (0,), dtype=object)
    width = longest + 2 * bool(mark)
    out = np.empty((len(rows), width), dtype=object)
    out[...] = pad_value
    for i, r in enumerate(rows):
        if mark:
            out[i, 0] = START_TEXT
            out[i, 1 : 1 + len(r)] = r
            out[i, 1 + len(r)] = END_TEXT
        else:
            out[i, : len(r)] = r
    return out.reshape(x.shape + (width,))


def _prepare_kernel(*, mark, pad_value, mincharnum, separators=None, tokenexp=None):
    split = _prepare(mark, pad_value, mincharnum, separators, tokenexp)
    pad = pad_value.decode() if isinstance(pad_value, bytes) else pad_value
    return lambda X: _tokenize(X, split, bool(mark), pad)


@op("Tokenizer", domain="com.microsoft", since=1, prepare=_prepare_kernel)
def tokenizer(X, *, mark, pad_value, mincharnum, separators=None, tokenexp=None):  # noqa: N803
    return _prepare_kernel(
        mark=mark, pad_value=pad_value, mincharnum=mincharnum, separators=separators, tokenexp=tokenexp
    )(X)


@shape_rule("Tokenizer", domain="com.microsoft")
def _shape(ctx) -> None:
    x = ctx.input_shape(0)
    if x is not None and len(x) not in (1, 2):
        ctx.fail(f"input dimensions are either [C] or [N][C], got {x}")
    ctx.set_output(0, STRING, None if x is None else list(x) + [ctx.new_dim()])
