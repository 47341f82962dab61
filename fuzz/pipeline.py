"""One fuzz input through the whole pipeline: bytes -> load -> check -> infer_shapes -> optimize ->
InferenceSession -> run on a feed that matches the model's inputs.

onyx's own errors (``OnyxError``) are the expected way to refuse an input; anything else escaping
``exercise`` is a finding. Feeds are kept small (symbolic dims 2, at most ``MAX_FEED_ELEMENTS``
elements an input) so that what the model does with them, not the feed, decides the cost.
"""

from __future__ import annotations

import math

import numpy as np

MAX_FEED_ELEMENTS = 1 << 16
SYMBOLIC_DIM = 2
#: each session's bound on one tensor (session.max_tensor_bytes): well under libFuzzer's -rss_limit_mb,
#: so a memory bomb meets onyx's own refusal (the thing under test) before the fuzzer's limit
MAX_TENSOR_BYTES = 256 << 20
#: each run's deadline (the run config entry run.timeout_ms, runtime/cancellation.py): a model that is
#: merely slow (a Loop of 2**62 trips) stops with onyx's Terminated; what still hangs past libFuzzer's
#: -timeout is a node that never reaches a stop check, a finding
RUN_TIMEOUT_MS = 5000
#: the largest single array any stage may ask for outside a session's run (load, check, inference,
#: optimization, session creation): a larger request is refused at once and, even if the stage swallows
#: the MemoryError, reported as a finding (a size read from the model reached an allocation unbounded)
WATCH_BYTES = 512 << 20


class UnboundedAllocation(Exception):
    """A finding: a stage outside the run asked numpy for more than ``WATCH_BYTES`` in one array."""


_watch: list = []


def _watch_arena():
    """The numpy allocator that watches every stage (a no-op without the compiled arena)."""
    if not _watch:
        from onyx.kernels.arena import Arena

        arena = Arena(0, name="fuzz_watch")
        arena.bound_requests(WATCH_BYTES)
        _watch.append(arena)
    return _watch[0]


def _numpy_of_ort_name() -> dict[str, np.dtype]:
    from onyx.ir.dtypes import DataType
    from onyx.ir.types import TensorType

    table = {}
    for dt in DataType:
        if dt is not DataType.UNDEFINED:
            table[TensorType(dt).ort_name()] = dt.numpy_dtype
    return table


_NUMPY_OF_ORT_NAME = _numpy_of_ort_name()


def _feed_for(arg, rng: np.random.Generator):
    """A value for one session input, or None when its type is not a plain tensor or is too big."""
    type_name = arg.type  # onnxruntime's spelling: 'tensor(float)'
    if not type_name.startswith("tensor("):
        return None
    dims = [d if isinstance(d, int) and d >= 0 else SYMBOLIC_DIM for d in (arg.shape or [])]
    # each dim too: numpy refuses a shape whose nonzero dims overflow even when another dim is 0
    if math.prod(dims) > MAX_FEED_ELEMENTS or any(d > MAX_FEED_ELEMENTS for d in dims):
        return None
    dtype = _NUMPY_OF_ORT_NAME.get(type_name)
    if dtype is None:
        return None
    if dtype == np.dtype(object):
        return np.array(rng.choice(["a", "bc", ""], size=dims), dtype=object)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=dims).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0, 4, size=dims).astype(dtype)
    return rng.standard_normal(size=dims).astype(dtype)


def exercise(data: bytes, run: bool = True) -> str:
    """Push ``data`` through every stage; return the stage that refused it (or 'ran').

    Raises whatever a stage raises that is not an :class:`onyx.OnyxError`: that is a finding; so is
    :class:`UnboundedAllocation`, when a stage asked for one array past ``WATCH_BYTES``.
    """
    watch = _watch_arena()
    refused = watch.stats()["refused"]
    with watch.installed():  # a session's run installs its own, bounded, arena inside
        stage = _stages(data, run)
    stats = watch.stats()
    if stats["refused"] > refused:
        raise UnboundedAllocation(
            f"a stage outside the run asked for one array past {WATCH_BYTES:,} bytes (refused; it reached "
            f"stage {stage!r}): a size from the model reached an allocation without a bound"
        )
    return stage


def _stages(data: bytes, run: bool) -> str:
    import onyx
    from onyx.errors import OnyxError

    try:
        model = onyx.load_from_string(data)
    except OnyxError:
        return "load"
    try:
        onyx.check(model)
    except OnyxError:
        pass  # sessions are as lenient as onnxruntime; keep going to reach the later stages
    try:
        onyx.infer_shapes(model.clone())
    except OnyxError:
        pass
    try:
        onyx.optimize(model.clone())
    except OnyxError:
        pass
    try:
        options = onyx.SessionOptions()
        options.add_session_config_entry("session.max_tensor_bytes", str(MAX_TENSOR_BYTES))
        sess = onyx.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except OnyxError:
        return "session"
    if not run:
        return "session"
    rng = np.random.default_rng(0)
    feeds = {}
    for arg in sess.get_inputs():
        value = _feed_for(arg, rng)
        if value is None:
            return "feed"
        feeds[arg.name] = value
    run_options = onyx.RunOptions()
    run_options.add_run_config_entry("run.timeout_ms", str(RUN_TIMEOUT_MS))
    try:
        sess.run(None, feeds, run_options)
    except OnyxError:
        return "run"
    return "ran"
