// loadlab plot page: draws the charts from the JSON in #data on canvases. Time charts zoom
// together: drag across one to zoom in, double-click (or "Reset zoom") to go back. A live page
// calls window.loadlabCharts with new data every second; the zoom stays.
"use strict";
(function () {
  const errors = [];
  window.addEventListener("error", (e) => { errors.push(String(e.message)); document.body.dataset.errors = errors.join(" | "); });
  let zoomed = null;
  window.loadlabCharts = function (D) {
  const PAL = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d"];
  const ERR = "#d62728";
  const M = { l: 64, r: 16, t: 12, b: 36 };
  function statusColor(c, i) {
    const sets = { 2: ["#2ca02c", "#98df8a", "#1b7a1b"], 3: ["#1f77b4", "#aec7e8", "#0d4a78"], 4: ["#ff7f0e", "#ffbb78", "#b35806"], 5: ["#d62728", "#ff9896", "#8b0000"] };
    const s = sets[Math.floor(c / 100)];
    return s ? s[i % 3] : "#7f7f7f";
  }
  function fmt(v) {
    if (v === 0) return "0";
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return +(v / 1e3).toFixed(2) + "k";
    return String(+v.toFixed(3));
  }
  function nice(a, b) {
    const span = Math.max(b - a, 1e-9), mag = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= 8);
    const out = [];
    for (let v = Math.ceil(a / step) * step; v <= b + step * 1e-6; v += step) out.push([v, fmt(Math.abs(v) < step * 1e-6 ? 0 : v)]);
    return out;
  }
  const lin = (a, b) => ({ f: (v) => (v - a) / (b - a), ticks: () => nice(a, b) });
  const log = (a, b) => ({
    f: (v) => (Math.log(Math.max(v, a)) - Math.log(a)) / (Math.log(b) - Math.log(a)),
    ticks: () => { const o = []; for (let d = Math.pow(10, Math.floor(Math.log10(a))); d <= b * 1.0001; d *= 10) for (const m of [1, 2, 5]) { const v = d * m; if (v >= a * 0.9999 && v <= b * 1.0001) o.push([v, fmt(v)]); } return o; },
  });
  const nines = (p) => -Math.log10(Math.max(1 - p / 100, 1e-7));
  const pct = (maxN) => ({
    f: (p) => nines(p) / maxN,
    ticks: () => ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"].slice(0, Math.floor(maxN) + 1).map((l, k) => [100 - 100 / Math.pow(10, k), l]),
  });

  function draw(cv, spec) {
    const dpr = window.devicePixelRatio || 1, w = cv.clientWidth, h = cv.clientHeight;
    cv.width = w * dpr; cv.height = h * dpr;
    const g = cv.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, w, h);
    const pw = w - M.l - M.r, ph = h - M.t - M.b;
    const X = (v) => M.l + Math.min(1, Math.max(0, spec.x.f(v))) * pw;
    const Y = (v) => M.t + (1 - Math.min(1, Math.max(0, spec.y.f(v)))) * ph;
    g.font = "12px sans-serif"; g.strokeStyle = "#e3e3e3"; g.fillStyle = "#333"; g.lineWidth = 1;
    g.textAlign = "right";
    for (const [v, l] of spec.y.ticks()) { const y = Y(v); g.beginPath(); g.moveTo(M.l, y); g.lineTo(M.l + pw, y); g.stroke(); g.fillText(l, M.l - 6, y + 4); }
    g.textAlign = "center";
    for (const [v, l] of spec.x.ticks()) {
      const x = X(v); if (x < M.l - 0.5 || x > M.l + pw + 0.5) continue;
      g.beginPath(); g.moveTo(x, M.t); g.lineTo(x, M.t + ph); g.stroke();
      // A label centred on the right edge would be cut off: end it at the edge instead.
      const half = g.measureText(l).width / 2;
      g.textAlign = x + half > w ? "right" : "center"; g.fillText(l, x + half > w ? w - 1 : x, M.t + ph + 16);
    }
    g.textAlign = "center";
    g.fillText(spec.xlabel, M.l + pw / 2, h - 4);
    g.save(); g.translate(14, M.t + ph / 2); g.rotate(-Math.PI / 2); g.fillText(spec.ylabel, 0, 0); g.restore();
    g.save(); g.beginPath(); g.rect(M.l, M.t, pw, ph); g.clip();
    for (const s of spec.series) {
      if (s.type === "points") {
        g.fillStyle = s.color; g.globalAlpha = s.square ? 1 : 0.5;
        g.strokeStyle = ERR; g.lineWidth = 1.5;
        for (const p of s.data) { const x = X(p[0]), y = Y(p[1]); if (s.square) { g.fillRect(x - 2, y - 2, 4, 4); g.strokeRect(x - 2, y - 2, 4, 4); } else { g.beginPath(); g.arc(x, y, 1.6, 0, 6.283); g.fill(); } }
        g.globalAlpha = 1;
      } else if (s.type === "line") {
        g.strokeStyle = s.color; g.lineWidth = s.width || 2; g.setLineDash(s.dash ? [5, 3] : []);
        // A lone point (a one-second run) is drawn across its second, or it would not show.
        const pts = s.data.map((p) => [X(p[0]), Y(p[1])]);
        if (pts.length === 1) pts.push([pts[0][0] + 8, pts[0][1]]), (pts[0] = [pts[0][0] - 8, pts[0][1]]);
        g.beginPath(); pts.forEach((p, i) => (i ? g.lineTo(p[0], p[1]) : g.moveTo(p[0], p[1]))); g.stroke();
        g.setLineDash([]);
      } else if (s.type === "bars") {
        for (const b of s.data) {
          const bw = Math.max(1, (X(b[4] || 1) - X(0)) * 0.9);
          g.fillStyle = b[3]; const y0 = Y(b[1]), y1 = Y(b[2]);
          if (b[5]) g.fillRect(X(b[0]), y1 - 2, bw, 2); else g.fillRect(X(b[0]), y1, bw, Math.max(0.5, y0 - y1));
        }
      }
    }
    g.restore();
    g.strokeStyle = "#888"; g.strokeRect(M.l, M.t, pw, ph);
    return { X, pw };
  }

  const maxOf = (xs, floor) => xs.reduce((a, b) => Math.max(a, b), floor);
  const maxT = maxOf(D.runs.flatMap((r) => r.ok.concat(r.errors).map((p) => p[0]).concat(r.seconds.map((s) => s.t + 1))), 1);
  let zoom = zoomed || [0, maxT];
  const lat = D.runs.flatMap((r) => r.ok.concat(r.errors).map((p) => p[1]));
  // Round outward to 1, 2 or 5 x 10^k (as the SVG does).
  const steps = (v) => { const d = Math.pow(10, Math.floor(Math.log10(v))); return [d, 2 * d, 5 * d, 10 * d]; };
  const lmin = lat.length ? Math.max(0.001, lat.reduce((a, b) => Math.min(a, b))) : 0.1;
  const lmax = lat.length ? lat.reduce((a, b) => Math.max(a, b)) : 1;
  const latLo = steps(lmin).reverse().find((s) => s <= lmin * 1.0001) || lmin;
  const latHi = Math.max(latLo * 2, steps(lmax).find((s) => s >= lmax * 0.9999) || lmax);
  // Under a factor of 4 between min and max a log axis flattens the data: use a linear one.
  const narrow = lat.length > 0 && lmax / lmin < 4;
  const latPad = Math.max((lmax - lmin) * 0.1, lmax * 1e-3);
  const latAxis = () => (narrow ? lin(Math.max(0, lmin - latPad), lmax + latPad) : log(latLo, latHi));
  const codes = [...new Set(D.runs.flatMap((r) => r.seconds.flatMap((s) => Object.keys(s.status).map(Number))))].sort((a, b) => a - b);
  // One bar per run in each second: runs that never ran together are not added up.
  const K = Math.max(1, D.runs.length);
  const statusBars = D.runs.flatMap((r, k) => r.seconds.flatMap((s) => {
    let base = 0;
    const bars = codes.map((c, i) => { const n = s.status[c] || 0; const b = [s.t + k / K, base, base + n, statusColor(c, i), 1 / K]; base += n; return b; }).filter((b) => b[2] > b[1]);
    if (K > 1 && base > 0) bars.push([s.t + k / K, base, base, PAL[k % PAL.length], 1 / K, true]);
    return bars;
  }));
  const statusMax = maxOf(D.runs.flatMap((r) => r.seconds.map((s) => Object.values(s.status).reduce((a, b) => a + b, 0))), 1);
  const reqMax = maxOf(D.runs.flatMap((r) => r.seconds.map((s) => s.requests)), 1);
  const hdrMax = maxOf(D.runs.flatMap((r) => r.hdr.map((h) => h[1])), 1);
  const maxN = Math.max(1, Math.ceil(nines(maxOf(D.runs.flatMap((r) => r.hdr.filter((h) => h[0] < 100).map((h) => h[0])), 90))));

  const charts = {
    latency: {
      time: true,
      legend: () => D.runs.flatMap((r, i) => [[PAL[i % PAL.length], r.name + " p99"], [PAL[i % PAL.length], r.name + " p50", true]]).concat(D.runs.some((r) => r.errors.length) ? [[ERR, "errors"]] : []),
      spec: () => ({
        x: lin(zoom[0], zoom[1]), y: latAxis(), xlabel: "seconds since start", ylabel: "latency (ms)",
        series: D.runs.flatMap((r, i) => [
          { type: "points", color: PAL[i % PAL.length], data: r.ok },
          { type: "points", color: PAL[i % PAL.length], square: true, data: r.errors },
          { type: "line", color: PAL[i % PAL.length], data: r.seconds.filter((s) => s.requests > 0).map((s) => [s.t + 0.5, s.p99_ms]) },
          { type: "line", color: PAL[i % PAL.length], dash: true, width: 1.5, data: r.seconds.filter((s) => s.requests > 0).map((s) => [s.t + 0.5, s.p50_ms]) },
        ]),
      }),
    },
    status: {
      time: true,
      legend: () => codes.map((c, i) => [statusColor(c, i), c === 0 ? "no response" : String(c)]).concat(K > 1 ? D.runs.map((r, k) => [PAL[k % PAL.length], r.name + " (bar top)"]) : []),
      spec: () => ({
        x: lin(zoom[0], zoom[1]), y: lin(0, statusMax * 1.1), xlabel: "seconds since start (by completion)", ylabel: "responses per second",
        series: [{ type: "bars", data: statusBars }],
      }),
    },
    throughput: {
      time: true,
      legend: () => D.runs.flatMap((r, i) => [[PAL[i % PAL.length], r.name + " successes"], [PAL[i % PAL.length], r.name + " sent", true]]),
      spec: () => ({
        x: lin(zoom[0], zoom[1]), y: lin(0, reqMax * 1.1), xlabel: "seconds since start", ylabel: "requests per second",
        series: D.runs.flatMap((r, i) => [
          { type: "line", color: PAL[i % PAL.length], data: r.seconds.map((s) => [s.t + 0.5, s.successes]) },
          { type: "line", color: PAL[i % PAL.length], dash: true, width: 1.5, data: r.seconds.map((s) => [s.t + 0.5, s.requests]) },
        ]),
      }),
    },
    hdr: {
      time: false,
      legend: () => D.runs.map((r, i) => [PAL[i % PAL.length], r.name]),
      spec: () => ({
        x: pct(maxN), y: lin(0, hdrMax * 1.05), xlabel: "percentile", ylabel: "latency (ms)",
        series: D.runs.map((r, i) => ({ type: "line", color: PAL[i % PAL.length], data: r.hdr.filter((h) => h[0] < 100) })),
      }),
    },
  };

  const canvases = [...document.querySelectorAll("canvas[data-chart]")];
  function redraw() {
    let drawn = 0;
    for (const cv of canvases) {
      const c = charts[cv.dataset.chart];
      cv._geo = draw(cv, c.spec());
      const r = cv.getBoundingClientRect();
      cv.dataset.box = [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height].map(Math.round).join(",");
      drawn++;
    }
    document.body.dataset.drawn = String(drawn);
  }
  for (const cv of canvases) {
    const c = charts[cv.dataset.chart];
    const lg = document.getElementById("legend-" + cv.dataset.chart);
    lg.textContent = "";
    for (const [color, label, dashed] of c.legend()) {
      const item = document.createElement("span");
      item.className = "item";
      item.innerHTML = '<i style="border-top:3px ' + (dashed ? "dashed " : "solid ") + color + '"></i>';
      item.appendChild(document.createTextNode(label));
      lg.appendChild(item);
    }
    if (!c.time) continue;
    let from = null;
    const toT = (ev) => { const g = cv._geo, x = ev.offsetX - M.l; return zoom[0] + (Math.min(Math.max(x, 0), g.pw) / g.pw) * (zoom[1] - zoom[0]); };
    // Handlers as properties, so a redraw with new data replaces them rather than adding more.
    cv.onmousedown = (ev) => (from = toT(ev));
    cv.onmouseup = (ev) => { if (from === null) return; const to = toT(ev); if (Math.abs(to - from) > (zoom[1] - zoom[0]) / 200) { zoom = zoomed = [Math.min(from, to), Math.max(from, to)]; redraw(); } from = null; };
    cv.ondblclick = () => { zoomed = null; zoom = [0, maxT]; redraw(); };
  }
  const reset = document.getElementById("reset");
  if (reset) reset.onclick = () => { zoomed = null; zoom = [0, maxT]; redraw(); };
  window.onresize = redraw;
  redraw();
  };
  const data = document.getElementById("data");
  if (data) window.loadlabCharts(JSON.parse(data.textContent));
})();
