// onyx view: draws the laid-out graphs that onyx.debug.view embeds as JSON. No network, no libraries.
"use strict";
(function () {
  const DOC = JSON.parse(document.getElementById("model-data").textContent);
  const svg = document.getElementById("graph");
  const scene = document.getElementById("scene");
  const details = document.getElementById("details");
  const search = document.getElementById("search");
  const hitsLine = document.getElementById("hits");
  const weightsBody = document.getElementById("weights-body");
  const weights = document.getElementById("weights");
  let graph = null; // the graph shown
  let vb = { x: 0, y: 0, w: 1, h: 1 };
  let bounds = { x0: 0, y0: 0, x1: 1, y1: 1 };
  let hits = [];
  let hitAt = -1;
  let selected = null;
  let maxUs = 0;

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const clip = (s, n) => (s.length <= n ? s : s.slice(0, n - 1) + "\u2026");
  const clipLeft = (s, n) => (s.length <= n ? s : "\u2026" + s.slice(s.length - n + 1)); // names end with what they are
  const fmtUs = (us) => (us >= 1000 ? (us / 1000).toFixed(2) + " ms" : us.toFixed(1) + " us");

  function hue(op) {
    let h = 0;
    for (let i = 0; i < op.length; i++) h = (h * 31 + op.charCodeAt(i)) % 360;
    return h;
  }

  function fill(b) {
    if (DOC.profile) {
      if (b.us === undefined) return "#ffffff";
      const t = maxUs > 0 ? Math.sqrt(b.total / maxUs) : 0; // sqrt: small nodes stay visible
      const g = Math.round(245 - 170 * t), bl = Math.round(235 - 190 * t);
      return "rgb(255," + g + "," + bl + ")";
    }
    return "hsl(" + hue(b.op) + ",55%,88%)";
  }

  function edgePath(p) {
    let d = "M" + p[0][0] + "," + p[0][1];
    for (let i = 1; i < p.length; i++) {
      const a = p[i - 1], b = p[i], my = (a[1] + b[1]) / 2;
      d += a[0] === b[0] ? "L" + b[0] + "," + b[1] : "C" + a[0] + "," + my + " " + b[0] + "," + my + " " + b[0] + "," + b[1];
    }
    return d;
  }

  function draw(gid) {
    graph = DOC.graphs[gid];
    const h = graph.h;
    maxUs = 0;
    for (const b of graph.boxes) if (b.total !== undefined && b.total > maxUs) maxUs = b.total;
    const parts = [];
    for (const e of graph.edges) {
      parts.push('<path class="edge" marker-end="url(#arrow)" d="' + edgePath(e.p) + '"></path>');
      if (e.l) {
        const a = e.p[0], b = e.p[1];
        parts.push('<text class="elbl" x="' + (a[0] + 4) + '" y="' + (a[1] + Math.min(16, (b[1] - a[1]) / 2 + 4)) + '">' + esc(clip(e.l, 48)) + "</text>");
      }
    }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    graph.boxes.forEach((b, i) => {
      const left = b.x - b.w / 2;
      x0 = Math.min(x0, left); x1 = Math.max(x1, left + b.w); y0 = Math.min(y0, b.y); y1 = Math.max(y1, b.y + h);
      const tr = ' transform="translate(' + left + "," + b.y + ')"';
      if (b.k === "node") {
        let inner = "<title>" + esc(b.op + " " + b.name + (b.us !== undefined ? " \u00b7 " + fmtUs(b.us) + " x" + b.calls : "")) + "</title>" +
          '<rect width="' + b.w + '" height="' + h + '" rx="5" style="fill:' + fill(b) + '"></rect>' +
          '<text class="op" x="' + b.w / 2 + '" y="15">' + esc(b.op) + "</text>" +
          '<text class="nm" x="' + b.w / 2 + '" y="30">' + esc(clipLeft(b.name, 32)) + "</text>";
        if (b.us !== undefined) inner += '<text class="tm" x="' + b.w / 2 + '" y="44">' + fmtUs(b.us) + " x" + b.calls + "</text>";
        parts.push('<g class="node" id="b' + i + '" data-i="' + i + '" data-name="' + esc(b.name) + '" data-op="' + esc(b.op) + '"' + tr + ">" + inner + "</g>");
      } else {
        const kind = b.k === "in" ? "input" : b.k === "out" ? "output" : "outer";
        parts.push('<g class="io ' + b.k + '" id="b' + i + '" data-i="' + i + '"' + tr + '><rect width="' + b.w + '" height="' + h + '" rx="14"></rect>' +
          '<text class="op" x="' + b.w / 2 + '" y="15">' + esc(kind + ": " + clip(b.name, 28)) + "</text>" +
          '<text class="nm" x="' + b.w / 2 + '" y="30">' + esc(clip(b.label, 34)) + "</text></g>");
      }
    });
    scene.innerHTML = parts.join("");
    bounds = { x0: x0 - 40, y0: y0 - 40, x1: x1 + 40, y1: y1 + 40 };
    if (!isFinite(x0)) bounds = { x0: 0, y0: 0, x1: 100, y1: 100 };
    drawCrumbs();
    drawSummary();
    weightsBody.innerHTML = "";
    weights.open = false;
    details.innerHTML = '<p class="hint">Click a node to see its attributes, inputs and outputs.</p>';
    selected = null;
    hits = [];
    hitAt = -1;
    if (search.value) find(search.value, false);
    top();
  }

  // -- panel --------------------------------------------------------------------------------------------
  function drawCrumbs() {
    const chain = [];
    for (let g = graph; g; g = g.parent === null ? null : DOC.graphs[g.parent]) chain.unshift(g);
    document.getElementById("crumbs").innerHTML = chain
      .map((g, k) => (k === chain.length - 1 ? "<b>" + esc(g.title) + "</b>" : '<a data-g="' + g.id + '">' + esc(g.title) + "</a>"))
      .join(" / ");
  }

  function drawSummary() {
    const m = DOC.model, n = graph.boxes.filter((b) => b.k === "node").length;
    let s = n + " nodes" + (graph.id === 0 && m.all_nodes !== m.nodes ? " (" + m.all_nodes + " with subgraphs)" : "") +
      ", " + graph.initializers.length + " initializers";
    if (graph.id === 0) s += ", " + m.parameters.toLocaleString() + " parameters" + (m.opsets ? " \u00b7 opsets: " + esc(m.opsets) : "") + (m.producer ? " \u00b7 " + esc(m.producer) : "");
    if (DOC.profile) s += "<br>profile: " + fmtUs(DOC.profile.total_us) + " over " + DOC.profile.nodes + " nodes, " + DOC.profile.matched + " matched here";
    document.getElementById("summary").innerHTML = s;
  }

  function row(cells) {
    return "<tr>" + cells.map((c) => "<td>" + c + "</td>").join("") + "</tr>";
  }

  function showDetails(i) {
    const b = graph.boxes[i];
    if (selected !== null) { const old = document.getElementById("b" + selected); if (old) old.classList.remove("sel"); }
    selected = i;
    const el = document.getElementById("b" + i);
    if (el) el.classList.add("sel");
    if (b.k !== "node") {
      details.innerHTML = "<h2>" + esc(b.k === "in" ? "graph input" : b.k === "out" ? "graph output" : "outer-scope value") + "</h2><table>" +
        row(["name", esc(b.name)]) + row(["type", esc(b.label)]) + "</table>";
      return;
    }
    const inits = {};
    for (const t of graph.initializers) inits[t.name] = t;
    let s = "<h2>" + esc((b.domain ? b.domain + "::" : "") + b.op) + "</h2><div>" + esc(b.name || "(no name)") + "</div>";
    if (b.us !== undefined) {
      const share = DOC.profile && DOC.profile.total_us ? (100 * b.total / DOC.profile.total_us).toFixed(1) + "%" : "";
      s += "<h3>profile</h3><table>" + row(["mean", fmtUs(b.us)]) + row(["calls", b.calls]) + row(["total", fmtUs(b.total) + " " + share]) + "</table>";
    } else if (DOC.profile) s += '<h3>profile</h3><p class="hint">not in the profile: folded away by the profiled session, or never run</p>';
    if (b.attrs.length) s += "<h3>attributes</h3><table>" + b.attrs.map((a) => row([esc(a[0]), esc(a[1])])).join("") + "</table>";
    s += "<h3>inputs</h3><table>" + b.ins.map((v, k) => {
      if (!v[0]) return row(["#" + k, '<span class="hint">(absent)</span>']);
      const t = inits[v[0]];
      const what = t ? '<span class="tag">initializer</span> ' + esc(t.dtype + "[" + t.dims.join(",") + "] " + t.values) : esc(v[1]);
      return row([esc(v[0]), what]);
    }).join("") + "</table>";
    s += "<h3>outputs</h3><table>" + b.outs.map((v) => row([esc(v[0]), esc(v[1])])).join("") + "</table>";
    if (b.subs) s += "<h3>subgraphs</h3>" + b.subs.map((x) => '<button data-g="' + x[1] + '">open ' + esc(x[0]) + "</button> ").join("");
    details.innerHTML = s;
  }

  function drawWeights() {
    weightsBody.innerHTML = graph.initializers.length
      ? "<table>" + graph.initializers.map((t) => row([esc(t.name), esc(t.dtype + "[" + t.dims.join(",") + "]"), esc(t.values)])).join("") + "</table>"
      : '<p class="hint">none</p>';
  }

  // -- view box -----------------------------------------------------------------------------------------
  function apply() {
    svg.setAttribute("viewBox", vb.x + " " + vb.y + " " + vb.w + " " + vb.h);
    svg.classList.toggle("far", vb.w / Math.max(svg.clientWidth, 1) > 2.2);
  }

  function size() {
    return { w: Math.max(svg.clientWidth, 100), h: Math.max(svg.clientHeight, 100) };
  }

  function top() { // 100%, the graph's inputs at the top centre (the whole width when it fits)
    const s = size();
    let cx = (bounds.x0 + bounds.x1) / 2;
    if (bounds.x1 - bounds.x0 > s.w) {
      const firsts = graph.boxes.filter((b) => b.k === "in" || b.k === "outer");
      const row = firsts.length ? firsts : graph.boxes.filter((b) => b.y === bounds.y0 + 40);
      if (row.length) cx = row.reduce((t, b) => t + b.x, 0) / row.length;
    }
    vb = { x: cx - s.w / 2, y: bounds.y0, w: s.w, h: s.h };
    apply();
  }

  function fit() {
    const s = size();
    const k = Math.max((bounds.x1 - bounds.x0) / s.w, (bounds.y1 - bounds.y0) / s.h, 0.2);
    vb = { w: s.w * k, h: s.h * k, x: 0, y: 0 };
    vb.x = (bounds.x0 + bounds.x1) / 2 - vb.w / 2;
    vb.y = (bounds.y0 + bounds.y1) / 2 - vb.h / 2;
    apply();
  }

  function zoom(factor, px, py) {
    const s = size();
    const fx = px === undefined ? 0.5 : px / s.w, fy = py === undefined ? 0.5 : py / s.h;
    const ax = vb.x + fx * vb.w, ay = vb.y + fy * vb.h;
    vb.w *= factor; vb.h *= factor;
    vb.x = ax - fx * vb.w; vb.y = ay - fy * vb.h;
    apply();
  }

  function centreOn(i) {
    const b = graph.boxes[i], s = size();
    if (vb.w / s.w > 1.5) { vb.w = s.w; vb.h = s.h; }
    vb.x = b.x - vb.w / 2;
    vb.y = b.y + graph.h / 2 - vb.h / 2;
    apply();
  }

  // -- search ---------------------------------------------------------------------------------------------
  function find(q, jump) {
    for (const i of hits) { const el = document.getElementById("b" + i); if (el) el.classList.remove("hit"); }
    hits = [];
    hitAt = -1;
    q = q.trim().toLowerCase();
    if (!q) { hitsLine.textContent = ""; return; }
    let where = graph;
    const match = (g) => g.boxes.map((b, i) => (b.k === "node" && (b.name.toLowerCase().includes(q) || b.op.toLowerCase().includes(q)) ? i : -1)).filter((i) => i >= 0);
    let found = match(graph);
    if (!found.length && jump) { // not here: the first graph that has it
      for (const g of DOC.graphs) { const f = match(g); if (f.length) { where = g; found = f; break; } }
      if (where !== graph) { draw(where.id); return find(q, true); }
    }
    // an exact name first, then the rest in drawing order
    found.sort((a, b) => (graph.boxes[b].name.toLowerCase() === q) - (graph.boxes[a].name.toLowerCase() === q) || a - b);
    hits = found;
    for (const i of hits) document.getElementById("b" + i).classList.add("hit");
    hitsLine.textContent = hits.length ? hits.length + " match" + (hits.length > 1 ? "es" : "") + " (Enter: next)" : "no match";
    if (jump && hits.length) next();
  }

  function next() {
    if (!hits.length) return;
    hitAt = (hitAt + 1) % hits.length;
    centreOn(hits[hitAt]);
    showDetails(hits[hitAt]);
  }

  // -- events ----------------------------------------------------------------------------------------------
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    if (e.target.closest && e.target.closest(".node, .io")) return;
    drag = { x: e.clientX, y: e.clientY, vx: vb.x, vy: vb.y };
    svg.classList.add("dragging");
    svg.setPointerCapture(e.pointerId);
  });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const k = vb.w / size().w;
    vb.x = drag.vx - (e.clientX - drag.x) * k;
    vb.y = drag.vy - (e.clientY - drag.y) * k;
    apply();
  });
  const endDrag = () => { drag = null; svg.classList.remove("dragging"); };
  svg.addEventListener("pointerup", endDrag);
  svg.addEventListener("pointercancel", endDrag);
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    if (e.ctrlKey || e.metaKey) {
      zoom(Math.exp(e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    } else {
      const k = vb.w / size().w;
      vb.x += e.deltaX * k; vb.y += e.deltaY * k;
      apply();
    }
  }, { passive: false });
  scene.addEventListener("click", (e) => {
    const g = e.target.closest(".node, .io");
    if (g) showDetails(+g.dataset.i);
  });
  scene.addEventListener("dblclick", (e) => {
    const g = e.target.closest(".node");
    const b = g && graph.boxes[+g.dataset.i];
    if (b && b.subs) draw(b.subs[0][1]);
  });
  document.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest("[data-g]");
    if (a) draw(+a.dataset.g);
  });
  document.getElementById("zoom-in").addEventListener("click", () => zoom(1 / 1.4));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(1.4));
  document.getElementById("zoom-fit").addEventListener("click", fit);
  document.getElementById("zoom-top").addEventListener("click", top);
  search.addEventListener("input", () => find(search.value, false));
  search.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    if (hitAt < 0) find(search.value, true); else next();
  });
  weights.addEventListener("toggle", () => { if (weights.open && !weightsBody.innerHTML) drawWeights(); });
  window.addEventListener("resize", () => { const s = size(); vb.h = vb.w * s.h / s.w; apply(); });

  draw(0);
  document.body.dataset.ready = "1"; // for tests and scripts: the first graph is drawn
})();
