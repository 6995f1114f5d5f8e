//! Flame graphs as SVG (inferno, the Rust port of FlameGraph): one profile's, in µs of CPU per
//! request, and the differential of two (grown in red, shrunk in blue, widths of the new).

use inferno::flamegraph::{self, Options};

use super::folded::Folded;

fn options(title: &str, subtitle: String) -> Options<'static> {
    let mut o = Options::default();
    o.title = title.to_owned();
    o.subtitle = Some(subtitle);
    o.count_name = "µs of CPU per request".into();
    o.deterministic = true;
    o.hash = true;
    o
}

/// `folded`'s flame graph; a weight is `us_per_weight` µs per request.
pub fn svg(folded: &Folded, us_per_weight: f64, title: &str) -> std::io::Result<Vec<u8>> {
    // Weights in ns per request as integers (FlameGraph's counts), shown as µs.
    let lines: Vec<String> = folded
        .stacks
        .iter()
        .map(|(s, n)| format!("{s} {}", (*n as f64 * us_per_weight * 1000.0).round() as u64))
        .collect();
    let mut o = options(title, format!("{:.1} µs of CPU per request", folded.total() as f64 * us_per_weight));
    o.factor = 0.001;
    let mut out = Vec::new();
    if lines.is_empty() {
        return Ok(empty(title));
    }
    flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut out).map_err(std::io::Error::other)?;
    Ok(out)
}

/// The differential flame graph of differential folded lines (`stack first second`, ns per
/// request): widths of the second, coloured by second minus first (`negate`: first minus second).
pub(crate) fn differential_svg(lines: &str, title: &str, subtitle: String, negate: bool) -> std::io::Result<Vec<u8>> {
    if lines.trim().is_empty() {
        return Ok(empty(title));
    }
    let mut o = options(title, subtitle);
    o.factor = 0.001;
    o.negate_differentials = negate;
    let mut out = Vec::new();
    flamegraph::from_lines(&mut o, lines.lines(), &mut out).map_err(std::io::Error::other)?;
    Ok(vivid(&String::from_utf8_lossy(&out)).into_bytes())
}

/// A differential's colours made visible. inferno tints a frame in proportion to its change
/// over the largest one, and the largest is the root's (every change passes through it): the
/// function that changed, a leaf with a tenth of the root's change, was drawn rgb(255,235,235),
/// near white. A square root of the share, on a deeper scale, draws it rgb(255,176,176), and the
/// root deep red (255,50,50); a frame that did not change stays grey.
fn vivid(svg: &str) -> String {
    const FILL: &str = "fill=\"rgb(";
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(FILL) {
        let (before, after) = rest.split_at(at + FILL.len());
        out.push_str(before);
        let Some(end) = after.find(')') else { break };
        let rgb: Vec<u8> = after[..end].split(',').filter_map(|c| c.trim().parse().ok()).collect();
        let deeper = |c: u8| {
            let share = (250.0 - f64::from(c)) / 150.0;
            (235.0 - 185.0 * share.clamp(0.0, 1.0).sqrt()).round() as u8
        };
        match rgb[..] {
            [255, g, b] if g == b && g < 250 => out.push_str(&format!("255,{0},{0}", deeper(g))),
            [r, g, 255] if r == g && r < 250 => out.push_str(&format!("{0},{0},255", deeper(r))),
            _ => out.push_str(&after[..end]),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A picture that says there was nothing to draw (inferno refuses empty input).
fn empty(title: &str) -> Vec<u8> {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"60\"><text x=\"10\" y=\"35\">{}: no samples</text></svg>",
        report::page::esc(title)
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphs_name_their_functions_and_a_differential_colours_growth() {
        let f = Folded::parse("main;serve;deflate 30\nmain;serve;write 10\n");
        let s = String::from_utf8(svg(&f, 2.0, "svc").unwrap()).unwrap();
        assert!(s.starts_with("<?xml") && s.contains("deflate") && s.contains("µs of CPU per request"), "{s}");
        let d = super::super::folded::differential(&f, 1.0, &Folded::parse("main;serve;deflate 90\n"), 1.0);
        let s = String::from_utf8(differential_svg(&d, "diff", "old -> new".into(), false).unwrap()).unwrap();
        // Grown frames are red: inferno fills them rgb(255,...).
        assert!(s.contains("deflate") && s.contains("rgb(255,"), "{s}");
        // Work that vanished (gzip off) has no width on the new shape; on the old one it is blue.
        let off = Folded::parse("main;serve;write 10\n");
        let gone = super::super::folded::differential(&off, 1.0, &f, 1.0);
        let s = String::from_utf8(differential_svg(&gone, "diff", "old shape".into(), true).unwrap()).unwrap();
        let deflate = s.find("deflate").expect("deflate drawn on the old shape");
        let frame = &s[s[..deflate].rfind("<g").unwrap()..deflate + 200];
        assert!(frame.contains("fill=\"rgb(") && frame.contains(",255)"), "blue: {frame}");
        assert!(String::from_utf8(svg(&Folded::default(), 1.0, "none").unwrap()).unwrap().contains("no samples"));
    }

    #[test]
    fn a_small_change_is_tinted_so_a_reader_sees_it() {
        // The root carries the whole change; a frame with a tenth of it was near white.
        assert_eq!(vivid(r#"<rect fill="rgb(255,235,235)"/>"#), r#"<rect fill="rgb(255,176,176)"/>"#);
        assert_eq!(
            vivid(r#"fill="rgb(255,100,100)" fill="rgb(100,100,255)""#),
            r#"fill="rgb(255,50,50)" fill="rgb(50,50,255)""#
        );
        // No change, and the other palettes' colours, as they were.
        for same in [r#"fill="rgb(250,250,250)""#, r#"fill="rgb(230,120,40)""#, "no fill at all"] {
            assert_eq!(vivid(same), same);
        }
    }
}
