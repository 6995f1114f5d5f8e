//! The self-contained HTML page: the chart data as JSON and a small script (page.js, inlined)
//! that draws it on canvases, zoomable in time. No network, no external files.

use super::data::ChartData;
use super::svg::Chart;
use crate::page::{esc, shell};

/// The script that draws the charts (`window.loadlabCharts(data)`), shared with the live view.
pub const SCRIPT: &str = include_str!("page.js");

/// The page's style, shared with the live view.
pub const STYLE: &str = r#"body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 16px auto; max-width: 1100px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 18px 0 4px; }
.runs { color: #555; font-size: 13px; } .controls { font-size: 12px; color: #555; margin: 6px 0; }
canvas { width: 100%; height: 320px; display: block; border: 1px solid #eee; cursor: crosshair; }
.legend { font-size: 12px; margin: 4px 0 0 60px; } .legend .item { margin-right: 14px; white-space: nowrap; }
.legend i { display: inline-block; width: 18px; margin-right: 4px; vertical-align: middle; }
@media print { .controls { display: none; } canvas { height: 260px; border: none; } section { break-inside: avoid; } }
"#;

pub fn render_html(d: &ChartData, chart: Chart) -> String {
    // No text of the data may end the script element.
    let json = crate::page::json_in_script(&serde_json::to_string(d).expect("chart data serialises"));
    let title = if d.title.is_empty() { "loadlab plot".to_owned() } else { d.title.clone() };
    let names = [
        (Chart::Latency, "latency", "Latency over time"),
        (Chart::Status, "status", "Responses per second by status (by completion time)"),
        (Chart::Throughput, "throughput", "Throughput per second"),
        (Chart::Hdr, "hdr", "Latency by percentile (HDR)"),
    ];
    let mut sections = String::new();
    for (c, id, heading) in names {
        if chart.list().contains(&c) {
            sections += &format!(
                "<section><h2>{heading}</h2><canvas data-chart=\"{id}\" id=\"chart-{id}\"></canvas><div class=\"legend\" id=\"legend-{id}\"></div></section>\n"
            );
        }
    }
    // Only time charts zoom: an HDR-only page has nothing to drag across.
    let controls = if chart.list().iter().any(|c| *c != Chart::Hdr) {
        r#"<div class="controls">Drag across a time chart to zoom in; double-click or <button id="reset">Reset zoom</button>.</div>"#
    } else {
        ""
    };
    let runs: Vec<String> = d.runs.iter().map(|r| format!("{} ({} requests)", esc(&r.name), r.requests)).collect();
    let body = format!(
        r#"<h1>{}</h1>
<div class="runs">{}</div>
{controls}
{sections}<script type="application/json" id="data">{json}</script>
<script>
{SCRIPT}
</script>
"#,
        esc(&title),
        runs.join(" · "),
    );
    shell(&title, STYLE, &body)
}
