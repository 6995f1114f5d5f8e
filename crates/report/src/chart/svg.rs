//! Charts as SVG, written by hand (plain text, so golden tests can compare them byte for byte):
//! latency over time, status codes per second, throughput per second, HDR percentile curves.

use std::fmt::Write;

use super::data::{ChartData, Point};

/// Which charts to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    Latency,
    Status,
    Throughput,
    Hdr,
    All,
}

impl std::str::FromStr for Chart {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "latency" => Chart::Latency,
            "status" => Chart::Status,
            "throughput" => Chart::Throughput,
            "hdr" => Chart::Hdr,
            "all" => Chart::All,
            _ => return Err(format!("unknown chart {s:?} (latency, status, throughput, hdr or all)")),
        })
    }
}

impl Chart {
    pub fn list(self) -> Vec<Chart> {
        match self {
            Chart::All => vec![Chart::Latency, Chart::Status, Chart::Throughput, Chart::Hdr],
            c => vec![c],
        }
    }
}

/// Run colours: 16 that stay apart (none of them the errors' red); errors are drawn in their
/// run's colour with a red outline, so they belong to their run.
pub const PALETTE: [&str; 16] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79",
    "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
];
pub(crate) const ERROR_COLOR: &str = "#d62728";
/// Status colours: 2xx green, 3xx blue, 4xx orange, 5xx red, none grey.
pub(crate) fn status_color(code: u16, shade: usize) -> &'static str {
    const GREEN: [&str; 3] = ["#2ca02c", "#98df8a", "#1b7a1b"];
    const BLUE: [&str; 3] = ["#1f77b4", "#aec7e8", "#0d4a78"];
    const ORANGE: [&str; 3] = ["#ff7f0e", "#ffbb78", "#b35806"];
    const RED: [&str; 3] = ["#d62728", "#ff9896", "#8b0000"];
    let set = match code {
        200..=299 => &GREEN,
        300..=399 => &BLUE,
        400..=499 => &ORANGE,
        500..=599 => &RED,
        _ => return "#7f7f7f",
    };
    set[shade % 3]
}

pub(super) const WIDTH: f64 = 960.0;
pub(super) const HEIGHT: f64 = 340.0;
pub(super) const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 84.0;

/// Axis scales.
#[derive(Clone, Copy)]
pub(super) enum Scale {
    Linear(f64, f64),
    Log(f64, f64),
    /// Percentiles 0..100 drawn as log10(1 / (1 - p)).
    Percentile(f64),
}

impl Scale {
    fn frac(&self, v: f64) -> f64 {
        match *self {
            Scale::Linear(a, b) => (v - a) / (b - a),
            Scale::Log(a, b) => (v.max(a).ln() - a.ln()) / (b.ln() - a.ln()),
            Scale::Percentile(max_nines) => nines(v) / max_nines,
        }
    }

    fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            Scale::Linear(a, b) => nice_ticks(a, b),
            Scale::Log(a, b) => {
                let mut out = Vec::new();
                let mut d = 10f64.powf(a.log10().floor());
                while d <= b * 1.0001 {
                    for m in [1.0, 2.0, 5.0] {
                        let v = d * m;
                        if v >= a * 0.9999 && v <= b * 1.0001 {
                            out.push((v, fmt_num(v)));
                        }
                    }
                    d *= 10.0;
                }
                out
            }
            Scale::Percentile(max_nines) => {
                let labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"];
                (0..=max_nines.floor() as usize)
                    .map(|k| (100.0 - 100.0 / 10f64.powi(k as i32), labels[k.min(6)].to_owned()))
                    .collect()
            }
        }
    }
}

/// log10(1 / (1 - p/100)), the "nines" of a percentile.
pub(crate) fn nines(p: f64) -> f64 {
    let tail = (1.0 - p / 100.0).max(1e-7);
    -tail.log10()
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

/// The 1, 2 or 5 x 10^k step that cuts a..b into at most 8 parts.
fn nice_step(a: f64, b: f64) -> f64 {
    let span = (b - a).max(1e-9);
    let mag = 10f64.powf((span / 6.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 8.0).unwrap_or(10.0 * mag)
}

/// Round ticks (1, 2, 5 x 10^k steps) covering a..b.
fn nice_ticks(a: f64, b: f64) -> Vec<(f64, String)> {
    let step = nice_step(a, b);
    let mut out = Vec::new();
    let mut v = (a / step).ceil() * step;
    while v <= b + step * 1e-6 {
        out.push((v, fmt_num(if v.abs() < step * 1e-6 { 0.0 } else { v })));
        v += step;
    }
    out
}

pub(super) struct Frame {
    pub(super) x: Scale,
    pub(super) y: Scale,
    pub(super) top: f64,
}

impl Frame {
    pub(super) fn px(&self, v: f64) -> f64 {
        LEFT + self.x.frac(v).clamp(0.0, 1.0) * (WIDTH - LEFT - RIGHT)
    }
    pub(super) fn py(&self, v: f64) -> f64 {
        self.top + TOP + (1.0 - self.y.frac(v).clamp(0.0, 1.0)) * (HEIGHT - TOP - BOTTOM)
    }
}

pub(super) use crate::page::esc;

/// Axes, grid, labels and title of one chart.
pub(super) fn frame(out: &mut String, f: &Frame, title: &str, xlabel: &str, ylabel: &str) {
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    let (y0, y1) = (f.top + TOP, f.top + HEIGHT - BOTTOM);
    let _ = writeln!(out, r#"<text x="{}" y="{}" class="title">{}</text>"#, LEFT, f.top + 24.0, esc(title));
    for (v, label) in f.y.ticks() {
        let y = f.py(v);
        let _ = writeln!(
            out,
            r#"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" class="grid"/><text x="{}" y="{:.1}" class="ytick">{label}</text>"#,
            x0 - 6.0,
            y + 4.0
        );
    }
    for (v, label) in f.x.ticks() {
        let x = f.px(v);
        // A label centred on the right edge would be cut off: end it at the edge instead.
        let half_width = label.chars().count() as f64 * 3.5;
        let anchor = if x + half_width > WIDTH { r#" style="text-anchor:end""# } else { "" };
        let _ = writeln!(
            out,
            r#"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" class="grid"/><text x="{x:.1}" y="{}" class="xtick"{anchor}>{label}</text>"#,
            y1 + 16.0
        );
    }
    let _ = writeln!(out, r#"<rect x="{x0}" y="{y0}" width="{}" height="{}" class="plot"/>"#, x1 - x0, y1 - y0);
    let _ = writeln!(out, r#"<text x="{}" y="{}" class="xlabel">{}</text>"#, (x0 + x1) / 2.0, y1 + 34.0, esc(xlabel));
    let _ = writeln!(
        out,
        r#"<text x="16" y="{:.1}" class="ylabel" transform="rotate(-90 16 {:.1})">{}</text>"#,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        esc(ylabel)
    );
}

/// A legend row under a chart: (colour, label, dashed).
pub(super) fn legend(out: &mut String, top: f64, items: &[(String, String, bool)]) {
    let mut x = LEFT;
    let mut y = top + HEIGHT - 30.0;
    for (color, label, dashed) in items {
        let w = 34.0 + label.chars().count() as f64 * 6.6;
        if x > LEFT && x + w > WIDTH - RIGHT {
            x = LEFT;
            y += 16.0;
        }
        let dash = if *dashed { r#" stroke-dasharray="4 3""# } else { "" };
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="3"{dash}/><text x="{}" y="{}" class="legend">{}</text>"#,
            y - 4.0,
            x + 18.0,
            y - 4.0,
            x + 22.0,
            y,
            esc(label)
        );
        x += w;
    }
}

pub(super) fn polyline(
    out: &mut String,
    f: &Frame,
    pts: impl Iterator<Item = (f64, f64)>,
    color: &str,
    width: f64,
    dashed: bool,
) {
    let pts: Vec<(f64, f64)> = pts.map(|(x, y)| (f.px(x), f.py(y))).collect();
    // A lone point (a one-second run) gets a short stroke, or it would not show.
    let pts = match pts[..] {
        [] => return,
        [(x, y)] => vec![(x - 8.0, y), (x + 8.0, y)],
        _ => pts,
    };
    let mut d = String::new();
    for (x, y) in pts {
        let _ = write!(d, "{x:.1},{y:.1} ");
    }
    let dash = if dashed { r#" stroke-dasharray="5 3""# } else { "" };
    let _ = writeln!(
        out,
        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}"{dash}/>"#,
        d.trim_end()
    );
}

fn max_time(d: &ChartData) -> f64 {
    d.runs
        .iter()
        .flat_map(|r| r.ok.iter().chain(&r.errors).map(|p| p.0).chain(r.seconds.iter().map(|s| s.t as f64 + 1.0)))
        .fold(1.0, f64::max)
}

/// The latency axis: logarithmic over 1, 2, 5 x 10^k bounds, or linear when the data spans less
/// than a factor of 4 (1,000-1,017 ms on a log axis from 1 to 2 s would be one flat line).
fn latency_scale(d: &ChartData) -> Scale {
    let all = d.runs.iter().flat_map(|r| r.ok.iter().chain(&r.errors)).map(|p: &Point| p.1);
    let (lo, hi) = all.fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi <= 0.0 {
        return Scale::Log(0.1, 1.0);
    }
    let lo = lo.max(0.001);
    if hi / lo < NARROW {
        let pad = ((hi - lo) * 0.1).max(hi * 1e-3);
        let (a, b) = (lo - pad, hi + pad);
        let step = nice_step(a.max(0.0), b);
        return Scale::Linear(((a / step).floor() * step).max(0.0), (b / step).ceil() * step);
    }
    let steps = |v: f64| {
        let d = 10f64.powf(v.log10().floor());
        [d, 2.0 * d, 5.0 * d, 10.0 * d]
    };
    let lo = steps(lo).into_iter().rev().find(|s| *s <= lo * 1.0001).unwrap_or(lo);
    let hi = steps(hi).into_iter().find(|s| *s >= hi * 0.9999).unwrap_or(hi).max(lo * 2.0);
    Scale::Log(lo, hi)
}

/// Below this max/min ratio the latency axis is linear.
const NARROW: f64 = 4.0;

fn latency_chart(out: &mut String, d: &ChartData, top: f64) {
    let f = Frame { x: Scale::Linear(0.0, max_time(d)), y: latency_scale(d), top };
    frame(out, &f, "Latency over time", "seconds since start", "latency (ms)");
    let mut items = Vec::new();
    for (i, r) in d.runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let _ = writeln!(out, r#"<g fill="{color}" fill-opacity="0.45">"#);
        for p in &r.ok {
            let _ = writeln!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="1.6"/>"#, f.px(p.0), f.py(p.1));
        }
        let _ = writeln!(out, "</g>");
        let _ = writeln!(out, r#"<g fill="{color}" stroke="{ERROR_COLOR}" stroke-width="1.5">"#);
        for p in &r.errors {
            let (x, y) = (f.px(p.0), f.py(p.1));
            let _ = writeln!(out, r#"<rect x="{:.1}" y="{:.1}" width="4" height="4"/>"#, x - 2.0, y - 2.0);
        }
        let _ = writeln!(out, "</g>");
        let sent = || r.seconds.iter().filter(|s| s.requests > 0);
        polyline(out, &f, sent().map(|s| (s.t as f64 + 0.5, s.p99_ms)), color, 2.0, false);
        polyline(out, &f, sent().map(|s| (s.t as f64 + 0.5, s.p50_ms)), color, 1.5, true);
        items.push((color.to_owned(), format!("{} p99", r.name), false));
        items.push((color.to_owned(), format!("{} p50", r.name), true));
    }
    if d.runs.iter().any(|r| !r.errors.is_empty()) {
        items.push((ERROR_COLOR.to_owned(), "errors".to_owned(), false));
    }
    legend(out, top, &items);
}

/// A run's seconds, each with its counts by status (in the order of the statuses seen).
type StatusRows = Vec<(u64, Vec<u64>)>;

/// The statuses seen, and per run its rows.
fn status_rows(d: &ChartData) -> (Vec<u16>, Vec<StatusRows>) {
    let mut codes: Vec<u16> =
        d.runs.iter().flat_map(|r| r.seconds.iter().flat_map(|s| s.status.keys().copied())).collect();
    codes.sort_unstable();
    codes.dedup();
    let runs = d
        .runs
        .iter()
        .map(|r| {
            r.seconds
                .iter()
                .map(|s| (s.t, codes.iter().map(|c| s.status.get(c).copied().unwrap_or(0)).collect()))
                .collect()
        })
        .collect();
    (codes, runs)
}

/// Responses per second by status, one bar per run in each second (runs that never ran at the
/// same time are not added up), stacked by status, outlined in the run's colour.
fn status_chart(out: &mut String, d: &ChartData, top: f64) {
    let (codes, runs) = status_rows(d);
    let ymax = runs.iter().flatten().map(|(_, r)| r.iter().sum::<u64>()).max().unwrap_or(1).max(1) as f64;
    let f = Frame { x: Scale::Linear(0.0, max_time(d)), y: Scale::Linear(0.0, ymax * 1.1), top };
    frame(
        out,
        &f,
        "Responses per second by status (by completion time)",
        "seconds since start",
        "responses per second",
    );
    let slot = (f.px(1.0) - f.px(0.0)).max(1.0) / runs.len().max(1) as f64;
    for (k, rows) in runs.iter().enumerate() {
        let run_color = PALETTE[k % PALETTE.len()];
        for (t, row) in rows {
            let x = f.px(*t as f64) + slot * k as f64;
            let mut base = 0.0;
            for (i, n) in row.iter().enumerate() {
                if *n == 0 {
                    continue;
                }
                let (y_top, y_base) = (f.py(base + *n as f64), f.py(base));
                let _ = writeln!(
                    out,
                    r#"<rect x="{x:.1}" y="{y_top:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                    (slot * 0.9).max(0.5),
                    (y_base - y_top).max(0.5),
                    status_color(codes[i], i)
                );
                base += *n as f64;
            }
            if runs.len() > 1 && base > 0.0 {
                let _ = writeln!(
                    out,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="2" fill="{run_color}"/>"#,
                    f.py(base) - 2.0,
                    (slot * 0.9).max(0.5)
                );
            }
        }
    }
    let mut items: Vec<_> = codes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (status_color(*c, i).to_owned(), if *c == 0 { "no response".to_owned() } else { c.to_string() }, false)
        })
        .collect();
    if runs.len() > 1 {
        items.extend(
            d.runs
                .iter()
                .enumerate()
                .map(|(k, r)| (PALETTE[k % PALETTE.len()].to_owned(), format!("{} (bar top)", r.name), false)),
        );
    }
    legend(out, top, &items);
}

fn throughput_chart(out: &mut String, d: &ChartData, top: f64) {
    let ymax = d.runs.iter().flat_map(|r| r.seconds.iter().map(|s| s.requests)).max().unwrap_or(1).max(1) as f64;
    let f = Frame { x: Scale::Linear(0.0, max_time(d)), y: Scale::Linear(0.0, ymax * 1.1), top };
    frame(out, &f, "Throughput per second", "seconds since start", "requests per second");
    let mut items = Vec::new();
    for (i, r) in d.runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        polyline(out, &f, r.seconds.iter().map(|s| (s.t as f64 + 0.5, s.successes as f64)), color, 2.0, false);
        polyline(out, &f, r.seconds.iter().map(|s| (s.t as f64 + 0.5, s.requests as f64)), color, 1.5, true);
        items.push((color.to_owned(), format!("{} successes", r.name), false));
        items.push((color.to_owned(), format!("{} sent", r.name), true));
    }
    legend(out, top, &items);
}

fn hdr_chart(out: &mut String, d: &ChartData, top: f64) {
    let max_p = d.runs.iter().flat_map(|r| r.hdr.iter().map(|h| h.0)).filter(|p| *p < 100.0).fold(90.0, f64::max);
    let max_nines = nines(max_p).ceil().max(1.0);
    let ymax = d.runs.iter().flat_map(|r| r.hdr.iter().map(|h| h.1)).fold(1.0, f64::max);
    let f = Frame { x: Scale::Percentile(max_nines), y: Scale::Linear(0.0, ymax * 1.05), top };
    frame(out, &f, "Latency by percentile (HDR)", "percentile", "latency (ms)");
    let mut items = Vec::new();
    for (i, r) in d.runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts = r.hdr.iter().filter(|h| h.0 < 100.0).map(|h| (h.0, h.1));
        polyline(out, &f, pts, color, 2.0, false);
        items.push((color.to_owned(), r.name.clone(), false));
    }
    legend(out, top, &items);
}

/// The opening of an SVG document of `height` with its styles, and the title when given.
pub(super) fn document(out: &mut String, title: &str, height: f64) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif" font-size="12">"#
    );
    *out += "<style>.title{font-size:15px;font-weight:bold}.ytick{text-anchor:end}.xtick,.xlabel{text-anchor:middle}.ylabel{text-anchor:middle}.grid{stroke:#e3e3e3;stroke-width:1}.plot{fill:none;stroke:#888}.legend{font-size:12px}</style>\n";
    let _ = writeln!(out, r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#);
    if !title.is_empty() {
        let _ = writeln!(out, r#"<text x="{}" y="26" class="title" font-size="18">{}</text>"#, LEFT, esc(title));
    }
}

/// The SVG document with the chosen charts stacked.
pub fn render_svg(d: &ChartData, chart: Chart) -> String {
    let charts = chart.list();
    let title_h = if d.title.is_empty() { 0.0 } else { 36.0 };
    let height = title_h + HEIGHT * charts.len() as f64;
    let mut out = String::new();
    document(&mut out, &d.title, height);
    for (i, c) in charts.iter().enumerate() {
        let top = title_h + HEIGHT * i as f64;
        match c {
            Chart::Latency => latency_chart(&mut out, d, top),
            Chart::Status => status_chart(&mut out, d, top),
            Chart::Throughput => throughput_chart(&mut out, d, top),
            Chart::Hdr => hdr_chart(&mut out, d, top),
            Chart::All => unreachable!("expanded by list()"),
        }
    }
    out += "</svg>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        let t: Vec<String> = nice_ticks(0.0, 10.0).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0", "2", "4", "6", "8", "10"]);
        let t: Vec<String> = Scale::Log(1.0, 1000.0).ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"]);
        let t: Vec<String> = Scale::Percentile(3.0).ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0%", "90%", "99%", "99.9%"]);
        assert!((nines(99.0) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn twelve_runs_keep_twelve_colours_and_their_errors() {
        let mut b = crate::chart::ChartBuilder::new("");
        for k in 0..12u64 {
            b.start_run(&results::RunHeader::default(), &format!("run{k}"));
            for i in 0..20u64 {
                let status = if i == 7 { 500 } else { 200 };
                b.add(
                    &results::Record {
                        seq: i,
                        scheduled_us: i * 50_000,
                        latency_us: 1000 * (k + 1),
                        status,
                        ..Default::default()
                    },
                    (status == 500).then_some("500"),
                );
            }
        }
        let svg = render_svg(&b.finish(), Chart::Latency);
        let colours: std::collections::BTreeSet<&str> =
            svg.split("<polyline ").skip(1).filter_map(|p| p.split("stroke=\"").nth(1)?.split('"').next()).collect();
        assert_eq!(colours.len(), 12, "{colours:?}");
        // Each run's errors are drawn in its colour (outlined in red), not in one shared red.
        assert_eq!(svg.matches(&format!("stroke=\"{ERROR_COLOR}\" stroke-width=\"1.5\"")).count(), 12);
    }

    fn one_run(latencies_ms: &[f64]) -> ChartData {
        let mut b = crate::chart::ChartBuilder::new("");
        b.start_run(&results::RunHeader::default(), "run");
        for (i, ms) in latencies_ms.iter().enumerate() {
            let r = results::Record {
                seq: i as u64,
                scheduled_us: i as u64 * 10_000,
                latency_us: (ms * 1000.0) as u64,
                status: 200,
                ..Default::default()
            };
            b.add(&r, None);
        }
        b.finish()
    }

    #[test]
    fn a_narrow_latency_range_gets_a_linear_axis_that_spreads_it() {
        // A 1 s origin: 1,000-1,017 ms. On a log axis from 1 to 2 s it would be one line.
        let d = one_run(&[1000.2, 1004.0, 1017.0]);
        let f = Frame { x: Scale::Linear(0.0, 1.0), y: latency_scale(&d), top: 0.0 };
        assert!(matches!(f.y, Scale::Linear(..)));
        let spread = f.py(1000.2) - f.py(1017.0);
        assert!(spread > 0.6 * (HEIGHT - TOP - BOTTOM), "spread {spread:.1}px");
        // A wide range stays logarithmic.
        assert!(matches!(latency_scale(&one_run(&[1.0, 50.0, 900.0])), Scale::Log(1.0, 1000.0)));
    }

    #[test]
    fn the_last_percentile_label_ends_inside_the_chart() {
        let mut out = String::new();
        let f = Frame { x: Scale::Percentile(6.0), y: Scale::Linear(0.0, 1.0), top: 0.0 };
        frame(&mut out, &f, "", "", "");
        let last = out.lines().rfind(|l| l.contains("class=\"xtick\"")).unwrap();
        assert!(last.contains("99.9999%") && last.contains("text-anchor:end"), "{last}");
        let first = out.lines().find(|l| l.contains("class=\"xtick\"")).unwrap();
        assert!(!first.contains("text-anchor:end"), "{first}");
    }
}
