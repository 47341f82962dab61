"""A model as one self-contained HTML page: the graph top to bottom, typed edges, details on click.

The layout is computed here (a layered drawing: longest-path layers, barycentric ordering, dummy points
for long edges), so that the page only draws: a BERT-base of ~1,400 nodes opens in a second. The page
makes no network request (inline script and style, a Content-Security-Policy that forbids any).
"""

from __future__ import annotations

import html
import json
import os
from importlib import resources
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import AttrType, Graph, Model, Node, Value

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

NODE_H = 38  # the height of a node box (two lines: op type, name); 52 with a profile line
LAYER_GAP = 54  # vertical space between layers, room for an edge label
NODE_GAP = 26  # horizontal space between boxes of one layer
DUMMY_W = 8  # the width a long edge takes where it crosses a layer
SWEEPS = 8  # barycentric ordering passes (alternately down and up)
SMOOTHING = 4  # rounds of pulling each box towards its neighbours' mean position


# -- what the page shows --------------------------------------------------------------------------------
def _dtype_name(elem_type: int | None) -> str:
    from onyx.ir.dtypes import DataType

    try:
        return DataType(elem_type or 0).onnx_name
    except ValueError:
        return f"type{elem_type}"


def type_label(v: Value | None) -> str:
    """``float[batch,128,768]``: element type and symbolic shape, as shape inference left them."""
    if v is None or v.type is None:
        return "?"
    shape = v.shape
    elem = v.elem_type
    if elem is None:  # sequences, maps, optionals
        return v.type.ort_name()
    dims = "" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
    return _dtype_name(elem) + dims


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _values_preview(arr: np.ndarray, count: int = 6) -> str:
    flat = np.asarray(arr).reshape(-1)[:count]
    with np.printoptions(precision=4, suppress=True, threshold=count):
        body = np.array2string(flat, separator=", ")
    return body[:-1] + ", ...]" if arr.size > count else body


def tensor_summary(t: Any) -> dict:
    """Name, type, shape and the first few values of a constant tensor (never its whole data)."""
    out = {"name": getattr(t, "name", None) or "", "dims": [int(d) for d in getattr(t, "dims", ())]}
    try:
        out["dtype"] = t.dtype.onnx_name
    except Exception:  # noqa: BLE001 - an element type onyx cannot name: shown by number
        out["dtype"] = f"type{getattr(t, 'data_type', '?')}"
    try:
        out["values"] = _values_preview(t.numpy())
    except Exception as e:  # noqa: BLE001 - external data missing, a sparse tensor...: said so
        out["values"] = f"(not read: {type(e).__name__})"
    return out


def _attr_text(a: Any) -> str:
    if a.ref_attr_name:
        return f"@{a.ref_attr_name}"
    v = a.value
    if a.type == AttrType.STRING:
        return _short(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
    if a.type == AttrType.STRINGS:
        return _short([s.decode("utf-8", "replace") if isinstance(s, bytes) else s for s in v or []])
    if a.type in (AttrType.TENSOR, AttrType.SPARSE_TENSOR):
        s = tensor_summary(v) if a.type == AttrType.TENSOR else {"dtype": "sparse", "dims": [], "values": ""}
        return f"{s['dtype']}{s['dims']} {s['values']}"
    if a.type == AttrType.TENSORS:
        return f"{len(v or [])} tensors"
    if a.type in (AttrType.GRAPH, AttrType.GRAPHS):
        return "(subgraph)"
    if a.type in (AttrType.TYPE_PROTO, AttrType.TYPE_PROTOS):
        return _short(v)
    return _short(v)


class _Document:
    """Builds the page's data: one entry per graph (the main graph and every subgraph), laid out."""

    def __init__(self, times: dict | None):
        self.graphs: list[dict] = []
        self.times = times or {}
        self.matched = 0

    def add_graph(self, g: Graph, title: str, parent: int | None) -> int:
        gid = len(self.graphs)
        entry: dict[str, Any] = {"id": gid, "title": title, "parent": parent}
        self.graphs.append(entry)
        boxes: list[dict] = []  # graph inputs, nodes, graph outputs, in that order
        producer: dict[int, int] = {}  # id(value) -> box index
        edges: list[tuple[int, int, str, str]] = []  # (from box, to box, value name, label)

        for v in g.inputs:
            producer[id(v)] = len(boxes)
            boxes.append({"k": "in", "name": v.name, "label": type_label(v)})
        initializers = {id(v) for v in g.initializers.values()}
        outer: dict[str, int] = {}
        nodes_start = len(boxes)
        for n in g.nodes:
            boxes.append(self._node_box(n, initializers))
        for i, n in enumerate(g.nodes):
            for v in n.outputs:
                producer[id(v)] = nodes_start + i
        for i, n in enumerate(g.nodes):
            for v in n.inputs:
                if v is None or id(v) in initializers:
                    continue
                src = producer.get(id(v))
                if src is None:  # a value of an enclosing graph (a subgraph's implicit input)
                    src = outer.get(v.name)
                    if src is None:
                        src = outer[v.name] = len(boxes)
                        boxes.append({"k": "outer", "name": v.name, "label": type_label(v)})
                edges.append((src, nodes_start + i, v.name, type_label(v)))
        for v in g.outputs:
            box = len(boxes)
            boxes.append({"k": "out", "name": v.name, "label": type_label(v)})
            src = producer.get(id(v))
            if src is not None:
                edges.append((src, box, v.name, type_label(v)))
        entry["boxes"] = boxes
        entry["initializers"] = [tensor_summary(v.const) | {"name": v.name} for v in g.initializers.values()]
        self._layout(entry, boxes, edges)
        # subgraphs last, so that their ids come after their parent's
        for i, n in enumerate(g.nodes):
            subs = []
            for a in n.attributes.values():
                if a.type == AttrType.GRAPH and a.value is not None:
                    subs.append((a.name, a.value))
                elif a.type == AttrType.GRAPHS:
                    subs.extend((f"{a.name}[{k}]", sg) for k, sg in enumerate(a.value or []))
            if subs:
                label = n.name or n.op_type
                boxes[nodes_start + i]["subs"] = [
                    [attr, self.add_graph(sg, f"{label} / {attr}", gid)] for attr, sg in subs
                ]
        return gid

    def _node_box(self, n: Node, initializers: set[int]) -> dict:
        box: dict[str, Any] = {"k": "node", "op": n.op_type, "name": n.name or ""}
        if n.domain and n.domain not in ("", "ai.onnx"):
            box["domain"] = n.domain
        box["attrs"] = [[name, _attr_text(a)] for name, a in n.attributes.items()]
        box["ins"] = [
            ["", "", False] if v is None else [v.name, type_label(v), id(v) in initializers] for v in n.inputs
        ]
        box["outs"] = [[v.name, type_label(v)] for v in n.outputs]
        t = self.times.get(n.name or n.op_type)
        if t is not None:
            self.matched += 1
            box["us"] = round(t.total_us / max(t.calls, 1), 2)
            box["calls"] = t.calls
            box["total"] = round(t.total_us, 2)
        return box

    def _layout(self, entry: dict, boxes: list[dict], edges: list[tuple[int, int, str, str]]) -> None:
        widths = [_box_width(b) for b in boxes]
        height = NODE_H + (14 if self.times else 0)
        pairs = sorted({(a, b) for a, b, _, _ in edges if a != b})
        xs, layers, chains = layered_layout(len(boxes), pairs, widths)
        ys = [layer * (height + LAYER_GAP) for layer in layers]
        for b, x, y, w in zip(boxes, xs, ys, widths):
            b["x"], b["y"], b["w"] = round(x, 1), y, w
        entry["h"] = height
        seen: set[str] = set()
        out_edges = []
        for a, b, name, label in edges:
            pts = [[round(xs[a], 1), ys[a] + height]]
            for x, layer in chains.get((a, b), []):
                y = layer * (height + LAYER_GAP)
                pts.append([round(x, 1), y])
                pts.append([round(x, 1), y + height])
            pts.append([round(xs[b], 1), ys[b]])
            edge = {"s": a, "t": b, "p": pts}
            if name not in seen:  # one label per value, on its first edge
                seen.add(name)
                edge["l"] = label
            out_edges.append(edge)
        entry["edges"] = out_edges


def _box_width(b: dict) -> int:
    # op type in 12px bold (~7.5px a letter), name in 10px (~6px a letter, clipped at 32)
    if b["k"] == "node":
        return max(70, int(max(7.5 * len(b["op"]), 6 * min(len(b["name"]), 32))) + 16)
    return max(80, int(6.5 * max(min(len(b["name"]), 28) + 8, min(len(b["label"]), 34))) + 16)


# -- the layered layout ---------------------------------------------------------------------------------
def layered_layout(
    n: int, edges: list[tuple[int, int]], widths: list[float]
) -> tuple[list[float], list[int], dict[tuple[int, int], list[tuple[float, int]]]]:
    """Positions for a DAG drawn top to bottom: (x centre per vertex, layer per vertex, the points of
    each edge spanning several layers as (x, layer) per crossed layer).

    Layers: longest path from the sources; a source that is not a graph input (a Constant) moves down
    to just above its first consumer. Order within a layer: sweeps that sort each layer by the mean
    position of its neighbours in the layer before. x: packed in order, then pulled towards the
    neighbours' mean while keeping boxes apart.
    """
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        succs[a].append(b)
        preds[b].append(a)
    layer = _longest_path_layers(n, preds, succs)
    for v in range(n):  # sources sit just above their first consumer, not all on the top row
        if not preds[v] and succs[v] and layer[v] == 0:
            layer[v] = max(0, min(layer[s] for s in succs[v]) - 1)

    # long edges get one dummy vertex per crossed layer
    width = list(widths)
    lay = list(layer)
    up: list[list[int]] = [list(p) for p in preds]
    down: list[list[int]] = [list(s) for s in succs]
    chains: dict[tuple[int, int], list[int]] = {}
    for a, b in edges:
        if lay[b] - lay[a] <= 1:
            continue
        up[b].remove(a)
        down[a].remove(b)
        prev = a
        chain = []
        for k in range(lay[a] + 1, lay[b]):
            d = len(width)
            width.append(DUMMY_W)
            lay.append(k)
            up.append([prev])
            down.append([])
            down[prev].append(d)
            chain.append(d)
            prev = d
        down[prev].append(b)
        up[b].append(prev)
        chains[(a, b)] = chain

    rows: list[list[int]] = [[] for _ in range(max(lay, default=0) + 1)]
    for v in _dfs_order(len(lay), down, up):
        rows[lay[v]].append(v)
    pos = [0.0] * len(lay)
    for row in rows:
        for i, v in enumerate(row):
            pos[v] = float(i)
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        order = rows[1:] if downward else rows[-2::-1]
        for row in order:
            near = up if downward else down
            keys = {v: (sum(pos[u] for u in near[v]) / len(near[v]) if near[v] else pos[v]) for v in row}
            row.sort(key=lambda v: keys[v])
            for i, v in enumerate(row):
                pos[v] = float(i)

    x = [0.0] * len(lay)
    for row in rows:
        at = 0.0
        for v in row:
            x[v] = at + width[v] / 2
            at += width[v] + NODE_GAP
        shift = at / 2
        for v in row:
            x[v] -= shift
    # both neighbours at once: pulling only towards the row above (or below) lets a long chain drift
    # sideways by half a spacing per layer wherever a node also feeds a long edge
    near = [up[v] + down[v] for v in range(len(lay))]
    for rnd in range(SMOOTHING):
        for row in rows if rnd % 2 == 0 else rows[::-1]:
            target = [(sum(x[u] for u in near[v]) / len(near[v])) if near[v] else x[v] for v in row]
            _place_row(row, target, width, x)
    points = {e: [(x[d], lay[d]) for d in chain] for e, chain in chains.items()}
    return x[:n], lay[:n], points


def _longest_path_layers(n: int, preds: list[list[int]], succs: list[list[int]]) -> list[int]:
    indeg = [len(p) for p in preds]
    ready = [v for v in range(n) if indeg[v] == 0]
    layer = [0] * n
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for s in succs[v]:
            layer[s] = max(layer[s], layer[v] + 1)
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    if seen < n:  # a cycle (an invalid graph): what is left goes below, in file order
        base = max(layer, default=0) + 1
        for v in range(n):
            if indeg[v] > 0:
                layer[v] = base
                base += 1
    return layer


def _dfs_order(n: int, down: list[list[int]], up: list[list[int]]) -> list[int]:
    """Vertices in depth-first order from the sources: a starting order that keeps chains together."""
    order: list[int] = []
    seen = [False] * n
    for root in range(n):
        if seen[root] or up[root]:
            continue
        stack = [root]
        while stack:
            v = stack.pop()
            if seen[v]:
                continue
            seen[v] = True
            order.append(v)
            stack.extend(reversed(down[v]))
    order.extend(v for v in range(n) if not seen[v])
    return order


def _place_row(row: list[int], target: list[float], width: list[float], x: list[float]) -> None:
    """Put a row's boxes as near their targets as their order and spacing allow: the mean of a
    left-to-right and a right-to-left placement (each keeps the spacing, so their mean does too)."""
    k = len(row)
    if not k:
        return
    left = [0.0] * k
    right = [0.0] * k
    for i in range(k):
        gap = (width[row[i - 1]] + width[row[i]]) / 2 + NODE_GAP if i else 0.0
        left[i] = target[i] if i == 0 else max(target[i], left[i - 1] + gap)
    for i in range(k - 1, -1, -1):
        gap = (width[row[i + 1]] + width[row[i]]) / 2 + NODE_GAP if i < k - 1 else 0.0
        right[i] = target[i] if i == k - 1 else min(target[i], right[i + 1] - gap)
    for i, v in enumerate(row):
        x[v] = (left[i] + right[i]) / 2


# -- the page -----------------------------------------------------------------------------------------
def graph_document(model: Model, profile: Any = None) -> dict:
    """The data the page draws: the model's summary and every graph, laid out (a JSON-ready dict)."""
    from onyx.debug.profile import load_trace, node_times
    from onyx.shape_inference import infer_shapes

    times = node_times(load_trace(profile)) if profile is not None else None
    model = model.clone()  # shape inference writes types onto the model: the caller's stays as it was
    infer_shapes(model)
    doc = _Document(times)
    doc.add_graph(model.graph, model.graph.name or "main", None)
    g = model.graph
    inits = g.initializers.values()
    return {
        "model": {
            "graph": g.name or "",
            "producer": " ".join(p for p in (model.producer_name, model.producer_version) if p),
            "opsets": ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in model.opsets.items()),
            "nodes": len(g.nodes),
            "all_nodes": sum(1 for _ in g.walk()),
            "initializers": len(g.initializers),
            "parameters": int(sum(np.prod(getattr(v.const, "dims", ()), dtype=np.int64) for v in inits)),
        },
        "profile": None
        if times is None
        else {
            "total_us": round(sum(t.total_us for t in times.values()), 2),
            "nodes": len(times),
            "matched": doc.matched,
        },
        "graphs": doc.graphs,
    }


def _asset(name: str) -> str:
    return (resources.files("onyx.debug") / "view_assets" / name).read_text(encoding="utf-8")


def render_html(model: Model | str | os.PathLike, profile: Any = None) -> str:
    """One self-contained HTML page showing ``model`` (a Model or a path); ``profile`` (a Chrome trace:
    path or parsed JSON, from onyx's or onnxruntime's enable_profiling) colours nodes by time."""
    if isinstance(model, str | os.PathLike):
        from onyx.model_io import load

        model = load(model)
    if not isinstance(model, Model):
        raise InvalidArgument(f"render_html expects an onyx Model or a path, got {type(model).__name__}")
    doc = graph_document(model, profile)
    data = json.dumps(doc, separators=(",", ":")).replace("<", "\\u003c")  # no '</script>' inside
    title = html.escape(f"{doc['model']['graph'] or 'model'}: onyx view")
    page = _asset("view.html")
    return (
        page.replace("{{CSP}}", CSP)
        .replace("{{TITLE}}", title)
        .replace("{{CSS}}", _asset("view.css"))
        .replace("{{JS}}", _asset("view.js"))
        .replace("{{DATA}}", data)
    )
