"""``onyx batch MODEL INPUT OUTPUT``: score a table of rows in-process or on a Ray cluster.

Input: Parquet, CSV, .npy (one column, ``data``) or .npz (one column per array), or a directory of such
files read in name order. Output: Parquet, or .npz by its extension; the input's columns plus the model's
outputs (plus ``error`` with ``--on-error record``). In-process, a thread pool runs a few sessions over
chunks and keeps the input's order; with ``--ray`` the rows go through :func:`onyx.ray.predict`.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from onyx.errors import Fail, InvalidArgument, NoSuchFile
from onyx.ray.predictor import ERROR_COLUMN, OnyxPredictor, arrow_to_numpy, numpy_to_arrow

ROW_COLUMN = "__onyx_row__"  # the input's row number, carried through Ray to name a failing row
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".npy": "npy", ".npz": "npz"}

Columns = dict[str, np.ndarray]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``onyx batch``."""
    p.add_argument("model", metavar="MODEL")
    p.add_argument("input", metavar="INPUT", help="Parquet, CSV, .npy/.npz, or a directory of them")
    p.add_argument("output", metavar="OUTPUT", help="a .parquet file, or .npz")
    p.add_argument("--batch-size", type=int, default=1024, help="rows per model run (default 1024)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster: 'auto' or an address")
    where.add_argument("--local", action="store_true", help="run on a local Ray cluster started for this run")
    p.add_argument("--concurrency", type=int, default=0, help="sessions (in-process) or Ray actors")
    p.add_argument("--num-cpus", type=float, default=1.0, help="CPUs per Ray actor (fractions allowed)")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads per in-process session")
    p.add_argument(
        "--input-column",
        action="append",
        default=[],
        metavar="NAME=COL[,COL...]",
        help="feed model input NAME from column COL (several scalar columns are stacked)",
    )
    p.add_argument("--preserve-order", action="store_true", help="keep the input's row order on Ray")
    p.add_argument("--on-error", choices=["raise", "record"], default="raise")
    p.add_argument("--force", action="store_true", help="overwrite OUTPUT")


# -- reading and writing ----------------------------------------------------------------------------
def _files(path: str) -> list[tuple[str, str]]:
    if not os.path.exists(path):
        raise NoSuchFile(f"input {path!r} does not exist")
    names = sorted(os.listdir(path)) if os.path.isdir(path) else [None]
    files = []
    for name in names:
        f = path if name is None else os.path.join(path, name)
        kind = SUFFIXES.get(os.path.splitext(f)[1].lower())
        if kind is not None:
            files.append((f, kind))
        elif name is None:
            raise InvalidArgument(f"input {path!r}: expected one of {sorted(SUFFIXES)} or a directory")
    if not files:
        raise InvalidArgument(f"input directory {path!r} holds no {', '.join(sorted(SUFFIXES))} file")
    if len({k for _, k in files}) > 1:
        raise InvalidArgument(f"input directory {path!r} mixes file kinds: {sorted({k for _, k in files})}")
    return files


def _read_one(path: str, kind: str) -> Columns:
    try:
        if kind == "npy":
            return {"data": np.load(path, allow_pickle=False)}
        if kind == "npz":
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        import pyarrow.csv
        import pyarrow.parquet

        table = pyarrow.parquet.read_table(path) if kind == "parquet" else pyarrow.csv.read_csv(path)
    except ImportError as e:
        raise InvalidArgument(f"reading {kind} needs pyarrow: pip install 'onyx[ray]' ({e})") from None
    except (OSError, ValueError) as e:
        raise InvalidArgument(f"cannot read {path!r} as {kind}: {e}") from None
    return {name: arrow_to_numpy(table.column(name)) for name in table.column_names}


def read_columns(path: str) -> Columns:
    """Every input file's columns, concatenated in file-name order."""
    parts = [_read_one(f, kind) for f, kind in _files(path)]
    names = list(parts[0])
    for (f, _), part in zip(_files(path), parts):
        if list(part) != names:
            raise InvalidArgument(f"{f!r} has columns {list(part)}, the first file {names}")
    cols = {n: np.concatenate([p[n] for p in parts]) if len(parts) > 1 else parts[0][n] for n in names}
    rows = {n: len(c) for n, c in cols.items()}
    if len(set(rows.values())) > 1:
        raise InvalidArgument(f"input {path!r}: columns of different lengths {rows}")
    return cols


def write_columns(path: str, cols: Columns) -> None:
    """Parquet (tensor columns as Arrow fixed-shape tensors), or .npz for a path ending in .npz."""
    if path.lower().endswith(".npz"):
        np.savez(path, **{n: c.astype(str) if c.dtype == object else c for n, c in cols.items()})
        return
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ImportError as e:
        raise InvalidArgument(f"writing Parquet needs pyarrow: pip install 'onyx[ray]' ({e})") from None
    table = pa.table({n: numpy_to_arrow(c) for n, c in cols.items()})
    pyarrow.parquet.write_table(table, path)


def _concat(batches: list[Columns]) -> Columns:
    if not batches:
        return {}
    return {n: np.concatenate([b[n] for b in batches]) for n in batches[0]}


# -- progress ---------------------------------------------------------------------------------------
class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, stream=None):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0

    def add(self, rows: int) -> None:
        self.done += rows
        now = time.perf_counter()
        if self.live and (now - self._last > 0.2 or self.done >= self.total):
            self._last = now
            frac = self.done / self.total if self.total else 1.0
            bar = "#" * int(30 * frac)
            rate = self.done / max(now - self.t0, 1e-9)
            self.stream.write(f"\r[{bar:<30}] {self.done:,}/{self.total:,} rows {rate:,.0f} rows/s")
            self.stream.flush()

    def close(self) -> float:
        if self.live:
            self.stream.write("\n")
        return time.perf_counter() - self.t0


# -- running ----------------------------------------------------------------------------------------
def run_in_process(
    predictors: list[OnyxPredictor], cols: Columns, batch_size: int, progress: Progress
) -> Columns:
    """Chunks of ``batch_size`` rows over the predictors' sessions, one thread each; in the input's order."""
    rows = len(next(iter(cols.values())))
    pool: queue.Queue = queue.Queue()
    for p in predictors:
        pool.put(p)

    def score(start: int) -> Columns:
        predictor = pool.get()
        try:
            chunk = {n: c[start : start + batch_size] for n, c in cols.items()}
            n = len(next(iter(chunk.values())))
            return predictor.predict_columns(chunk, n, batch_index=np.arange(start, start + n))
        finally:
            pool.put(predictor)

    out = []
    with ThreadPoolExecutor(max_workers=len(predictors)) as ex:
        for res in ex.map(score, range(0, rows, batch_size)):
            out.append(res)
            progress.add(len(next(iter(res.values()))))
    return {**cols, **_concat(out)}


def _ray_error_text(e: Exception) -> str:
    """The onyx error inside Ray's wrapping, as 'Type: message' (or Ray's last line)."""
    import re

    m = re.search(r"onyx\.errors\.(\w+): (.*)", str(e))
    if m:
        return f"{m.group(1)}: {m.group(2)}"
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


def run_on_ray(args: argparse.Namespace, cols: Columns, inputs: dict, progress: Progress) -> Columns:
    """Send the rows through onyx.ray.predict on the cluster named by --ray / --local; gather them back."""
    try:
        import pyarrow as pa
        import ray

        from onyx.ray import predict
    except ImportError as e:
        msg = f"onyx batch --ray needs the ray extra (pip install 'onyx[ray]'): {e}"
        raise InvalidArgument(msg) from None
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its per-job INFO lines: ours are enough
    started = False
    if not ray.is_initialized():
        quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
        if args.local:
            ray.init(**quiet)
            started = True
        else:
            try:
                ray.init(address=args.ray, **quiet)
            except ConnectionError:
                if args.ray != "auto":
                    raise InvalidArgument(f"no Ray cluster answers at {args.ray!r}") from None
                ray.init(**quiet)  # 'auto' and none running: a local cluster for this run
            started = True
    try:
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False  # ours is drawn instead
        rows = len(next(iter(cols.values())))
        concurrency = args.concurrency or max(1, int(ray.cluster_resources().get("CPU", 1) // args.num_cpus))
        table = pa.table({**{n: numpy_to_arrow(c) for n, c in cols.items()}, ROW_COLUMN: np.arange(rows)})
        blocks = max(1, min(rows // max(args.batch_size, 1), 4 * concurrency))
        step = -(-rows // blocks) if rows else 1
        ds = ray.data.from_arrow([table.slice(i, step) for i in range(0, max(rows, 1), step)])
        out = predict(
            ds,
            args.model,
            batch_size=args.batch_size,
            concurrency=concurrency,
            num_cpus=args.num_cpus,
            input_columns=inputs or None,
            preserve_order=args.preserve_order,
            on_error=args.on_error,
            index_column=ROW_COLUMN,
        )
        batches = []
        try:
            for b in out.iter_batches(batch_format="numpy", batch_size=None):
                b = dict(b)
                b.pop(ROW_COLUMN)
                batches.append(b)
                progress.add(len(next(iter(b.values()))))
        except ray.exceptions.RayError as e:
            raise Fail(f"inference failed on the Ray cluster: {_ray_error_text(e)}") from None
        return _concat(batches) if batches else {**cols}
    finally:
        if started:
            ray.shutdown()


def _input_mapping(items: list[str]) -> dict:
    mapping = {}
    for item in items:
        name, sep, cols = item.partition("=")
        if not sep or not name or not cols:
            raise InvalidArgument(f"--input-column expects NAME=COL or NAME=COL1,COL2,..., got {item!r}")
        parts = [c for c in cols.split(",") if c]
        mapping[name] = parts[0] if len(parts) == 1 else parts
    return mapping


def batch(args: argparse.Namespace, out=None) -> int:
    """Run ``onyx batch``: read, score, write, and report rows/s."""
    out = out or sys.stdout
    if args.batch_size < 1:
        raise InvalidArgument(f"--batch-size must be at least 1, got {args.batch_size}")
    if not os.path.isfile(args.model):
        raise NoSuchFile(f"model file {args.model!r} does not exist")
    if os.path.exists(args.output) and not args.force:
        raise InvalidArgument(f"{args.output!r} exists: pass --force to overwrite")
    if not args.output.lower().endswith((".parquet", ".pq", ".npz")):
        raise InvalidArgument(f"OUTPUT must end in .parquet, .pq or .npz, got {args.output!r}")
    inputs = _input_mapping(args.input_column)
    cols = read_columns(args.input)
    rows = len(next(iter(cols.values()))) if cols else 0
    if args.ray or args.local:
        progress = Progress(rows)  # from the cluster's start: Ray's start-up is part of the job
        result = run_on_ray(args, cols, inputs, progress)
    else:
        workers = args.concurrency or min(4, os.cpu_count() or 1)
        threads = args.threads or max(1, (os.cpu_count() or 1) // workers)

        predictors = [
            OnyxPredictor(
                args.model,
                input_columns=inputs or None,
                max_batch_size=args.batch_size,
                on_error=args.on_error,
                intra_op_num_threads=threads,
            )
            for _ in range(workers)
        ]
        progress = Progress(rows)
        result = run_in_process(predictors, cols, args.batch_size, progress)
    seconds = progress.close()
    write_columns(args.output, result)
    failed = int(np.count_nonzero(result[ERROR_COLUMN] != "")) if ERROR_COLUMN in result else 0
    note = f", {failed:,} failed (see the '{ERROR_COLUMN}' column)" if failed else ""
    rate = rows / max(seconds, 1e-9)
    print(f"scored {rows:,} rows in {seconds:.2f} s ({rate:,.0f} rows/s){note} -> {args.output}", file=out)
    return 0
