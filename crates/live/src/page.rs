//! The live dashboard: the charts of `plot` (drawn by the same script), the latest run's numbers
//! and a lab's steps, redrawn from the snapshot the server sends every second. Nothing is
//! fetched from elsewhere.

use report::chart::{SCRIPT, STYLE};
use report::page::{esc, shell};

const LIVE: &str = r#"
(function () {
  const fmt = (v, d) => (v === null || v === undefined ? "-" : (+v).toFixed(d));
  function tile(label, value) { return '<span class="tile"><b>' + value + '</b>' + label + '</span>'; }
  function show(S) {
    document.body.dataset.updates = String(+(document.body.dataset.updates || 0) + 1);
    const run = S.runs[S.runs.length - 1];
    const sum = document.getElementById("summary");
    if (run) {
      const errors = run.requests - run.successes;
      sum.innerHTML = '<div class="run">' + run.name.replace(/</g, "&lt;") + (run.done ? " (done)" : " (running)") + '</div>' +
        tile("requests", run.requests) + tile("req/s" + (run.asked_rate ? " of " + fmt(run.asked_rate, 0) : ""), fmt(run.rate, 1)) +
        tile("success", fmt(run.success * 100, 2) + "%") + tile("p50 ms", fmt(run.latency_ms.p50, 2)) +
        tile("p99 ms", fmt(run.latency_ms.p99, 2)) + tile("in flight", run.in_flight) + tile("errors", errors) +
        tile("not sent", run.not_sent) + tile("lag p99 ms", fmt(run.lag_ms.p99, 2));
    } else {
      sum.textContent = "waiting for the first request";
    }
    const steps = document.getElementById("steps");
    steps.innerHTML = S.steps.length ? "<tr><th>step</th><th>state</th><th>verdict</th></tr>" + S.steps.map((s) =>
      "<tr class=" + s.state + "><td>" + s.name.replace(/</g, "&lt;") + "</td><td>" + s.state + "</td><td>" + (s.verdict || "").replace(/</g, "&lt;") + "</td></tr>").join("") : "";
    window.loadlabCharts(S.charts);
  }
  fetch("/api/snapshot").then((r) => r.json()).then(show);
  const events = new EventSource("/events");
  events.onmessage = (e) => show(JSON.parse(e.data));
  events.onerror = () => { document.getElementById("live").textContent = "(no connection: the run may have ended)"; };
})();
"#;

/// The dashboard's own style, after the charts'.
const DASHBOARD_STYLE: &str = r#".tile { display: inline-block; margin: 4px 18px 4px 0; font-size: 12px; color: #555; } .tile b { display: block; font-size: 20px; color: #222; }
.run { font-size: 14px; margin-top: 6px; } #live { font-size: 13px; color: #2ca02c; font-weight: normal; }
#steps { border-collapse: collapse; font-size: 13px; margin: 8px 0; } #steps td, #steps th { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
#steps .running { background: #fff7e0; } #steps .waiting { color: #999; }
"#;

pub(crate) fn dashboard(title: &str) -> String {
    let sections: String = [
        ("latency", "Latency over time"),
        ("status", "Responses per second by status (by completion time)"),
        ("throughput", "Throughput per second"),
        ("hdr", "Latency by percentile (HDR)"),
    ]
    .iter()
    .map(|(id, h)| format!("<section><h2>{h}</h2><canvas data-chart=\"{id}\" id=\"chart-{id}\"></canvas><div class=\"legend\" id=\"legend-{id}\"></div></section>\n"))
    .collect();
    let style = format!("{STYLE}{DASHBOARD_STYLE}");
    let body = format!(
        r#"<h1>{} <span id="live">live</span></h1>
<div id="summary">waiting for the first request</div>
<table id="steps"></table>
<div class="controls">Updated every second. Drag across a time chart to zoom in; double-click or <button id="reset">Reset zoom</button>.</div>
{sections}<script>
{SCRIPT}
</script>
<script>{LIVE}</script>
"#,
        esc(title)
    );
    shell(&format!("{title} (live)"), &style, &body)
}
