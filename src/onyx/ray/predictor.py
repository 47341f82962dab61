"""Run an onyx session over batches of columns: the callable that Ray Data's ``map_batches`` drives.

One :class:`OnyxPredictor` holds one session for its whole life (an actor builds it once), maps columns
to model inputs and outputs to new columns, fits each batch to the model's batch dimension (split, or
padded for a fixed batch) and, when asked, isolates a failing row instead of failing the batch. It
needs no Ray itself: the in-process ``onyx batch`` runs the same class on a thread pool.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.runtime.options import SessionOptions
from onyx.runtime.session import InferenceSession

ERROR_COLUMN = "error"
ON_ERROR = ("raise", "record")

# the element types a column is cast to when it holds another numeric type (CSV gives float64 and int64)
_NUMPY_OF_TYPE = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int8)": np.int8,
    "tensor(int16)": np.int16,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64,
    "tensor(bool)": np.bool_,
    "tensor(string)": object,
}


def _fill_value(dtype: np.dtype) -> Any:
    """What a failed row's outputs hold: NaN where the type has it, else zero, False or ''."""
    if dtype.kind == "O":
        return ""
    if np.issubdtype(dtype, np.inexact):
        return np.nan
    return dtype.type(0)


def model_source(model: Any) -> str | bytes:
    """A path or the bytes of a model; an ObjectRef (the model shipped through Ray's store) is fetched."""
    if type(model).__name__ == "ObjectRef":  # without importing ray where it is not needed
        import ray

        model = ray.get(model)
    if isinstance(model, str | os.PathLike):
        return os.fspath(model)
    if isinstance(model, bytes | bytearray | memoryview):
        return bytes(model)
    from onyx.ir.model import Model

    if isinstance(model, Model):
        from onyx.model_io import serialize

        return serialize(model)
    raise InvalidArgument(
        "the model must be a path, bytes, an onyx Model or a Ray ObjectRef of bytes, "
        f"got {type(model).__name__}"
    )


def session_options_for(options: SessionOptions | None, threads: int | None) -> SessionOptions:
    """A copy of ``options`` whose intra-op thread count is ``threads`` unless the caller fixed one."""
    opts = copy.deepcopy(options) if options is not None else SessionOptions()
    if threads is not None and not opts.intra_op_num_threads:
        opts.intra_op_num_threads = max(1, int(threads))
    return opts


class _Input:
    """One model input: where its values come from and what it expects."""

    __slots__ = ("name", "columns", "dtype", "rank", "last_dim")

    def __init__(self, name: str, columns: list[str], type_string: str, shape: list | None):
        self.name = name
        self.columns = columns  # one column, or several scalar columns stacked into [rows, len(columns)]
        self.dtype = _NUMPY_OF_TYPE.get(type_string)
        self.rank = len(shape) if shape else None
        self.last_dim = shape[-1] if shape else None


class OnyxPredictor:
    """Score batches with one onyx session: ``ds.map_batches(OnyxPredictor, fn_constructor_kwargs=...)``.

    ``model``: a path, bytes, an onyx Model, or a Ray ObjectRef of the bytes (fetched once, here).
    ``input_columns``: model input -> column (or a list of scalar columns stacked as [rows, k]); by
    default each input reads the column of its own name (a one-input model reads a one-column batch).
    ``output_columns``: model output -> new column (or a list of outputs); by default every output under
    its own name. ``max_batch_size`` splits a batch for a dynamic-batch model; a model whose batch
    dimension is fixed runs in chunks of that size, the last one padded. ``on_error="record"`` adds an
    ``error`` column ("" where the row ran) and re-runs a failing chunk row by row; ``index_column``
    names the column that identifies a row in that message (else its position in the batch).
    """

    def __init__(
        self,
        model: Any,
        *,
        session_options: SessionOptions | None = None,
        input_columns: Mapping[str, str | Sequence[str]] | None = None,
        output_columns: Mapping[str, str] | Sequence[str] | None = None,
        max_batch_size: int | None = None,
        on_error: str = "raise",
        index_column: str | None = None,
        intra_op_num_threads: int | None = None,
    ):
        if on_error not in ON_ERROR:
            raise InvalidArgument(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
        if max_batch_size is not None and int(max_batch_size) < 1:
            raise InvalidArgument(f"max_batch_size must be at least 1, got {max_batch_size}")
        self.session = InferenceSession(
            model_source(model), session_options_for(session_options, intra_op_num_threads)
        )
        self.on_error = on_error
        self.index_column = index_column
        self.max_batch_size = int(max_batch_size) if max_batch_size else None
        self._inputs = self._map_inputs(dict(input_columns or {}))
        self._explicit_inputs = set(input_columns or ())
        self._outputs = self._map_outputs(output_columns)
        self.fixed_batch = self._fixed_batch()
        # per output: a row of the right shape and dtype, for the rows that failed (see _failed_row)
        self._templates: dict[str, np.ndarray] = {}

    # -- set-up ---------------------------------------------------------------------------------
    def _map_inputs(self, mapping: dict[str, str | Sequence[str]]) -> list[_Input]:
        args = self.session.get_inputs()
        names = {a.name for a in args}
        unknown = sorted(set(mapping) - names)
        if unknown:
            raise InvalidArgument(f"input_columns names {unknown}, not inputs of the model: {sorted(names)}")
        out = []
        for a in args:
            spec = mapping.get(a.name, a.name)
            columns = [spec] if isinstance(spec, str) else list(spec)
            if not columns:
                raise InvalidArgument(f"input_columns[{a.name!r}] names no column")
            out.append(_Input(a.name, columns, a.type, a.shape))
        return out

    def _map_outputs(self, spec: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
        names = [o.name for o in self.session.get_outputs()]
        if spec is None:
            return {n: n for n in names}
        mapping = dict(spec) if isinstance(spec, Mapping) else {n: n for n in spec}
        unknown = sorted(set(mapping) - set(names))
        if unknown:
            raise InvalidArgument(f"output_columns names {unknown}, not outputs of the model: {names}")
        return mapping

    def _fixed_batch(self) -> int | None:
        sizes = {}
        for a in self.session.get_inputs():
            if a.shape and isinstance(a.shape[0], int) and a.shape[0] > 0:
                sizes[a.name] = a.shape[0]
        if len(set(sizes.values())) > 1:
            raise InvalidArgument(f"the model's inputs disagree on a fixed batch size: {sizes}")
        return next(iter(sizes.values()), None)

    # -- one batch -------------------------------------------------------------------------------
    def __call__(self, batch: Any) -> Any:
        """Score a batch (a dict of numpy arrays, a pandas DataFrame or a pyarrow Table); same kind back,
        with the input's columns and the outputs as new columns."""
        kind = _batch_kind(batch)
        columns = _to_numpy_columns(batch, self.columns_for(_column_names(batch, kind)), kind)
        rows = _row_count(batch, kind)
        outputs = self.predict_columns(columns, rows, batch_index=columns.get(self.index_column))
        clash = sorted(set(outputs) & set(_column_names(batch, kind)))
        if clash:
            raise InvalidArgument(
                f"output column(s) {clash} already exist in the batch: give them other names (output_columns)"
            )
        return _with_columns(batch, kind, outputs)

    def columns_for(self, present: Sequence[str]) -> list[str]:
        """The columns read from a batch that has the columns ``present`` (InvalidArgument if missing)."""
        need = []
        data = [c for c in present if c != self.index_column]
        for inp in self._inputs:
            missing = [c for c in inp.columns if c not in present]
            if missing and len(self._inputs) == 1 and not self._explicit_inputs and len(data) == 1:
                inp.columns = data  # a one-input model on a one-column batch (beside its index): that column
                missing = []
            if missing:
                raise InvalidArgument(
                    f"model input {inp.name!r} reads column(s) {missing}, not in the batch (columns: "
                    f"{sorted(present)}); map it to a column: input_columns={{{inp.name!r}: COLUMN}} "
                    f"(onyx batch: --input-column {inp.name}=COLUMN)"
                )
            need += inp.columns
        if self.index_column is not None:
            if self.index_column not in present:
                raise InvalidArgument(f"index_column {self.index_column!r} is not a column of the batch")
            need.append(self.index_column)
        return need

    def predict_columns(
        self, columns: Mapping[str, np.ndarray], rows: int, batch_index: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """The output columns for ``rows`` rows of input columns (numpy, rows first)."""
        self.columns_for(list(columns))
        feeds = {inp.name: self._feed(inp, columns, rows) for inp in self._inputs}
        step = self.fixed_batch or self.max_batch_size or max(rows, 1)
        parts: list[dict[str, np.ndarray]] = []
        errors: list[str] = []
        for start in range(0, rows, step):
            stop = min(start + step, rows)
            chunk = {k: v[start:stop] for k, v in feeds.items()}
            if self.on_error == "raise":
                parts.append(self._run(chunk, stop - start))
                continue
            try:
                parts.append(self._run(chunk, stop - start))
                errors += [""] * (stop - start)
            except Exception:  # noqa: BLE001 - the chunk failed: find the rows that fail, alone
                for r in range(start, stop):
                    out, err = self._run_row({k: v[r : r + 1] for k, v in feeds.items()})
                    parts.append(out)
                    where = batch_index[r] if batch_index is not None else f"{r} of its batch"
                    errors.append(f"row {where}: {err}" if err else "")
        result = _concat(parts, list(self._outputs), rows)
        out = {self._outputs[name]: value for name, value in result.items()}
        if self.on_error == "record":
            out[ERROR_COLUMN] = np.array(errors, dtype=object)
        return out

    def _feed(self, inp: _Input, columns: Mapping[str, np.ndarray], rows: int) -> np.ndarray:
        if len(inp.columns) == 1:
            x = _as_array(columns[inp.columns[0]])
        else:
            x = np.stack([_as_array(columns[c]) for c in inp.columns], axis=1)
        if x.shape[:1] != (rows,):
            raise InvalidArgument(
                f"column(s) {inp.columns} for input {inp.name!r}: {x.shape[:1]} rows, not {rows}"
            )
        if inp.rank is not None and x.ndim + 1 == inp.rank and inp.last_dim == 1:
            x = x[..., None]  # a scalar column feeding an input of shape [N, 1]
        if inp.dtype is object:
            return x if x.dtype == object else x.astype(object)
        if inp.dtype is not None and x.dtype != inp.dtype and np.can_cast(x.dtype, inp.dtype, "same_kind"):
            x = x.astype(inp.dtype)
        return x

    def _run(self, chunk: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
        """Run ``n`` rows (padded to the fixed batch by repeating the last row) and check the outputs."""
        if self.fixed_batch and n < self.fixed_batch:
            pad = self.fixed_batch - n
            chunk = {k: np.concatenate([v, np.repeat(v[-1:], pad, axis=0)]) for k, v in chunk.items()}
        names = list(self._outputs)
        values = self.session.run(names, chunk)
        out = {}
        for name, v in zip(names, values):
            if isinstance(v, list):  # a sequence output (e.g. ZipMap's list of dicts): one item per row
                arr = np.empty(len(v), dtype=object)
                arr[:] = v
                v = arr
            if not isinstance(v, np.ndarray) or v.ndim == 0 or v.shape[0] != (self.fixed_batch or n):
                got = getattr(v, "shape", type(v).__name__)
                raise InvalidArgument(
                    f"output {name!r} is {got}: its first dimension must be the batch ({n} rows) to become a "
                    "column; leave it out with output_columns"
                )
            out[name] = v[:n]
            if name not in self._templates and n:
                self._templates[name] = v[:1].copy()
        return out

    def _run_row(self, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str]:
        try:
            return self._run(feeds, 1), ""
        except Exception as e:  # noqa: BLE001 - recorded in the error column, as asked
            return self._failed_row(), f"{type(e).__name__}: {e}"

    def _failed_row(self) -> dict[str, np.ndarray]:
        out = {}
        by_name = {o.name: o for o in self.session.get_outputs()}
        for name in self._outputs:
            t = self._templates.get(name)
            if t is None:  # nothing ran yet: the declared shape and type
                o = by_name[name]
                dims = [d if isinstance(d, int) and d >= 0 else 1 for d in (o.shape or [1])[1:]]
                dtype = np.dtype(_NUMPY_OF_TYPE.get(o.type, np.float32))
                t = np.empty([1, *dims], dtype=dtype)
            row = np.empty_like(t)
            row[...] = _fill_value(t.dtype)
            out[name] = row
        return out


def _concat(parts: list[dict[str, np.ndarray]], names: list[str], rows: int) -> dict[str, np.ndarray]:
    if not parts:
        return {n: np.empty((rows,)) for n in names}
    out = {}
    for n in names:
        pieces = [p[n] for p in parts]
        if len(pieces) == 1:
            out[n] = pieces[0]
            continue
        shapes = {p.shape[1:] for p in pieces}
        if len(shapes) > 1:
            raise InvalidArgument(
                f"output {n!r} has a different shape per chunk ({sorted(shapes)}): it cannot form one column"
            )
        out[n] = np.concatenate(pieces)
    return out


def _as_array(col: Any) -> np.ndarray:
    """A column as one numpy array, rows first: an object column of equal-shaped arrays is stacked."""
    x = np.asarray(col)
    if x.dtype == object and x.size and isinstance(x.flat[0], np.ndarray | list | tuple):
        return np.stack([np.asarray(v) for v in x])
    return x


# -- batch formats: dict of numpy arrays, pandas DataFrame, pyarrow Table -------------------------------
def _batch_kind(batch: Any) -> str:
    if isinstance(batch, Mapping):
        return "numpy"
    mod = type(batch).__module__.split(".")[0]
    if mod == "pandas":
        return "pandas"
    if mod == "pyarrow":
        return "pyarrow"
    raise InvalidArgument(
        "a batch must be a dict of numpy arrays, a pandas DataFrame or a pyarrow Table, "
        f"got {type(batch).__name__}"
    )


def _column_names(batch: Any, kind: str) -> list[str]:
    if kind == "numpy":
        return list(batch)
    if kind == "pandas":
        return [str(c) for c in batch.columns]
    return list(batch.column_names)


def _row_count(batch: Any, kind: str) -> int:
    if kind == "numpy":
        return len(next(iter(batch.values()))) if batch else 0
    return len(batch)


def _to_numpy_columns(batch: Any, names: list[str], kind: str) -> dict[str, np.ndarray]:
    if kind == "numpy":
        return {n: batch[n] for n in names}
    if kind == "pandas":
        return {n: batch[n].to_numpy() for n in names}
    return {n: arrow_to_numpy(batch.column(n)) for n in names}


def arrow_to_numpy(col: Any) -> np.ndarray:
    """A pyarrow column as numpy, rows first: fixed-shape tensors and equal-length lists are stacked."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    t = col.type
    if isinstance(t, pa.FixedShapeTensorType):
        return col.to_numpy_ndarray()
    if isinstance(t, pa.ExtensionType) and hasattr(col, "to_numpy"):  # e.g. Ray's own tensor type
        return _as_array(col.to_numpy(zero_copy_only=False))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _as_array(col.to_numpy(zero_copy_only=False))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return np.asarray(col.to_pylist(), dtype=object)
    return col.to_numpy(zero_copy_only=False)


def numpy_to_arrow(arr: np.ndarray) -> Any:
    """A numpy column as a pyarrow array: rows of shape (...) become a fixed-shape tensor column."""
    import pyarrow as pa

    if arr.ndim > 1:
        return pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(arr))
    if arr.dtype == object:
        return pa.array(arr.tolist())
    return pa.array(arr)


def _with_columns(batch: Any, kind: str, outputs: dict[str, np.ndarray]) -> Any:
    if kind == "numpy":
        return {**batch, **outputs}
    if kind == "pandas":
        out = batch.copy(deep=False)
        for name, v in outputs.items():
            out[name] = list(v) if v.ndim > 1 else v
        return out
    for name, v in outputs.items():
        batch = batch.append_column(name, numpy_to_arrow(v))
    return batch
