//! The lab's charts, chosen by what the plan varies: latency and success against the rate per
//! target (a ladder, example 002), requests per second against connections per target and
//! protocol (a sweep, 003), HDR curves of the variants (004), CPU, memory and scraped series over
//! time beside latency over time (000).

use std::collections::BTreeMap;

use report::chart::{render_svg, render_xy_svg, Chart, ChartData, Series, XyChart};

use crate::lab_json::Lab;
use crate::measure::metric::Metric;
use crate::plan::matrix::{protocol_text, Axes, Point};

/// A chart as SVG, with a file-name stem and a title.
pub(crate) struct Figure {
    pub stem: String,
    pub title: String,
    pub svg: String,
}

/// Runs drawn at most on one time chart (beyond, the chart would be unreadable).
const MAX_TIME_RUNS: usize = 12;

pub(crate) fn figures(lab: &Lab) -> Vec<Figure> {
    let mut out = Vec::new();
    let axes = &lab.matrix.axes;
    if axes.rate {
        out.push(Figure {
            stem: "ladder".into(),
            title: "Latency and success by rate".into(),
            svg: render_xy_svg("", &ladder(lab)),
        });
    }
    if axes.connections {
        out.push(Figure {
            stem: "sweep".into(),
            title: "Requests per second by connections".into(),
            svg: render_xy_svg("", &[sweep(lab)]),
        });
    }
    let series = |filter: &dyn Fn(&Point) -> bool| -> ChartData {
        let runs = lab
            .series
            .iter()
            .filter(|(i, _)| filter(&lab.matrix.points[lab.steps[*i].point]))
            .map(|(i, r)| {
                let mut r = r.clone();
                r.name = format!(
                    "{} {}",
                    lab.targets[lab.steps[*i].target].name,
                    lab.matrix.points[lab.steps[*i].point].label(axes)
                );
                r
            })
            .collect();
        ChartData { title: String::new(), runs }
    };
    if axes.variant {
        out.push(Figure {
            stem: "variants-hdr".into(),
            title: "Latency by percentile, per variant".into(),
            svg: render_svg(&series(&|_| true), Chart::Hdr),
        });
    }
    let runs = series(&|_| true);
    if !runs.runs.is_empty() && runs.runs.len() <= MAX_TIME_RUNS {
        out.push(Figure {
            stem: "latency".into(),
            title: "Latency over time".into(),
            svg: render_svg(&runs, Chart::Latency),
        });
    }
    let sampled = resources(lab);
    if !sampled.is_empty() {
        out.push(Figure {
            stem: "resources".into(),
            title: "CPU, memory and scraped series over time".into(),
            svg: render_xy_svg("", &sampled),
        });
    }
    out
}

/// A named line with its colour index.
type Line = (String, usize, Vec<(f64, f64)>);

/// Median of a metric of each target's cells, one line per target and group (the rest of the
/// point), with its colour index.
fn by_target(
    lab: &Lab,
    x: impl Fn(&Point) -> Option<f64>,
    metric: Metric,
    group: impl Fn(&Point) -> String,
) -> Vec<Line> {
    let mut lines: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
    for c in &lab.findings.cells {
        let p = &lab.matrix.points[c.point];
        let (Some(xv), Some(s)) = (x(p), c.metrics.get(&metric)) else { continue };
        lines.entry((c.target, group(p))).or_default().push((xv, s.median));
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, ((t, g), mut pts))| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = if g.is_empty() { lab.targets[t].name.clone() } else { format!("{} {g}", lab.targets[t].name) };
            (name, i, pts)
        })
        .collect()
}

/// Everything of a point but the axis drawn on x.
fn rest(axes: &Axes, p: &Point, x_axis: &str) -> String {
    let axes =
        Axes { rate: axes.rate && x_axis != "rate", connections: axes.connections && x_axis != "connections", ..*axes };
    let l = Point { rate: None, connections: None, ..p.clone() }.label(&axes);
    if l == "all" {
        String::new()
    } else {
        l
    }
}

fn ladder(lab: &Lab) -> Vec<XyChart> {
    let axes = &lab.matrix.axes;
    let group = |p: &Point| rest(axes, p, "rate");
    // p99 of all requests (solid) and of successful ones only (dashed, in the same colour), so
    // a target failing fast does not look fast.
    let mut latency = Vec::new();
    for (name, color, pts) in by_target(lab, |p| p.rate, Metric::P99, group) {
        latency.push(Series { name: format!("{name} p99"), points: pts, dashed: false, color: Some(color) });
    }
    let mut ok: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
    for c in &lab.findings.cells {
        let p = &lab.matrix.points[c.point];
        if let Some(r) = p.rate.filter(|_| !c.metrics.is_empty()) {
            ok.entry((c.target, group(p))).or_default().push((r, c.ok_p99.median));
        }
    }
    for (color, ((t, g), mut pts)) in ok.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let name = if g.is_empty() { lab.targets[t].name.clone() } else { format!("{} {g}", lab.targets[t].name) };
        latency.push(Series { name: format!("{name} ok p99"), points: pts, dashed: true, color: Some(color) });
    }
    let success = by_target(lab, |p| p.rate, Metric::Success, group)
        .into_iter()
        .map(|(name, color, pts)| Series {
            name,
            points: pts.into_iter().map(|(x, y)| (x, y * 100.0)).collect(),
            dashed: false,
            color: Some(color),
        })
        .collect();
    // A log axis for latencies that span orders of magnitude; a linear one for a narrow range
    // (100-102 ms on a 100-1000 ms log axis is a flat line on its bottom edge).
    let ys = latency.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|y| *y > 0.0);
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let log_y = hi / lo > 4.0;
    vec![
        XyChart {
            title: "Latency by rate".into(),
            x_label: "requests per second asked".into(),
            y_label: "latency (ms)".into(),
            log_y,
            series: latency,
        },
        XyChart {
            title: "Success by rate".into(),
            x_label: "requests per second asked".into(),
            y_label: "successful requests (%)".into(),
            log_y: false,
            series: success,
        },
    ]
}

fn sweep(lab: &Lab) -> XyChart {
    let axes = &lab.matrix.axes;
    let series =
        by_target(lab, |p| p.connections.map(|c| c as f64), Metric::Throughput, |p| rest(axes, p, "connections"))
            .into_iter()
            .map(|(name, color, points)| Series { name, points, dashed: false, color: Some(color) })
            .collect();
    let protocols: Vec<&str> = lab.plan.load.protocol.iter().map(|p| protocol_text(*p)).collect();
    XyChart {
        title: format!("Successful requests per second by connections ({})", protocols.join(", ")),
        x_label: "connections".into(),
        y_label: "responses per second".into(),
        log_y: false,
        series,
    }
}

fn resources(lab: &Lab) -> Vec<XyChart> {
    let mut cpu = Vec::new();
    let mut rss = Vec::new();
    let mut scraped: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    for (name, rows) in &lab.samples {
        let pts = |f: &dyn Fn(&crate::run::sample::Row) -> Option<f64>| {
            rows.iter().filter_map(|r| f(r).map(|v| (r.t, v))).collect::<Vec<_>>()
        };
        let c = pts(&|r| r.cpu_pct);
        if !c.is_empty() {
            cpu.push(Series { name: name.clone(), points: c, dashed: name == "generator", color: None });
        }
        let m = pts(&|r| r.rss_mb);
        if !m.is_empty() {
            rss.push(Series { name: name.clone(), points: m, dashed: name == "generator", color: None });
        }
        let keys: std::collections::BTreeSet<&String> = rows.iter().flat_map(|r| r.series.keys()).collect();
        for k in keys {
            scraped.entry(k.clone()).or_default().push(Series {
                name: name.clone(),
                points: pts(&|r| r.series.get(k).copied()),
                dashed: false,
                color: None,
            });
        }
    }
    // Only worth drawing when a target (not just the generator) was sampled.
    if lab.samples.keys().all(|k| k == "generator") {
        return Vec::new();
    }
    let mut charts = vec![
        XyChart {
            title: "CPU".into(),
            x_label: "seconds since the lab started".into(),
            y_label: "% of one core".into(),
            log_y: false,
            series: cpu,
        },
        XyChart {
            title: "Resident memory".into(),
            x_label: "seconds since the lab started".into(),
            y_label: "MiB".into(),
            log_y: false,
            series: rss,
        },
    ];
    for (k, series) in scraped {
        charts.push(XyChart {
            title: k.clone(),
            x_label: "seconds since the lab started".into(),
            y_label: k,
            log_y: false,
            series,
        });
    }
    charts
}
