// Draws history.html's small multiples from the JSON the page carries: every value and axis
// label comes formatted (the terminal's formatter); this only places them.
"use strict";
window.addEventListener("error", e => document.body.setAttribute("data-errors", String(e.message)));
(function () {
  const started = performance.now();
  const data = JSON.parse(document.getElementById("data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const W = 380, H = 190, R = 8, T = 8, B = 34;
  const STATE = { confirmed: "#d62728", pending: "#ff7f0e", accepted: "#7f7f7f", machine: "#7f7f7f" };
  const n = Math.max(data.labs.length - 1, 1);
  const tip = document.getElementById("tip");

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function text(parent, x, y, s, anchor) {
    const t = el("text", { x: x, y: y, "text-anchor": anchor || "start" }, parent);
    t.textContent = s;
    return t;
  }

  function chart(c) {
    const fig = document.createElement("figure");
    fig.id = c.id;
    fig.dataset.point = c.point;
    fig.dataset.metric = c.metric;
    if (c.changes.some(ch => ch[1] !== "accepted" && ch[1] !== "machine")) fig.classList.add("moved");
    const cap = document.createElement("figcaption");
    fig.appendChild(cap);
    const svg = el("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" }, fig);
    // The left margin fits the longest axis label (about 6 px a character at 10 px).
    const L = Math.max(44, 10 + 6 * Math.max(0, ...c.ticks.map(t => t[1].length)));
    const px = i => L + (W - L - R) * (data.labs.length > 1 ? i / n : 0.5);
    const lo = c.ticks.length ? c.ticks[0][0] : 0, hi = c.ticks.length ? c.ticks[c.ticks.length - 1][0] : 1;
    const py = v => T + (H - T - B) * (1 - (v - lo) / ((hi - lo) || 1));
    for (const [v, label] of c.ticks) {
      el("line", { x1: L, x2: W - R, y1: py(v), y2: py(v), stroke: "#e3e3e3" }, svg);
      text(svg, L - 4, py(v) + 3, label, "end");
    }
    for (const [i, label] of data.xticks) {
      el("line", { x1: px(i), x2: px(i), y1: H - B, y2: H - B + 4, stroke: "#999" }, svg);
      const t = text(svg, px(i), H - B + 14, label, "middle");
      const title = el("title", {}, t);
      title.textContent = data.labs[i][1];
    }
    text(svg, (L + W - R) / 2, H - 4, "commit (in the order the labs ran)", "middle");
    el("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#999" }, svg);
    for (const [at, state] of c.changes) {
      const x = px(c.x[at]);
      el("line", { x1: x, x2: x, y1: T, y2: H - B, stroke: STATE[state], "stroke-width": 1.5 }, svg);
    }
    for (const [a, b, centre] of c.levels) {
      el("line", {
        x1: px(c.x[a]), x2: px(c.x[b]), y1: py(centre), y2: py(centre),
        stroke: "#888", "stroke-dasharray": "4 3", "stroke-width": 1.5,
      }, svg);
    }
    const pts = c.x.map((x, k) => px(x).toFixed(1) + "," + py(c.y[k]).toFixed(1)).join(" ");
    el("polyline", { points: pts, fill: "none", stroke: "#1f77b4", "stroke-width": 1.2 }, svg);
    if (c.x.length <= 200) {
      const g = el("g", { fill: "#1f77b4" }, svg);
      c.x.forEach((x, k) => el("circle", { cx: px(x), cy: py(c.y[k]), r: 2 }, g));
    }
    const mark = el("circle", { r: 4, fill: "none", stroke: "#000", visibility: "hidden" }, svg);
    // The point nearest the pointer along x: its lab on hover, its report on a click.
    const nearest = ev => {
      const box = svg.getBoundingClientRect();
      const x = (ev.clientX - box.left) * W / box.width;
      let best = -1, d = Infinity;
      c.x.forEach((lab, k) => { const e = Math.abs(px(lab) - x); if (e < d) { d = e; best = k; } });
      return best;
    };
    svg.addEventListener("mousemove", ev => {
      const k = nearest(ev);
      if (k < 0) return;
      const lab = data.labs[c.x[k]];
      mark.setAttribute("cx", px(c.x[k]));
      mark.setAttribute("cy", py(c.y[k]));
      mark.setAttribute("visibility", "visible");
      tip.textContent = "";
      for (const line of [c.v[k] + "  (" + c.metric + ")", "commit " + lab[0] + ", " + lab[1],
        "branch " + lab[2] + (lab[3] ? ", " + lab[3] : ""), "click: the lab's report"]) {
        const d = document.createElement("div");
        d.textContent = line;
        tip.appendChild(d);
      }
      tip.style.left = (ev.clientX + 12) + "px";
      tip.style.top = (ev.clientY + 12) + "px";
      tip.hidden = false;
    });
    svg.addEventListener("mouseleave", () => { tip.hidden = true; mark.setAttribute("visibility", "hidden"); });
    // The link is a path the page made safe; one that still names a scheme is not followed.
    const follow = link => { if (!/^[a-z][a-z0-9+.-]*:/i.test(link)) window.location.href = link; };
    svg.addEventListener("click", ev => { const k = nearest(ev); if (k >= 0) follow(data.labs[c.x[k]][4]); });
    return fig;
  }

  const figures = data.charts.map(chart);
  const groups = document.getElementById("groups");
  // Each chart is named by what its group does not say: the metric, or the load point.
  function group(by) {
    groups.textContent = "";
    data.charts.forEach((c, i) => {
      figures[i].firstChild.textContent = by === "point" ? c.metric + " (" + c.unit + ")" : c.point + " (" + c.unit + ")";
    });
    const seen = new Map();
    for (const f of figures) {
      const name = f.dataset[by];
      if (!seen.has(name)) {
        const h = document.createElement("h3");
        h.textContent = name;
        const grid = document.createElement("div");
        grid.className = "grid";
        groups.appendChild(h);
        groups.appendChild(grid);
        seen.set(name, grid);
      }
      seen.get(name).appendChild(f);
    }
  }
  group("point");
  for (const r of document.querySelectorAll("input[name=by]")) r.addEventListener("change", () => group(r.value));
  document.body.setAttribute("data-charts-drawn", String(figures.length));
  document.body.setAttribute("data-draw-ms", String(Math.round(performance.now() - started)));
})();
