//! history.html, the page a team opens every morning: the overview first (`overview`), then every
//! series as a small chart with the commits on its x axis, grouped by load point with the metrics
//! side by side (or by metric across load points: a switch). Self-contained: the figures travel
//! as JSON in the page, already formatted by the terminal's formatter (`series::show`), and a
//! short script draws them (page.js), so 50 series of 1,000 labs stay a page of about a MB.

use std::collections::HashMap;
use std::fmt::Write;

use report::page::{esc, href, json_in_script, shell};
use serde::Serialize;

use crate::check::Checked;
use crate::overview::{verdict, Overview, State};
use crate::series::{show, Point, Series};
use stats::change_points::Settings;

/// A lab as a point's hover shows it: short commit, date, branch, tags, link to its report.
#[derive(Serialize)]
struct LabRow(String, String, String, String, String);

/// One chart's data.
#[derive(Serialize)]
struct Chart {
    id: String,
    /// The load point (plan, target, load, machine) and the metric: the two ways to group.
    point: String,
    metric: String,
    unit: &'static str,
    /// Per point: its lab (an index into the page's labs), value and value as shown.
    x: Vec<usize>,
    y: Vec<f32>,
    v: Vec<String>,
    /// The y axis: (value, label), lowest first; the axis spans the first to the last.
    ticks: Vec<(f64, String)>,
    /// Each level between change points: (first point, last point, centre).
    levels: Vec<(usize, usize, f32)>,
    /// Each change point: (first point of the new level, state word).
    changes: Vec<(usize, &'static str)>,
}

#[derive(Serialize)]
struct Data {
    labs: Vec<LabRow>,
    /// (lab index, short commit) for the shared x axis.
    xticks: Vec<(usize, String)>,
    charts: Vec<Chart>,
}

/// The unit a metric's axis is in.
fn unit(metric: &str) -> &'static str {
    if metric.starts_with(crate::entry::SPAN) {
        return "µs";
    }
    if crate::figures::is_machine_share(metric) {
        return "%";
    }
    if metric == crate::figures::MACHINE_SPEED {
        return "µs";
    }
    match lab::Metric::parse(metric) {
        Ok(m) if m.is_latency() => "ms",
        Ok(lab::Metric::Success | lab::Metric::Errors) => "%",
        Ok(lab::Metric::Rps | lab::Metric::Throughput) => "req/s",
        _ => "µs/req",
    }
}

/// Where a metric stands among its load point's charts.
fn rank(metric: &str) -> usize {
    const ORDER: [&str; 13] = [
        "p50",
        "p90",
        "p95",
        "p99",
        "p999",
        "max",
        "mean",
        "success",
        "errors",
        "rps",
        "throughput",
        "target_cpu",
        "generator_cpu",
    ];
    ORDER.iter().position(|m| *m == metric).unwrap_or(ORDER.len())
}

/// About five round steps over `lo..hi` (1, 2, 2.5 or 5 times a power of ten), each labelled
/// by the terminal's formatter; a step its labels cannot tell apart (2.00 and 2.05 ms both read
/// 2.0ms) gives way to the next larger one.
fn ticks(metric: &str, lo: f64, hi: f64) -> Vec<(f64, String)> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - lo.abs().max(1e-9) * 0.05, hi + hi.abs().max(1e-9) * 0.05) };
    let raw = (hi - lo) / 4.0;
    let p = 10f64.powf(raw.log10().floor());
    let steps = [1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 25.0, 50.0, 100.0].map(|m| m * p);
    let mut last: Vec<(f64, String)> = Vec::new();
    for step in steps.into_iter().filter(|s| *s >= raw) {
        let (first, end) = ((lo / step).floor() as i64, (hi / step).ceil() as i64);
        let t: Vec<(f64, String)> = (first..=end).map(|i| i as f64 * step).map(|v| (v, show(metric, v))).collect();
        // Labels as evenly spaced as the values (2.25 printed as 2.2 is not): the number each
        // starts with, in one unit, steps by the same amount.
        let numbers: Vec<Option<f64>> = t.iter().map(|(_, l)| leading_number(l)).collect();
        let even = numbers.windows(3).all(|w| match (w[0], w[1], w[2]) {
            (Some(a), Some(b), Some(c)) => ((b - a) - (c - b)).abs() <= 1e-9 * (b - a).abs().max(1e-12),
            _ => false,
        });
        let distinct = t.windows(2).all(|w| w[0].1 != w[1].1);
        if distinct && (even || t.len() < 3) {
            return t;
        }
        if last.is_empty() || (distinct && !last.windows(2).all(|w| w[0].1 != w[1].1)) {
            last = t;
        }
    }
    last
}

/// The number a label starts with (`2.5` of `2.5ms`).
fn leading_number(label: &str) -> Option<f64> {
    let end = label.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(label.len());
    label[..end].parse().ok()
}

fn date(unix_s: i64) -> String {
    chrono::DateTime::from_timestamp(unix_s, 0)
        .map_or_else(|| unix_s.to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// `{"version": "1.4"}` as `version=1.4`.
fn tags_text(tags: &str) -> String {
    serde_json::from_str::<std::collections::BTreeMap<String, String>>(tags)
        .map(|t| t.iter().map(|(k, v)| crate::series::plain(&format!("{k}={v}"))).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// Where the page is written, so that a lab's link leads to its report from there.
struct Links(std::path::PathBuf);

impl Links {
    fn at(page_dir: &std::path::Path) -> Links {
        Links(std::path::absolute(page_dir).unwrap_or_else(|_| page_dir.to_path_buf()))
    }

    /// The link to the report of the lab at `path` (as recorded: absolute, or, from a history
    /// written before paths were, relative to where this runs), relative to the page, made a
    /// URL that can only be a path ([`href`]).
    fn report(&self, path: &str) -> String {
        let lab = std::path::Path::new(path.trim_end_matches('/'));
        let lab = std::path::absolute(lab).unwrap_or_else(|_| lab.to_path_buf());
        let from_page = pathdiff::diff_paths(&lab, &self.0).unwrap_or(lab);
        href(&from_page.join("report.html").to_string_lossy())
    }
}

fn data(series: &[Series], links: &Links) -> Data {
    // The page's labs in run order, each once, shared by every chart's x axis.
    let mut order: Vec<&Point> = series.iter().flat_map(|s| &s.points).collect();
    order.sort_by_key(|p| (p.started_unix_s, p.lab));
    order.dedup_by_key(|p| p.lab);
    let index: HashMap<i64, usize> = order.iter().enumerate().map(|(i, p)| (p.lab, i)).collect();
    let labs = order
        .iter()
        .map(|p| {
            LabRow(p.short_commit(), date(p.started_unix_s), p.branch_text(), tags_text(&p.tags), links.report(&p.path))
        })
        .collect();
    // A few commits along the axis (7 characters, as git abbreviates them); every lab on hover.
    let every = order.len().div_ceil(4).max(1);
    let xticks =
        (0..order.len()).step_by(every).map(|i| (i, order[i].short_commit().chars().take(7).collect())).collect();
    let charts = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let m = &s.key.metric;
            let values = s.points.iter().map(|p| p.value).filter(|v| v.is_finite());
            let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
            let mut edges = vec![0];
            edges.extend(s.changes.iter().map(|c| c.index));
            edges.push(s.points.len());
            let levels = edges
                .windows(2)
                .filter(|w| w[1] > w[0])
                .map(|w| {
                    let seg: Vec<f64> = s.points[w[0]..w[1]].iter().map(|p| p.value).collect();
                    (w[0], w[1] - 1, stats::describe::centre(&seg) as f32)
                })
                .collect();
            let changes = s.changes.iter().enumerate().map(|(k, c)| (c.index, State::of(s, k).word())).collect();
            let quick = if s.key.quick { " (quick)" } else { "" };
            Chart {
                id: format!("s{i}"),
                point: format!("{} / {} @ {}{quick} on {}", s.key.plan, s.key.target, s.key.load, s.key.machine),
                metric: m.clone(),
                unit: unit(m),
                x: s.points.iter().map(|p| index[&p.lab]).collect(),
                y: s.points.iter().map(|p| p.value as f32).collect(),
                v: s.points.iter().map(|p| show(m, p.value)).collect(),
                ticks: if lo.is_finite() { ticks(m, lo, hi) } else { Vec::new() },
                levels,
                changes,
            }
        })
        .collect();
    let mut charts: Vec<Chart> = charts;
    // Within a load point, the metrics in the order a report lists them; functions after.
    charts.sort_by_key(|c| (c.point.clone(), rank(&c.metric), c.metric.clone()));
    Data { labs, xticks, charts }
}

/// history.html of `series` (with change points marked accepted), the plans' last `checks`, to
/// be written in `page_dir` (its links lead from there).
pub fn html(series: &[Series], settings: &Settings, checks: &[Checked], page_dir: &std::path::Path) -> String {
    let o = Overview::of(series, checks);
    let links = Links::at(page_dir);
    let mut body = String::from("<h1>History</h1>\n");
    let labs: std::collections::HashSet<i64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.lab)).collect();
    let _ = writeln!(
        body,
        "<p class=\"note\">{} series over {} labs; {}.</p>",
        series.len(),
        labs.len(),
        esc(&crate::render::settings_text(settings))
    );
    body.push_str("<section id=\"overview\">\n");
    if o.changes.is_empty() {
        body.push_str("<h2>No change point in any series</h2>\n");
    } else {
        body.push_str(
            "<h2>Changes, newest first</h2>\n<table class=\"changes\"><tr><th>state</th><th>series</th>\
             <th>commit</th><th>level</th><th>change [95%]</th><th>p</th></tr>\n",
        );
        for c in &o.changes {
            let after = c.after();
            let before = c.before().map_or_else(|| "-".into(), Point::short_commit);
            let _ = writeln!(
                body,
                "<tr class=\"{}\"><td><span class=\"badge\">{}</span></td><td><a href=\"#s{}\">{}</a></td>\
                 <td><a href=\"{}\" title=\"{}, after {}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{:.1e}</td></tr>",
                c.state.word(),
                esc(&c.state.text()),
                c.series,
                esc(&c.of.key.text()),
                esc(&links.report(&after.path)),
                esc(&date(after.started_unix_s)),
                esc(&before),
                esc(&after.short_commit()),
                esc(&c.levels()),
                esc(&c.size()),
                c.change.pvalue
            );
        }
        body.push_str("</table>\n");
    }
    // By the whole key: two machines' series read alike in words.
    let position: std::collections::BTreeMap<&crate::series::Key, usize> =
        series.iter().enumerate().map(|(i, s)| (&s.key, i)).collect();
    for checked in checks {
        let commit: String =
            checked.commit.as_deref().map_or_else(|| "no commit".into(), |c| c.chars().take(10).collect());
        let _ = writeln!(
            body,
            "<h2>Last check: {} (commit <code>{}</code>, <a href=\"{}\">its lab</a>)</h2>\n\
             <table class=\"checks\"><tr><th>series</th><th>gate</th><th>verdict</th><th>value</th><th>level</th>\
             <th>change</th></tr>",
            esc(&checked.plan),
            esc(&commit),
            esc(&links.report(&checked.path))
        );
        for j in &checked.judged {
            let name = position
                .get(&j.key)
                .map_or_else(|| esc(&j.key.text()), |i| format!("<a href=\"#s{i}\">{}</a>", esc(&j.key.text())));
            let change = j.change_text();
            let class = match j.outcome {
                crate::check::Outcome::Worse => "worse",
                crate::check::Outcome::Held => "held",
                crate::check::Outcome::TooShort(_) | crate::check::Outcome::NotYet(_) => "short",
            };
            let _ = writeln!(
                body,
                "<tr class=\"{class}\"><td>{name}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{change}</td></tr>",
                esc(&j.gate),
                esc(&verdict(j)),
                esc(&show(&j.key.metric, j.value)),
                esc(&show(&j.key.metric, j.level_mean))
            );
        }
        body.push_str("</table>\n");
    }
    if !o.quiet.is_empty() {
        let quiet: Vec<String> =
            o.quiet.iter().map(|s| format!("<a href=\"#s{}\">{}</a>", position[&s.key], esc(&s.key.text()))).collect();
        let _ = writeln!(
            body,
            "<details class=\"quiet\"><summary>{} series with no change point</summary><p>{}</p></details>",
            o.quiet.len(),
            quiet.join("; ")
        );
    }
    body.push_str(
        "</section>\n<section id=\"series\">\n<h2>Series</h2>\n<p class=\"controls\">Group by \
         <label><input type=\"radio\" name=\"by\" value=\"point\" checked> load point</label> \
         <label><input type=\"radio\" name=\"by\" value=\"metric\"> metric</label>. \
         A point's hover shows its lab; a click opens the lab's report. Dashed: each level between \
         change points; a line across: a change (red confirmed, orange pending, grey accepted).</p>\n\
         <div id=\"groups\"><p class=\"note\">The charts are drawn by the page's script.</p></div>\n</section>\n\
         <div id=\"tip\" hidden></div>\n",
    );
    let json = json_in_script(&serde_json::to_string(&data(series, &links)).unwrap_or_else(|_| "{}".into()));
    let _ = write!(
        body,
        "<script id=\"data\" type=\"application/json\">{json}</script>\n<script>\n{}</script>\n",
        include_str!("page.js")
    );
    shell("History", STYLE, &body)
}

const STYLE: &str = r#"body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 16px auto; max-width: 1240px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 22px 0 6px; } h3 { font-size: 13px; margin: 16px 0 4px; }
.note, .controls { color: #555; font-size: 13px; } table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
td, th { border-bottom: 1px solid #eee; padding: 3px 8px; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; } table { max-width: 100%; }
.badge { border-radius: 3px; padding: 1px 6px; color: #fff; background: #888; white-space: nowrap; }
tr.confirmed .badge { background: #d62728; } tr.pending .badge { background: #ff7f0e; } tr.accepted .badge, tr.machine .badge { background: #7f7f7f; }
tr.accepted .badge { white-space: normal; overflow-wrap: anywhere; }
tr.worse td { background: #fdecea; } tr.short td { color: #777; }
details.quiet { font-size: 13px; margin: 10px 0; }
.grid { display: flex; flex-wrap: wrap; gap: 8px; }
figure { margin: 0; border: 1px solid #eee; padding: 4px; width: 390px; }
figcaption { font-size: 12px; color: #333; } figure.moved figcaption { font-weight: bold; }
svg text { font-size: 10px; fill: #555; } #tip { position: fixed; pointer-events: none; background: #fff;
border: 1px solid #999; padding: 4px 6px; font-size: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.2); }
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_are_the_terminals_and_never_repeat() {
        let t = ticks("p50", 1.93, 2.08);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert!(labels.windows(2).all(|w| w[0] != w[1]), "{labels:?}");
        assert!(t[0].0 <= 1.93 && t[t.len() - 1].0 >= 2.08, "{t:?}");
        assert!(labels.iter().all(|l| l.ends_with("ms")), "{labels:?}");
        // 1.8 to 3.0 ms: not 2.25 printed as 2.2 beside 2.5.
        let t = ticks("p50", 1.9, 2.8);
        let n: Vec<f64> = t.iter().map(|(_, l)| leading_number(l).unwrap()).collect();
        assert!(n.windows(3).all(|w| ((w[1] - w[0]) - (w[2] - w[1])).abs() < 1e-9), "{t:?}");
        let cpu = ticks("target_cpu", 170.0, 190.0);
        assert_eq!(
            cpu.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>(),
            ["170.0µs/req", "175.0µs/req", "180.0µs/req", "185.0µs/req", "190.0µs/req"]
        );
        // One value: a band around it.
        assert!(ticks("success", 1.0, 1.0).len() >= 2);
        assert_eq!(
            (unit("p99"), unit("success"), unit("throughput"), unit("fn:deflate")),
            ("ms", "%", "req/s", "µs/req")
        );
        assert!(rank("p50") < rank("p99") && rank("p99") < rank("target_cpu") && rank("target_cpu") < rank("fn:a"));
    }
}
