"""Batch inference with onyx on Ray Data (the ``ray`` extra): ``onyx.ray.predict(dataset, "model.onnx")``.

Ray Data streams the dataset through a pool of actors; each actor builds one onyx session from the model
(shipped once through Ray's object store, or opened from a path every node sees) and scores the batches
it is given. Ray restarts an actor that dies and runs its task again, so every row comes out once.
``OnyxPredictor`` is importable without Ray (the in-process ``onyx batch`` uses it too).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from onyx.errors import InvalidArgument, NoSuchFile
from onyx.ray.predictor import ERROR_COLUMN, ON_ERROR, OnyxPredictor, model_source
from onyx.runtime.options import SessionOptions

if TYPE_CHECKING:  # pragma: no cover
    import ray.data

__all__ = ["ERROR_COLUMN", "OnyxPredictor", "predict"]


def _require_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the Data library, in ray[data]
    except ImportError as e:
        raise InvalidArgument(f"onyx.ray needs Ray Data: pip install 'onyx[ray]' ({e})") from None
    return ray


def predict(
    dataset: ray.data.Dataset,
    model: Any,
    *,
    batch_size: int = 1024,
    concurrency: int | tuple[int, int] = 1,
    num_cpus: float = 1.0,
    input_columns: Mapping[str, str | Sequence[str]] | None = None,
    output_columns: Mapping[str, str] | Sequence[str] | None = None,
    session_options: SessionOptions | None = None,
    preserve_order: bool = False,
    on_error: str = "raise",
    index_column: str | None = None,
    max_restarts: int = 3,
    max_task_retries: int = 3,
    shared_path: bool = False,
    predictor: type[OnyxPredictor] = OnyxPredictor,
) -> ray.data.Dataset:
    """The dataset with the model's outputs as new columns (lazy: Ray runs it when it is consumed).

    ``model``: a path, bytes or an onyx Model. It is read here once and put in Ray's object store; every
    actor fetches it once. With ``shared_path=True`` a path is opened by the actors instead (a file
    every node sees, e.g. on shared storage; needed for a model whose weights are external files).
    ``concurrency``: actors (an int, or ``(min, max)`` for an autoscaling pool); ``num_cpus`` per actor
    (fractions let several share a core); each session runs ``max(1, int(num_cpus))`` intra-op threads
    unless ``session_options`` fixes a count. ``batch_size`` rows per call; a model with a fixed batch
    dimension runs in chunks of that size, the last padded. ``preserve_order`` keeps the input's row
    order (Ray Data's ``execution_options.preserve_order``, set on the context the dataset carries,
    which Ray shares with the dataset it derives from). ``on_error="record"`` adds an ``error``
    column and isolates failing rows (name them with ``index_column``); ``"raise"`` stops the job on
    the first failure (Ray raises it wrapped in a ``RayTaskError`` whose text holds onyx's error).
    ``max_restarts`` / ``max_task_retries``: Ray's restarts of a dead actor and retries of its tasks.
    ``predictor``: a subclass of :class:`OnyxPredictor` (pre- or post-processing of batches).
    """
    ray = _require_ray()
    if on_error not in ON_ERROR:
        raise InvalidArgument(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    if int(batch_size) < 1:
        raise InvalidArgument(f"batch_size must be at least 1, got {batch_size}")
    if not num_cpus or num_cpus <= 0:
        raise InvalidArgument(f"num_cpus must be positive, got {num_cpus}")
    if isinstance(concurrency, int):
        if concurrency < 1:
            raise InvalidArgument(f"concurrency must be at least 1, got {concurrency}")
        compute = ray.data.ActorPoolStrategy(size=concurrency)
    else:
        low, high = concurrency
        compute = ray.data.ActorPoolStrategy(min_size=int(low), max_size=int(high))
    if shared_path:
        if not isinstance(model, str | os.PathLike):
            raise InvalidArgument("shared_path=True needs the model as a path")
        source: Any = os.fspath(model)
    else:
        src = model_source(model)
        if isinstance(src, str):
            if not os.path.isfile(src):
                raise NoSuchFile(f"model file {src!r} does not exist")
            with open(src, "rb") as f:  # read once, here; the actors fetch the bytes from the store
                src = f.read()
        source = ray.put(src)
        # the constructor runs here once too: a bad model or mapping fails now, not in every actor
        predictor(
            src,
            session_options=session_options,
            input_columns=input_columns,
            output_columns=output_columns,
            max_batch_size=batch_size,
            on_error=on_error,
            index_column=index_column,
            intra_op_num_threads=1,
        )
    with warnings.catch_warnings():
        # Ray 2.60 marks **ray_remote_args deprecated, yet names no parameter for an actor's restarts
        warnings.filterwarnings("ignore", message=r".*ray_remote_args.*deprecated")
        out = dataset.map_batches(
            predictor,
            batch_size=int(batch_size),
            batch_format="numpy",
            compute=compute,
            num_cpus=num_cpus,
            fn_constructor_args=(source,),
            fn_constructor_kwargs={
                "session_options": session_options,
                "input_columns": dict(input_columns) if input_columns is not None else None,
                "output_columns": output_columns,
                "max_batch_size": int(batch_size),
                "on_error": on_error,
                "index_column": index_column,
                "intra_op_num_threads": max(1, int(num_cpus)),
            },
            max_restarts=max_restarts,
            max_task_retries=max_task_retries,
        )
    if preserve_order:
        out.context.execution_options.preserve_order = True
    return out
