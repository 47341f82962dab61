"""A Triton-style model repository: ``REPO/<model>/config.pbtxt`` (optional) and
``REPO/<model>/<version>/model.onnx``; the version policy picks which versions are served.

Loading, unloading and polling swap whole version sets under a lock; requests already running keep the
objects they hold, and an unloaded version finishes its queued requests before its workers stop.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field

from onyx.errors import OnyxError
from onyx.serve.config_pbtxt import ModelConfig, parse_config
from onyx.serve.errors import BadRequest, ConfigError, NotFound
from onyx.serve.metrics import Metrics
from onyx.serve.model import ServedModel

log = logging.getLogger("onyx.serve")

READY, UNAVAILABLE, UNLOADING = "READY", "UNAVAILABLE", "UNLOADING"


@dataclass
class ModelEntry:
    """A model of the repository: its served versions, or why it is not served."""

    name: str
    versions: dict[int, ServedModel] = field(default_factory=dict)
    state: str = UNAVAILABLE
    reason: str = ""
    fingerprint: tuple = ()


class Repository:
    """The models of one repository folder, loaded per their config's version policy."""

    def __init__(
        self,
        path: str,
        metrics: Metrics | None = None,
        threads: int = 0,
        default_max_batch_size: int = 4,
    ):
        if not os.path.isdir(path):
            raise NotFound(f"model repository {path!r} is not a folder")
        self.path = os.path.abspath(path)
        self.metrics = metrics or Metrics()
        self.threads = threads
        self.default_max_batch_size = default_max_batch_size
        self._models: dict[str, ModelEntry] = {}
        self._lock = threading.RLock()  # guards _models; held while loading so loads do not interleave

    # -- discovery ---------------------------------------------------------------------------------
    def model_names(self) -> list[str]:
        """Folders of the repository that look like models (hidden folders skipped)."""
        try:
            names = sorted(os.listdir(self.path))
        except OSError:
            return []
        return [n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(self.path, n))]

    def _read_config(self, name: str) -> ModelConfig | None:
        cfg_path = os.path.join(self.path, name, "config.pbtxt")
        if not os.path.isfile(cfg_path):
            return None
        with open(cfg_path, encoding="utf-8") as f:
            cfg = parse_config(f.read(), source=cfg_path, default_name=name)
        if cfg.name != name:
            raise ConfigError(f"{cfg_path}: name {cfg.name!r} does not match the model folder {name!r}")
        if cfg.ignored:
            log.info("model %s: config fields not acted on by onyx: %s", name, ", ".join(cfg.ignored))
        return cfg

    def _available(self, name: str, filename: str) -> dict[int, str]:
        """Version number -> model file, for version folders that hold the model file."""
        base = os.path.join(self.path, name)
        found = {}
        for entry in os.listdir(base):
            if entry.isdigit() and os.path.isfile(os.path.join(base, entry, filename)):
                found[int(entry)] = os.path.join(base, entry, filename)
        return found

    def _fingerprint(self, name: str) -> tuple:
        """What polling compares: the config's and each version file's modification time and size."""
        base = os.path.join(self.path, name)
        items = []
        for root, _dirs, files in os.walk(base):
            for f in files:
                p = os.path.join(root, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                items.append((os.path.relpath(p, base), st.st_mtime_ns, st.st_size))
        return tuple(sorted(items))

    # -- load / unload -----------------------------------------------------------------------------
    def load_all(self) -> None:
        for name in self.model_names():
            self.load(name, raise_errors=False)

    def load(self, name: str, raise_errors: bool = True) -> ModelEntry:
        """Load (or reload) a model from its folder; on failure the model is UNAVAILABLE with the reason."""
        if not name or "/" in name or "\\" in name or name.startswith(".") or name in ("..",):
            raise BadRequest(f"invalid model name {name!r}")
        with self._lock:
            if not os.path.isdir(os.path.join(self.path, name)):
                raise NotFound(f"model {name!r} is not in the repository {self.path}")
            old = self._models.get(name)
            fingerprint = self._fingerprint(name)
            entry = ModelEntry(name, fingerprint=fingerprint)
            loaded: dict[int, ServedModel] = {}
            try:
                config = self._read_config(name)
                filename = config.default_model_filename if config else "model.onnx"
                available = self._available(name, filename)
                policy = config.version_policy if config else None
                chosen = policy.select(list(available)) if policy else sorted(available)[-1:]
                if not chosen:
                    raise NotFound(
                        f"model {name!r}: no version folder holds {filename} "
                        f"(versions found: {sorted(available)})"
                    )
                for v in chosen:
                    keep = old.versions.get(v) if old is not None else None
                    if keep is not None and _files_of(old.fingerprint, v) == _files_of(fingerprint, v):
                        loaded[v] = keep  # unchanged: keep serving the same sessions
                        continue
                    loaded[v] = ServedModel(
                        name, v, available[v], config, self.metrics, self.threads, self.default_max_batch_size
                    )
            except (OnyxError, OSError) as e:
                for v, m in loaded.items():
                    if old is None or old.versions.get(v) is not m:
                        m.close()
                entry.state, entry.reason = UNAVAILABLE, f"{type(e).__name__}: {e}"
                log.error("model %s failed to load: %s", name, entry.reason)
                if old is not None and old.state == READY and not raise_errors:
                    return old  # polling keeps a working model rather than replacing it with a broken one
                self._models[name] = entry
                if old is not None:
                    self._retire(old, keep=set())
                if raise_errors:
                    raise
                return entry
            entry.versions, entry.state = loaded, READY
            self._models[name] = entry
            if old is not None:
                self._retire(old, keep={id(m) for m in loaded.values()})
            log.info("model %s: versions %s ready", name, sorted(loaded))
            return entry

    def unload(self, name: str) -> None:
        with self._lock:
            entry = self._models.get(name)
            if entry is None or entry.state != READY:
                raise NotFound(f"model {name!r} is not loaded")
            self._models[name] = ModelEntry(name, state=UNAVAILABLE, reason="unloaded")
        self._retire(entry, keep=set())
        log.info("model %s unloaded", name)

    def _retire(self, entry: ModelEntry, keep: set[int]) -> None:
        for m in entry.versions.values():
            if id(m) not in keep:
                m.close()

    def hurry(self) -> None:
        """Every scheduler dispatches its queue at once (shutdown: no more requests will come)."""
        with self._lock:
            served = [m for e in self._models.values() for m in e.versions.values()]
        for m in served:
            m.scheduler.hurry()

    def close(self) -> None:
        with self._lock:
            entries, self._models = list(self._models.values()), {}
        for e in entries:
            self._retire(e, keep=set())

    def poll(self) -> None:
        """Pick up new, changed and removed models and versions (the --poll loop calls this)."""
        names = set(self.model_names())
        with self._lock:
            known = dict(self._models)
        for name in sorted(names):
            entry = known.get(name)
            if entry is not None and entry.reason == "unloaded":
                continue  # explicitly unloaded: stays so until loaded again
            if entry is None or entry.fingerprint != self._fingerprint(name):
                self.load(name, raise_errors=False)
        for name in set(known) - names:
            with self._lock:
                entry = self._models.pop(name, None)
            if entry is not None:
                self._retire(entry, keep=set())
                log.info("model %s removed from the repository: unloaded", name)

    # -- lookup ------------------------------------------------------------------------------------
    def get(self, name: str, version: str | int | None = None) -> ServedModel:
        """The served version (the highest when ``version`` is None or empty); NotFound otherwise."""
        entry = self._models.get(name)
        if entry is None or entry.state != READY:
            why = f" ({entry.reason})" if entry is not None and entry.reason else ""
            raise NotFound(
                f"unknown model {name!r}{why}" if entry is None else f"model {name!r} is not ready{why}"
            )
        if version is None or version == "":
            return entry.versions[max(entry.versions)]
        try:
            v = int(version)
        except (TypeError, ValueError):
            raise NotFound(f"model {name!r} has no version {version!r}") from None
        m = entry.versions.get(v)
        if m is None:
            raise NotFound(f"model {name!r} has no version {v} loaded; loaded: {sorted(entry.versions)}")
        return m

    def versions(self, name: str) -> list[int]:
        entry = self._models.get(name)
        return sorted(entry.versions) if entry is not None else []

    def ready(self) -> bool:
        """Every model of the repository that was asked to load is READY (Triton's strict readiness)."""
        with self._lock:
            return all(e.state == READY or e.reason == "unloaded" for e in self._models.values())

    def index(self, ready_only: bool = False) -> list[dict[str, str]]:
        """POST /v2/repository/index: one entry per served version, one per model not served."""
        with self._lock:
            entries = dict(self._models)
        out = []
        for name in sorted(set(self.model_names()) | set(entries)):
            e = entries.get(name)
            if e is not None and e.state == READY:
                out.extend({"name": name, "version": str(v), "state": READY} for v in sorted(e.versions))
            elif not ready_only:
                item = {"name": name, "state": e.state if e is not None else UNAVAILABLE}
                item["reason"] = e.reason if e is not None else "not loaded"
                out.append(item)
        return out


def _files_of(fingerprint: tuple, version: int) -> tuple:
    """The part of a model's fingerprint that one version depends on: its folder and the config."""
    prefix = f"{version}{os.sep}"
    return tuple(item for item in fingerprint if item[0] == "config.pbtxt" or item[0].startswith(prefix))
