"""Triton's model configuration (config.pbtxt): a parser of the protobuf text format and the fields
that matter for serving ONNX models, plus the configuration inferred from a model when there is none.

The parser reads the text format generically (messages, scalars, lists, comments); :func:`parse_config`
then reads the ModelConfig fields onyx acts on and keeps the rest out of the way, so an existing Triton
repository of onnxruntime models serves unchanged. Errors name the file, line and column.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from onyx.serve import datatypes
from onyx.serve.errors import ConfigError

# ---------------------------------------------------------------------------------------------
# the text format


@dataclass
class Scalar:
    """One scalar token: kind is 'str', 'num' or 'ident' (enum names, true/false)."""

    kind: str
    value: Any
    line: int
    col: int


@dataclass
class Message:
    """A parsed message: its fields in order as (name, Scalar | Message, line, col)."""

    fields: list[tuple[str, Any, int, int]] = field(default_factory=list)
    line: int = 1
    col: int = 1

    def all(self, name: str) -> list[tuple[Any, int, int]]:
        return [(v, ln, c) for n, v, ln, c in self.fields if n == name]

    def names(self) -> list[str]:
        return [n for n, _, _, _ in self.fields]


_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?|inf(?:inity)?|nan)(?![\w.]))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}\[\]:,;<>])
    """,
    re.VERBOSE,
)

_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "?": "?",
}


class _Parser:
    def __init__(self, text: str, source: str):
        self.source = source
        self.toks: list[tuple[str, str, int, int]] = []
        line, line_start, pos = 1, 0, 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(f"unexpected character {text[pos]!r}", line, pos - line_start + 1)
            kind = m.lastgroup
            if kind != "ws":
                self.toks.append((kind, m.group(), line, pos - line_start + 1))
            nl = m.group().count("\n")
            if nl:
                line += nl
                line_start = m.start() + m.group().rindex("\n") + 1
            pos = m.end()
        self.i = 0
        self.end_pos = (line, pos - line_start + 1)

    def fail(self, msg: str, line: int, col: int):
        raise ConfigError(f"{self.source}:{line}:{col}: {msg}")

    def peek(self) -> tuple[str, str, int, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str) -> tuple[str, str, int, int]:
        t = self.peek()
        if t is None:
            self.fail(f"unexpected end of file, expected {what}", *self.end_pos)
        self.i += 1
        return t

    def expect(self, text: str) -> None:
        t = self.next(repr(text))
        if t[1] != text:
            self.fail(f"expected {text!r}, found {t[1]!r}", t[2], t[3])

    def message(self, close: str | None, line: int = 1, col: int = 1, depth: int = 0) -> Message:
        if depth > 64:
            self.fail("messages nested too deeply", line, col)
        msg = Message(line=line, col=col)
        while True:
            t = self.peek()
            if t is None:
                if close is not None:
                    self.fail(
                        f"unexpected end of file, expected {close!r} to close the message at line {line}",
                        *self.end_pos,
                    )
                return msg
            if close is not None and t[1] == close:
                self.i += 1
                return msg
            kind, name, ln, c = self.next("a field name")
            if kind != "ident":
                self.fail(f"expected a field name, found {name!r}", ln, c)
            colon = self.peek() is not None and self.peek()[1] == ":"
            if colon:
                self.i += 1
            t = self.peek()
            if t is None:
                self.fail(f"field {name!r} has no value", *self.end_pos)
            if t[1] in ("{", "<"):
                self.i += 1
                msg.fields.append(
                    (name, self.message("}" if t[1] == "{" else ">", t[2], t[3], depth + 1), ln, c)
                )
            elif t[1] == "[":
                self.i += 1
                for v in self.list_values(name, t, depth):
                    msg.fields.append((name, v, ln, c))
            elif colon:
                msg.fields.append((name, self.scalar(name), ln, c))
            else:
                self.fail(f"expected ':' or '{{' after field name {name!r}, found {t[1]!r}", t[2], t[3])
            t = self.peek()
            if t is not None and t[1] in (",", ";"):
                self.i += 1

    def list_values(self, name: str, open_tok, depth: int) -> list[Any]:
        values: list[Any] = []
        t = self.peek()
        if t is not None and t[1] == "]":
            self.i += 1
            return values
        while True:
            t = self.peek()
            if t is None:
                self.fail(
                    f"unexpected end of file in the list of {name!r} opened at line {open_tok[2]}",
                    *self.end_pos,
                )
            if t[1] in ("{", "<"):
                self.i += 1
                values.append(self.message("}" if t[1] == "{" else ">", t[2], t[3], depth + 1))
            else:
                values.append(self.scalar(name))
            t = self.next("',' or ']'")
            if t[1] == "]":
                return values
            if t[1] != ",":
                self.fail(f"expected ',' or ']' in the list of {name!r}, found {t[1]!r}", t[2], t[3])

    def scalar(self, name: str) -> Scalar:
        kind, text, ln, c = self.next(f"a value for {name!r}")
        if kind == "str":
            parts = [self.unquote(text, ln, c)]
            while self.peek() is not None and self.peek()[0] == "str":  # adjacent strings concatenate
                _, more, l2, c2 = self.next("a string")
                parts.append(self.unquote(more, l2, c2))
            return Scalar("str", "".join(parts), ln, c)
        if kind == "num":
            return Scalar("num", text, ln, c)
        if kind == "ident":
            return Scalar("ident", text, ln, c)
        self.fail(f"expected a value for {name!r}, found {text!r}", ln, c)

    def unquote(self, text: str, line: int, col: int) -> str:
        body = text[1:-1]
        if "\\" not in body:
            return body
        out, i = [], 0
        while i < len(body):
            ch = body[i]
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            esc = body[i + 1]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
            elif esc in "01234567":
                m = re.match(r"[0-7]{1,3}", body[i + 1 :])
                out.append(chr(int(m.group(), 8)))
                i += 1 + len(m.group())
            elif esc == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
                if m is None:
                    self.fail("\\x without hex digits in a string", line, col)
                out.append(chr(int(m.group(), 16)))
                i += 2 + len(m.group())
            else:
                self.fail(f"unknown escape \\{esc} in a string", line, col)
        return "".join(out)


def parse_text(text: str, source: str = "config.pbtxt") -> Message:
    """Parse protobuf text format into a generic :class:`Message`."""
    p = _Parser(text, source)
    return p.message(None)


# ---------------------------------------------------------------------------------------------
# ModelConfig: the fields onyx reads


@dataclass
class TensorConfig:
    """An input or output: dims exclude the batch dimension when max_batch_size > 0; -1 is dynamic."""

    name: str
    datatype: str  # protocol name: FP32, BYTES, ...
    dims: list[int]
    reshape: list[int] | None = None
    optional: bool = False


@dataclass
class DynamicBatching:
    preferred_batch_size: list[int] = field(default_factory=list)
    max_queue_delay_microseconds: int = 0
    preserve_ordering: bool = False


@dataclass
class VersionPolicy:
    """latest (num_versions), all, or specific (versions)."""

    kind: str = "latest"
    num_versions: int = 1
    versions: list[int] = field(default_factory=list)

    def select(self, available: list[int]) -> list[int]:
        available = sorted(available)
        if self.kind == "all":
            return available
        if self.kind == "specific":
            return [v for v in available if v in self.versions]
        return available[-self.num_versions :] if self.num_versions > 0 else []


@dataclass
class InstanceGroup:
    count: int = 1
    kind: str = "KIND_CPU"
    name: str = ""


@dataclass
class ModelConfig:
    name: str
    platform: str = "onnxruntime_onnx"
    backend: str = "onnxruntime"
    max_batch_size: int = 0
    inputs: list[TensorConfig] = field(default_factory=list)
    outputs: list[TensorConfig] = field(default_factory=list)
    dynamic_batching: DynamicBatching | None = None
    instance_group: list[InstanceGroup] = field(default_factory=list)
    version_policy: VersionPolicy = field(default_factory=VersionPolicy)
    parameters: dict[str, str] = field(default_factory=dict)
    default_model_filename: str = "model.onnx"
    ignored: list[str] = field(default_factory=list)  # fields read but not acted on (logged at load)

    @property
    def instance_count(self) -> int:
        return max(1, sum(g.count for g in self.instance_group)) if self.instance_group else 1

    def to_json(self) -> dict[str, Any]:
        """The configuration as Triton's GET /v2/models/{m}/config returns it (JSON of ModelConfig)."""

        def tensor(t: TensorConfig) -> dict[str, Any]:
            d: dict[str, Any] = {"name": t.name, "data_type": datatypes.to_config(t.datatype), "dims": t.dims}
            if t.reshape is not None:
                d["reshape"] = {"shape": t.reshape}
            if t.optional:
                d["optional"] = True
            return d

        vp: dict[str, Any]
        if self.version_policy.kind == "all":
            vp = {"all": {}}
        elif self.version_policy.kind == "specific":
            vp = {"specific": {"versions": self.version_policy.versions}}
        else:
            vp = {"latest": {"num_versions": self.version_policy.num_versions}}
        out: dict[str, Any] = {
            "name": self.name,
            "platform": self.platform,
            "backend": self.backend,
            "version_policy": vp,
            "max_batch_size": self.max_batch_size,
            "input": [tensor(t) for t in self.inputs],
            "output": [tensor(t) for t in self.outputs],
            "instance_group": [
                {"name": g.name or f"{self.name}_{i}", "kind": g.kind, "count": g.count}
                for i, g in enumerate(self.instance_group or [InstanceGroup()])
            ],
            "default_model_filename": self.default_model_filename,
            "parameters": {k: {"string_value": v} for k, v in self.parameters.items()},
        }
        if self.dynamic_batching is not None:
            out["dynamic_batching"] = dataclasses.asdict(self.dynamic_batching)
        return out


_KNOWN = {
    "name",
    "platform",
    "backend",
    "max_batch_size",
    "input",
    "output",
    "dynamic_batching",
    "instance_group",
    "version_policy",
    "parameters",
    "default_model_filename",
}
_ONNX_PLATFORMS = {"onnxruntime_onnx", "onnx", ""}
_ONNX_BACKENDS = {"onnxruntime", "onnx", "onyx", ""}


class _Reader:
    """Typed access to a parsed message, with errors that point into the file."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, msg: str, line: int, col: int):
        raise ConfigError(f"{self.source}:{line}:{col}: {msg}")

    def one(self, m: Message, name: str) -> tuple[Any, int, int] | None:
        found = m.all(name)
        if len(found) > 1:
            self.fail(f"field {name!r} is given {len(found)} times", found[1][1], found[1][2])
        return found[0] if found else None

    def string(self, m: Message, name: str, default: str = "") -> str:
        f = self.one(m, name)
        if f is None:
            return default
        v, ln, c = f
        if not isinstance(v, Scalar) or v.kind != "str":
            self.fail(f"{name!r} must be a quoted string", ln, c)
        return v.value

    def integer(self, v: Any, name: str, ln: int, c: int) -> int:
        if not isinstance(v, Scalar) or v.kind != "num":
            self.fail(f"{name!r} must be an integer", ln, c)
        try:
            return int(v.value, 0)
        except ValueError:
            self.fail(f"{name!r} must be an integer, got {v.value}", v.line, v.col)

    def int_field(self, m: Message, name: str, default: int = 0) -> int:
        f = self.one(m, name)
        return default if f is None else self.integer(f[0], name, f[1], f[2])

    def ints(self, m: Message, name: str) -> list[int]:
        return [self.integer(v, name, ln, c) for v, ln, c in m.all(name)]

    def boolean(self, m: Message, name: str, default: bool = False) -> bool:
        f = self.one(m, name)
        if f is None:
            return default
        v, ln, c = f
        if isinstance(v, Scalar) and v.kind in ("ident", "num") and v.value in ("true", "True", "1", "t"):
            return True
        if isinstance(v, Scalar) and v.kind in ("ident", "num") and v.value in ("false", "False", "0", "f"):
            return False
        self.fail(f"{name!r} must be true or false", ln, c)

    def enum(self, m: Message, name: str, default: str) -> tuple[str, int, int]:
        f = self.one(m, name)
        if f is None:
            return default, m.line, m.col
        v, ln, c = f
        if not isinstance(v, Scalar) or v.kind != "ident":
            self.fail(f"{name!r} must be an enum name such as {default}", ln, c)
        return v.value, ln, c

    def message(self, v: Any, name: str, ln: int, c: int) -> Message:
        if not isinstance(v, Message):
            self.fail(f"{name!r} must be a message {{ ... }}", ln, c)
        return v


def parse_config(text: str, source: str = "config.pbtxt", default_name: str = "") -> ModelConfig:
    """Read a config.pbtxt's text into a :class:`ModelConfig` (the fields onyx acts on)."""
    root = parse_text(text, source)
    r = _Reader(source)
    cfg = ModelConfig(name=r.string(root, "name", default_name))
    cfg.platform = r.string(root, "platform", "")
    cfg.backend = r.string(root, "backend", "")
    if cfg.platform not in _ONNX_PLATFORMS or cfg.backend not in _ONNX_BACKENDS:
        f = r.one(root, "platform") or r.one(root, "backend")
        r.fail(
            f"onyx serves ONNX models: platform {cfg.platform!r} / backend {cfg.backend!r} is not "
            "onnxruntime_onnx / onnxruntime",
            f[1],
            f[2],
        )
    cfg.platform = "onnxruntime_onnx"
    cfg.backend = "onnxruntime"
    cfg.max_batch_size = r.int_field(root, "max_batch_size", 0)
    if cfg.max_batch_size < 0:
        f = r.one(root, "max_batch_size")
        r.fail("max_batch_size must be >= 0", f[1], f[2])
    cfg.inputs = [_tensor(r, r.message(v, "input", ln, c)) for v, ln, c in root.all("input")]
    cfg.outputs = [_tensor(r, r.message(v, "output", ln, c)) for v, ln, c in root.all("output")]
    for kind, tensors in (("input", cfg.inputs), ("output", cfg.outputs)):
        seen: set[str] = set()
        for t in tensors:
            if t.name in seen:
                r.fail(f"{kind} {t.name!r} is declared twice", root.line, root.col)
            seen.add(t.name)
    f = r.one(root, "dynamic_batching")
    if f is not None:
        m = r.message(*f[:1], "dynamic_batching", f[1], f[2])
        cfg.dynamic_batching = DynamicBatching(
            preferred_batch_size=r.ints(m, "preferred_batch_size"),
            max_queue_delay_microseconds=r.int_field(m, "max_queue_delay_microseconds", 0),
            preserve_ordering=r.boolean(m, "preserve_ordering", False),
        )
        if cfg.max_batch_size == 0:
            r.fail("dynamic_batching needs max_batch_size > 0", f[1], f[2])
        for p in cfg.dynamic_batching.preferred_batch_size:
            if not 0 < p <= cfg.max_batch_size:
                r.fail(
                    f"preferred_batch_size {p} is not within 1..max_batch_size ({cfg.max_batch_size})",
                    f[1],
                    f[2],
                )
    for v, ln, c in root.all("instance_group"):
        m = r.message(v, "instance_group", ln, c)
        kind, kl, kc = r.enum(m, "kind", "KIND_AUTO")
        if kind not in ("KIND_AUTO", "KIND_CPU", "KIND_GPU", "KIND_MODEL"):
            r.fail(f"unknown instance_group kind {kind}", kl, kc)
        count = r.int_field(m, "count", 1)
        if count < 0:
            r.fail("instance_group count must be >= 0", ln, c)
        cfg.instance_group.append(InstanceGroup(count=count, kind=kind, name=r.string(m, "name", "")))
    f = r.one(root, "version_policy")
    if f is not None:
        cfg.version_policy = _version_policy(r, r.message(f[0], "version_policy", f[1], f[2]), f[1], f[2])
    for v, ln, c in root.all("parameters"):
        m = r.message(v, "parameters", ln, c)
        key = r.string(m, "key")
        val = r.one(m, "value")
        if not key or val is None:
            r.fail('parameters entries need key: "..." and value: { string_value: "..." }', ln, c)
        cfg.parameters[key] = r.string(r.message(val[0], "value", val[1], val[2]), "string_value")
    cfg.default_model_filename = r.string(root, "default_model_filename", "model.onnx") or "model.onnx"
    cfg.ignored = sorted(set(root.names()) - _KNOWN)
    return cfg


def _tensor(r: _Reader, m: Message) -> TensorConfig:
    name = r.string(m, "name")
    if not name:
        r.fail("an input or output needs a name", m.line, m.col)
    dt, ln, c = r.enum(m, "data_type", "TYPE_INVALID")
    try:
        datatype = datatypes.from_config(dt)
    except Exception as e:
        r.fail(str(e), ln, c)
    dims = r.ints(m, "dims")
    if any(d < -1 for d in dims):
        r.fail(f"dims of {name!r} must be -1 (dynamic) or >= 0, got {dims}", m.line, m.col)
    reshape = None
    f = r.one(m, "reshape")
    if f is not None:
        reshape = r.ints(r.message(f[0], "reshape", f[1], f[2]), "shape")
    return TensorConfig(name, datatype, dims, reshape, r.boolean(m, "optional", False))


def _version_policy(r: _Reader, m: Message, ln: int, c: int) -> VersionPolicy:
    kinds = [n for n in m.names() if n in ("latest", "all", "specific")]
    if len(kinds) != 1:
        r.fail(
            "version_policy needs exactly one of latest { num_versions: N }, all { }, "
            "specific { versions: [...] }",
            ln,
            c,
        )
    kind = kinds[0]
    f = r.one(m, kind)
    sub = r.message(f[0], kind, f[1], f[2])
    if kind == "latest":
        n = r.int_field(sub, "num_versions", 1)
        if n < 1:
            r.fail("latest num_versions must be >= 1", f[1], f[2])
        return VersionPolicy("latest", num_versions=n)
    if kind == "specific":
        versions = r.ints(sub, "versions")
        if not versions:
            r.fail("specific needs versions: [ ... ]", f[1], f[2])
        return VersionPolicy("specific", versions=versions)
    return VersionPolicy("all")


# ---------------------------------------------------------------------------------------------
# a configuration from the model itself (Triton's auto-complete for onnxruntime models)


def infer_config(
    name: str,
    inputs: list[tuple[str, str | None, list]],
    outputs: list[tuple[str, str | None, list]],
    default_max_batch_size: int,
) -> ModelConfig:
    """A config for a model without config.pbtxt: tensors from the model's (name, datatype, shape) lists.

    As Triton's onnxruntime backend does, a model whose every input and output has a dynamic first
    dimension is taken to batch along it: max_batch_size = ``default_max_batch_size`` and dynamic
    batching on (no queue delay). Otherwise max_batch_size is 0 and shapes are served as they are."""
    everything = inputs + outputs
    batching = (
        default_max_batch_size > 0
        and bool(everything)
        and all(shape and not isinstance(shape[0], int) for _, _, shape in everything)
    )

    def tensor(n: str, dt: str | None, shape: list) -> TensorConfig:
        dims = [d if isinstance(d, int) and d >= 0 else -1 for d in shape]
        return TensorConfig(n, dt or "BYTES", dims[1:] if batching else dims)

    cfg = ModelConfig(
        name=name,
        max_batch_size=default_max_batch_size if batching else 0,
        inputs=[tensor(*t) for t in inputs],
        outputs=[tensor(*t) for t in outputs],
    )
    if batching:
        cfg.dynamic_batching = DynamicBatching()
    return cfg
