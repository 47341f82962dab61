"""onyx view: the page's data and layout, and the page itself in a real headless browser (Debian's chromium
driven by playwright): a BERT-base-deep graph drawn whole, no request leaving the page, search, subgraphs."""

from __future__ import annotations

import json
import os
import re
import warnings

import numpy as np
import pytest

import onyx
from onyx.cli import main
from onyx.debug.view import CSP, graph_document, layered_layout, render_html
from onyx.errors import InvalidArgument, NoSuchFile
from onyx.ir.builder import GraphBuilder

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def _small_model():
    """x -> MatMul(w) -> Add(b) -> Relu -> y, with a residual Add: initializers, a fork and a join."""
    rng = np.random.default_rng(0)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["batch", 8])
    w = b.initializer("w", rng.standard_normal((8, 8)).astype(np.float32))
    bias = b.initializer("bias", np.arange(8, dtype=np.float32))
    mm = b.op("MatMul", x, w, name="mm")
    add = b.op("Add", mm, bias, name="add_bias")
    relu = b.op("Relu", add, name="relu")
    b.output(b.op("Add", relu, x, name="residual"), "y")
    return b.model()


def _if_model():
    """y = If(cond) then x + 1 else x - 1: a node with two subgraphs reading an outer value."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [3])
    cond = b.input("cond", np.bool_, [])
    then = b.subgraph("then")
    then.output(then.op("Add", x, then.const(np.float32(1)), name="then_add"), "t_out")
    other = b.subgraph("else")
    other.output(other.op("Sub", x, other.const(np.float32(1)), name="else_sub"), "e_out")
    b.output(b.op("If", cond, then_branch=then.graph, else_branch=other.graph, name="choose"), "y")
    return b.model()


# -- the data and the layout (no browser) ------------------------------------------------------------------
def test_document_boxes_edges_and_initializers():
    doc = graph_document(_small_model())
    g = doc["graphs"][0]
    nodes = [b for b in g["boxes"] if b["k"] == "node"]
    assert [b["name"] for b in nodes] == ["mm", "add_bias", "relu", "residual"]
    assert [b["name"] for b in g["boxes"] if b["k"] == "in"] == ["x"]
    assert [b["name"] for b in g["boxes"] if b["k"] == "out"] == ["y"]
    # initializers are summarised (name, type, shape, first values), never drawn
    inits = {t["name"]: t for t in g["initializers"]}
    assert set(inits) == {"w", "bias"}
    assert inits["bias"]["dtype"] == "float" and inits["bias"]["dims"] == [8]
    assert inits["bias"]["values"].startswith("[0., 1., 2.") and inits["bias"]["values"].endswith("...]")
    assert all(b["name"] not in inits for b in g["boxes"])
    mm = nodes[0]
    assert mm["ins"] == [["x", "float[batch,8]", False], ["w", "float[8,8]", True]]
    # edges carry shape inference's symbolic shapes, one label per value
    labels = [e.get("l") for e in g["edges"]]
    assert "float[batch,8]" in labels
    pairs = {(g["boxes"][e["s"]]["name"], g["boxes"][e["t"]]["name"]) for e in g["edges"]}
    assert pairs == {
        ("x", "mm"),
        ("mm", "add_bias"),
        ("add_bias", "relu"),
        ("relu", "residual"),
        ("x", "residual"),
        ("residual", "y"),
    }
    assert doc["model"]["nodes"] == 4 and doc["model"]["parameters"] == 72


def test_document_leaves_the_model_untouched():
    m = _small_model()
    graph_document(m)
    assert all(n.outputs[0].type is None for n in m.graph.nodes[:-1])  # no types written onto it


def test_layout_layers_go_down_and_boxes_never_overlap():
    # a diamond with a long edge (0 -> 4 skips three layers) and a late source (5 feeds 4 only)
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (5, 4), (1, 3)]
    widths = [100.0] * 6
    xs, layers, chains = layered_layout(6, edges, widths)
    for a, b in edges:
        assert layers[b] > layers[a]
    assert layers[5] == layers[4] - 1  # a source sits just above its consumer, not on the top row
    assert len(chains[(0, 4)]) == layers[4] - layers[0] - 1  # one point per crossed layer
    for layer in set(layers):
        row = sorted(x for x, lay in zip(xs, layers) if lay == layer)
        assert all(b - a >= 100 for a, b in zip(row, row[1:]))


def test_subgraphs_are_graphs_of_their_own():
    doc = graph_document(_if_model())
    main_g, *subs = doc["graphs"]
    (node,) = [b for b in main_g["boxes"] if b["k"] == "node"]
    assert [s[0] for s in node["subs"]] == ["then_branch", "else_branch"]
    then = doc["graphs"][node["subs"][0][1]]
    assert then["parent"] == 0 and [b["name"] for b in then["boxes"] if b["k"] == "node"] == ["then_add"]
    # the outer value the body reads is drawn as an outer-scope box feeding it
    assert [b["name"] for b in then["boxes"] if b["k"] == "outer"] == ["x"]
    assert doc["model"]["all_nodes"] == 3


def test_profile_times_join_the_nodes(tmp_path):
    path = tmp_path / "m.onnx"
    onyx.save(_small_model(), str(path))
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "p")
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL  # the file's own nodes
    s = onyx.InferenceSession(str(path), so)
    for _ in range(3):
        s.run(None, {"x": np.ones((2, 8), np.float32)})
    trace = s.end_profiling()
    doc = graph_document(_small_model(), trace)
    nodes = [b for b in doc["graphs"][0]["boxes"] if b["k"] == "node"]
    assert all(b["calls"] == 3 and b["us"] >= 0 and b["total"] >= b["us"] for b in nodes)
    assert doc["profile"]["matched"] == 4 and doc["profile"]["nodes"] == 4


def test_onnxruntime_trace_joins_the_nodes_too(tmp_path):
    import onnxruntime as ort

    path = tmp_path / "m.onnx"
    onyx.save(_small_model(), str(path))
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "ort")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.ones((2, 8), np.float32)})
    doc = graph_document(_small_model(), s.end_profiling())
    assert doc["profile"]["matched"] == 4
    assert all(b["calls"] == 1 for b in doc["graphs"][0]["boxes"] if b["k"] == "node")


def test_page_is_self_contained():
    page = render_html(_small_model())
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert "default-src 'none'" in CSP
    # nothing that could fetch: no external script/style/link/img, no URL but the SVG namespace
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", page)
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) <= {"http://www.w3.org/2000/svg"}
    data = re.search(r'<script type="application/json" id="model-data">(.*?)</script>', page, re.S).group(1)
    assert json.loads(data)["model"]["nodes"] == 4


def test_names_cannot_break_out_of_the_page():
    m = _small_model()
    m.graph.nodes[0].name = "</script><script>alert(1)</script>"
    page = render_html(m)
    assert page.count("</script>") == 2  # the data's and the code's own closing tags, nothing injected


def test_bad_inputs(tmp_path):
    with pytest.raises(InvalidArgument, match="onyx Model or a path"):
        render_html(42)  # type: ignore[arg-type]
    with pytest.raises(NoSuchFile):
        render_html(str(tmp_path / "missing.onnx"))
    with pytest.raises(NoSuchFile, match="profile"):
        render_html(_small_model(), profile=str(tmp_path / "no_trace.json"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InvalidArgument, match="not JSON"):
        render_html(_small_model(), profile=str(tmp_path / "bad.json"))
    with pytest.raises(InvalidArgument, match="trace events"):
        render_html(_small_model(), profile={"traceEvents": 3})


def test_cli_writes_the_page_and_reports_bad_input(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onyx.save(_small_model(), str(path))
    assert main(["view", str(path), "-o", str(tmp_path / "g.html")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert "Content-Security-Policy" in (tmp_path / "g.html").read_text()
    assert main(["view", str(path)]) == 0 and (tmp_path / "m.html").exists()  # default: beside the model
    assert main(["view", str(tmp_path / "nope.onnx")]) == 2
    assert "NoSuchFile" in capsys.readouterr().err
    assert main(["view", str(path), "-o", str(tmp_path / "no" / "dir" / "g.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "corrupt.onnx").write_bytes(b"\x0a\xff\xff\xff")
    assert main(["view", str(tmp_path / "corrupt.onnx")]) == 2
    assert "InvalidProtobuf" in capsys.readouterr().err


# -- the page in a browser ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no browser: {CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright  # the test extra has it; browsers are never downloaded

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield b
        b.close()


def _open(browser, path):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"file://{path}")
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    return page, requests, errors


def _bert(tmp_path, layers: int = 12):
    """BERT with BERT-base's depth (12 layers: ~1,400 nodes unoptimized), random weights from a config,
    narrow (hidden 64) so that exporting takes seconds: the graph's size does not depend on the width."""
    import torch

    from tests.models.exporters import make_bert

    torch.manual_seed(0)
    module = make_bert(hidden_size=64, num_hidden_layers=layers, num_attention_heads=4).eval()
    ids = torch.ones(2, 8, dtype=torch.long)
    path = tmp_path / "bert.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (ids, ids),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state", "pooler_output"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
            opset_version=17,
            dynamo=False,
        )
    return path


def test_bert_base_deep_graph_in_the_browser(browser, tmp_path):
    path = _bert(tmp_path)
    model = onyx.load(str(path))
    names = [n.name for n in model.graph.nodes]
    assert len(names) > 1300 and all(names) and len(set(names)) == len(names)
    html_path = tmp_path / "bert.html"
    html_path.write_text(render_html(model), encoding="utf-8")
    page, requests, errors = _open(browser, html_path)
    try:
        # every node is drawn, each with its name
        assert page.locator("g.node").count() == len(names)
        drawn = page.eval_on_selector_all("g.node", "els => els.map(e => e.dataset.name)")
        assert sorted(drawn) == sorted(names)
        # search: the node is highlighted, selected, scrolled into view, its details shown
        target = next(n for n in model.graph.nodes if n.op_type == "Softmax" and "layer.7" in n.name)
        page.fill("#search", target.name)
        page.press("#search", "Enter")
        index = names.index(target.name)
        el = page.locator(f"g.node[data-name='{target.name}']")
        assert el.count() == 1
        classes = el.get_attribute("class").split()
        assert "hit" in classes and "sel" in classes
        box = el.bounding_box()
        assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= 1280
        assert 0 <= box["y"] and box["y"] + box["height"] <= 800
        assert target.name in page.inner_text("#details") and "Softmax" in page.inner_text("#details")
        assert page.locator(f"g.node#b{index + 2}").count() == 1  # two graph inputs come first
        # the initializers' list fills when opened
        page.click("#weights summary")
        assert page.locator("#weights-body tr").count() == len(model.graph.initializers)
        assert errors == []
    finally:
        page.close()
    assert requests == [f"file://{html_path}"]  # nothing but the file itself


def test_subgraph_opens_and_closes_in_the_browser(browser, tmp_path):
    html_path = tmp_path / "if.html"
    html_path.write_text(render_html(_if_model()), encoding="utf-8")
    page, requests, errors = _open(browser, html_path)
    try:
        assert page.locator("g.node").count() == 1
        page.click("g.node[data-name='choose']")
        page.click("#details button:has-text('open else_branch')")
        assert page.eval_on_selector_all("g.node", "els => els.map(e => e.dataset.name)") == ["else_sub"]
        assert "choose / else_branch" in page.inner_text("#crumbs")
        page.click("#crumbs a")  # back to the main graph
        assert page.eval_on_selector_all("g.node", "els => els.map(e => e.dataset.name)") == ["choose"]
        # searching for a node of a body opens that body
        page.fill("#search", "then_add")
        page.press("#search", "Enter")
        assert page.eval_on_selector_all("g.node.sel", "els => els.map(e => e.dataset.name)") == ["then_add"]
        assert errors == []
    finally:
        page.close()
    assert requests == [f"file://{html_path}"]


def test_docs_screenshot_stays_small():
    png = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "view.png")
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(png) < 300_000
