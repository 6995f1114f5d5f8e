//! report.html's pictures of where a traced step's tail went: the slowest 1% against the median
//! requests as two bars split by span self time (and what no span covers), and the slowest
//! request's spans as a waterfall. Drawn here as plain SVG: a handful of rectangles and labels,
//! every name escaped (names come from the target).

use std::fmt::Write;

use report::page::esc;
use results::duration::show_us;

use super::charts::Figure;
use crate::lab_json::Lab;

/// Span names drawn in their own colour; the rest share one.
const NAMED: usize = 8;

/// Waterfall rows drawn at most (a request keeps at most 64 spans).
const ROWS: usize = 64;

const PALETTE: [&str; NAMED] = ["#4e79a7", "#e15759", "#f28e2b", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"];
const OTHER: &str = "#bab0ac";
const UNCOVERED: &str = "#e8e8e8";

const WIDTH: f64 = 900.0;
const LEFT: f64 = 190.0;
const RIGHT: f64 = 90.0;
const FONT: &str = r#"font-family="DejaVu Sans, Arial, sans-serif" font-size="12""#;

fn x_of(v: f64, scale: f64) -> f64 {
    LEFT + (WIDTH - LEFT - RIGHT) * (v / scale).clamp(0.0, 1.0)
}

/// The time scale under a chart's bars at `y`: from 0 to `scale` µs.
fn axis(svg: &mut String, y: f64, scale: f64) {
    let end = x_of(scale, scale);
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" y1="{y}" x2="{end:.1}" y2="{y}" stroke="#888"/><text x="{LEFT}" y="{}">0</text><text x="{end:.1}" y="{}" text-anchor="end">{}</text>"##,
        y + 14.0,
        y + 14.0,
        show_us(scale)
    );
}

/// The charts of every traced step whose requests had spans: `tail-N` and `waterfall-N`, N the
/// step's place in the lab.
pub(crate) fn figures(lab: &Lab) -> Vec<Figure> {
    let mut out = Vec::new();
    for (i, s) in lab.steps.iter().enumerate() {
        let Some(tail) = s.traces.as_ref().and_then(|t| t.tail.as_ref()) else { continue };
        if tail.slowest.with_spans == 0 && tail.median.with_spans == 0 {
            continue;
        }
        out.push(Figure {
            stem: format!("tail-{i}"),
            title: format!("{}: where the slowest 1% and the median requests spent their time", s.id),
            svg: groups(tail),
        });
        if let Some(w) = &tail.waterfall {
            out.push(Figure {
                stem: format!("waterfall-{i}"),
                title: format!("{}: the slowest request's spans (trace {})", s.id, w.trace_id),
                svg: waterfall(w, &coloured(tail)),
            });
        }
    }
    out
}

/// The span names drawn in colours of their own, in the palette's order: the slowest requests'
/// largest first, then the median ones'; a step's two pictures colour a name alike.
fn coloured(tail: &spans::Tail) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for n in tail.slowest.names.iter().chain(&tail.median.names) {
        if names.len() < NAMED && !names.contains(&n.name.as_str()) {
            names.push(&n.name);
        }
    }
    names
}

fn colour_in(names: &[&str], name: &str) -> &'static str {
    names.iter().position(|n| *n == name).map_or(OTHER, |i| PALETTE[i])
}

/// Two bars (the slowest 1%, the median requests), each split by span name's self time, then
/// what no span covers; one scale, so the bars' lengths compare.
fn groups(tail: &spans::Tail) -> String {
    let names = coloured(tail);
    let colour = |name: &str| colour_in(&names, name);
    let total = |g: &spans::Group| g.names.iter().map(|n| n.self_us).sum::<f64>() + g.uncovered_us;
    let scale = total(&tail.slowest).max(total(&tail.median)).max(1.0);
    let legend_rows = (names.len() + 2).div_ceil(4);
    let height = 40.0 + 2.0 * 34.0 + 24.0 + 20.0 * legend_rows as f64;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" {FONT}><rect width="100%" height="100%" fill="white"/>"#
    );
    for (row, (label, g)) in [("slowest 1%", &tail.slowest), ("median", &tail.median)].into_iter().enumerate() {
        let y = 20.0 + row as f64 * 34.0;
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">{} ({} of {})</text>"#,
            LEFT - 8.0,
            y + 17.0,
            label,
            g.with_spans,
            g.requests
        );
        let mut at = 0.0;
        let parts = g.names.iter().map(|n| (n.name.as_str(), n.self_us, colour(&n.name)));
        for (name, us, fill) in parts.chain(std::iter::once(("no span", g.uncovered_us, UNCOVERED))) {
            if us <= 0.0 {
                continue;
            }
            let (x0, x1) = (x_of(at, scale), x_of(at + us, scale));
            let _ = write!(
                svg,
                r#"<rect x="{x0:.1}" y="{y}" width="{:.1}" height="24" fill="{fill}" stroke="white"><title>{}: {}</title></rect>"#,
                (x1 - x0).max(0.5),
                esc(name),
                show_us(us)
            );
            at += us;
        }
        let _ =
            write!(svg, r#"<text x="{:.1}" y="{}">{}</text>"#, x_of(at, scale) + 6.0, y + 17.0, show_us(g.latency_us));
    }
    // The scale, then the legend.
    let axis_y = 20.0 + 2.0 * 34.0;
    axis(&mut svg, axis_y, scale);
    let entries = names.iter().map(|n| (*n, colour(n))).chain([("other spans", OTHER), ("no span", UNCOVERED)]);
    for (k, (name, fill)) in entries.enumerate() {
        let (x, y) = (LEFT + (k % 4) as f64 * 170.0, axis_y + 30.0 + (k / 4) as f64 * 20.0);
        let short: String = name.chars().take(24).collect();
        let _ = write!(
            svg,
            r##"<rect x="{x}" y="{}" width="12" height="12" fill="{fill}" stroke="#999"/><text x="{}" y="{y}">{}</text>"##,
            y - 10.0,
            x + 16.0,
            esc(&short)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The spans of one request, a row each in the order they began, indented by depth, coloured as
/// `names` (the step's other picture) colours them.
fn waterfall(w: &spans::Waterfall, names: &[&str]) -> String {
    let bars = &w.spans[..w.spans.len().min(ROWS)];
    let end = bars.iter().map(|b| b.start_us + b.length_us).fold(0.0, f64::max);
    let scale = end.max(1.0);
    let colour = |name: &str| colour_in(names, name);
    let height = 30.0 + 22.0 * bars.len() as f64 + 30.0;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" {FONT}><rect width="100%" height="100%" fill="white"/>"#
    );
    let _ = write!(
        svg,
        r#"<text x="8" y="16">the client saw {}; the spans cover {}</text>"#,
        show_us(w.latency_us),
        show_us(end)
    );
    for (row, b) in bars.iter().enumerate() {
        let y = 28.0 + 22.0 * row as f64;
        let indent = 8.0 + 10.0 * b.depth.min(8) as f64;
        let label: String = b.name.chars().take(((LEFT - indent) / 7.0) as usize).collect();
        let (x0, x1) = (x_of(b.start_us, scale), x_of(b.start_us + b.length_us, scale));
        let _ = write!(
            svg,
            r#"<text x="{indent}" y="{}">{}</text><rect x="{x0:.1}" y="{y}" width="{:.1}" height="16" fill="{}"><title>{}: {} from {}</title></rect><text x="{:.1}" y="{}">{}</text>"#,
            y + 12.0,
            esc(&label),
            (x1 - x0).max(1.0),
            colour(&b.name),
            esc(&b.name),
            show_us(b.length_us),
            show_us(b.start_us),
            x1 + 4.0,
            y + 12.0,
            show_us(b.length_us)
        );
    }
    let axis_y = 30.0 + 22.0 * bars.len() as f64;
    axis(&mut svg, axis_y, scale);
    if w.spans.len() > bars.len() {
        let _ =
            write!(svg, r#"<text x="8" y="{}">and {} more spans</text>"#, axis_y + 14.0, w.spans.len() - bars.len());
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(names: &[(&str, f64)], latency_us: f64) -> spans::Group {
        spans::Group {
            requests: 2,
            with_spans: 2,
            latency_us,
            names: names.iter().map(|(n, t)| spans::NameTime { name: (*n).into(), self_us: *t }).collect(),
            uncovered_us: 800.0,
            trace_ids: Vec::new(),
        }
    }

    #[test]
    fn bars_and_a_waterfall_with_every_name_escaped() {
        let hostile = "<script>alert(1)</script>";
        let tail = spans::Tail {
            slowest: group(&[("db.query", 40_000.0), (hostile, 1_000.0)], 42_000.0),
            median: group(&[("db.query", 2_000.0), (hostile, 1_000.0)], 4_000.0),
            waterfall: Some(spans::Waterfall {
                trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
                latency_us: 42_500.0,
                spans: vec![
                    spans::Bar { name: "GET".into(), start_us: 0.0, length_us: 41_500.0, depth: 0 },
                    spans::Bar { name: "db.query".into(), start_us: 100.0, length_us: 40_000.0, depth: 1 },
                    spans::Bar { name: hostile.into(), start_us: 40_200.0, length_us: 1_000.0, depth: 1 },
                ],
            }),
        };
        let svg = groups(&tail);
        assert!(!svg.contains("<script") && svg.contains("&lt;script&gt;"), "{svg}");
        assert!(svg.contains("slowest 1% (2 of 2)") && svg.contains("db.query: 40.00ms"), "{svg}");
        // One scale: the slowest bar's db.query spans most of the width, the median's a twentieth.
        let widths: Vec<f64> = svg
            .split("<rect x=")
            .skip(1)
            .filter(|r| r.contains("<title>db.query"))
            .map(|r| r.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(widths.len(), 2, "{svg}");
        assert!((widths[0] / widths[1] - 20.0).abs() < 0.5, "{widths:?}");
        let svg = waterfall(tail.waterfall.as_ref().unwrap(), &coloured(&tail));
        // db.query in the same colour in both pictures.
        assert!(svg.contains(&format!("fill=\"{}\"><title>db.query", PALETTE[0])), "{svg}");
        assert!(!svg.contains("<script") && svg.contains("the client saw 42.50ms"), "{svg}");
        assert_eq!(svg.matches("<title>").count(), 3, "{svg}");
        // Both parse as XML.
        for svg in [groups(&tail), svg] {
            assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
            assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        }
    }
}
