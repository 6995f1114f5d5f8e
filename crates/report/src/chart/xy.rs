//! Line charts of one number against another, for comparisons across steps: latency and success
//! against the rate per target (a ladder), requests per second against connections per target
//! and protocol (a sweep), CPU, memory and scraped series over time. Same look as the run charts
//! (same axes, palette and legend), series told apart by colour and, past the palette, dashes.

use std::fmt::Write;

use serde::Serialize;

use super::svg::{document, frame, legend, polyline, Frame, Scale, ERROR_COLOR, HEIGHT, PALETTE};

/// A named line.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (a second measure of the same thing, e.g. success-only latency).
    pub dashed: bool,
    /// Palette index, so lines of one subject share a colour; `None` takes the series' index.
    pub color: Option<usize>,
}

/// One chart.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct XyChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// A log y axis (latencies spanning decades).
    pub log_y: bool,
    pub series: Vec<Series>,
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |b, v| Some(b.map_or((v, v), |(lo, hi): (f64, f64)| (lo.min(v), hi.max(v)))))
}

fn draw(out: &mut String, c: &XyChart, top: f64) {
    let (x0, x1) = bounds(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0))).unwrap_or((0.0, 1.0));
    let (y0, y1) = bounds(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1))).unwrap_or((0.0, 1.0));
    let x = Scale::Linear(x0.min(0.0), if x1 > x0.min(0.0) { x1 } else { x0.min(0.0) + 1.0 });
    let y = if c.log_y && y0 > 0.0 {
        // Decades around the data, so a narrow range is not squashed onto one line.
        let lo = 10f64.powf(y0.log10().floor());
        let hi = 10f64.powf(y1.log10().ceil()).max(lo * 10.0);
        Scale::Log(lo, hi)
    } else {
        Scale::Linear(0.0, if y1 > 0.0 { y1 * 1.1 } else { 1.0 })
    };
    let f = Frame { x, y, top };
    frame(out, &f, &c.title, &c.x_label, &c.y_label);
    let mut items = Vec::new();
    for (i, s) in c.series.iter().enumerate() {
        let index = s.color.unwrap_or(i);
        let color = PALETTE[index % PALETTE.len()];
        // Past the palette, lines repeat a colour: dash them so they stay apart.
        let dashed = s.dashed || index >= PALETTE.len();
        polyline(out, &f, s.points.iter().copied(), color, 2.0, dashed);
        let _ = writeln!(out, r#"<g fill="{color}">"#);
        for (px, py) in &s.points {
            let _ = writeln!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="3"/>"#, f.px(*px), f.py(*py));
        }
        let _ = writeln!(out, "</g>");
        items.push((color.to_owned(), s.name.clone(), dashed));
    }
    if c.series.is_empty() {
        let _ = writeln!(out, r#"<text x="480" y="{}" fill="{ERROR_COLOR}">no data</text>"#, top + HEIGHT / 2.0);
    }
    legend(out, top, &items);
}

/// The charts stacked in one SVG document.
pub fn render_xy_svg(title: &str, charts: &[XyChart]) -> String {
    let title_h = if title.is_empty() { 0.0 } else { 36.0 };
    let mut out = String::new();
    document(&mut out, title, title_h + HEIGHT * charts.len() as f64);
    for (i, c) in charts.iter().enumerate() {
        draw(&mut out, c, title_h + HEIGHT * i as f64);
    }
    out += "</svg>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_drawn_with_its_legend() {
        let chart = XyChart {
            title: "p99 vs rate".into(),
            x_label: "requests per second".into(),
            y_label: "latency (ms)".into(),
            log_y: true,
            series: (0..18)
                .map(|i| Series {
                    name: format!("t{i}"),
                    points: vec![(100.0, 10.0 + i as f64), (200.0, 20.0 * (i + 1) as f64)],
                    dashed: false,
                    color: None,
                })
                .collect(),
        };
        let svg = render_xy_svg("lab", &[chart]);
        assert_eq!(svg.matches("<polyline").count(), 18);
        assert!(svg.contains(">t17<") && svg.contains(">p99 vs rate<"));
        // The 17th and 18th series reuse colours, dashed.
        assert_eq!(svg.matches(r#"stroke-dasharray="5 3""#).count(), 2);
        assert!(crate::chart::render_png(&svg, 1.0).is_ok());
    }
}
