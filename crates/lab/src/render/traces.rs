//! report.md's "Where the tail's time went": for each traced step, the slowest 1% of its
//! counted requests against its median ones, by the self time of each span name, what no span
//! covers, and the trace ids of the slowest, to open in Jaeger or Tempo.

use std::fmt::Write;

use results::duration::show_us;

use crate::lab_json::Lab;

/// Span names a step's table lists (the rest in one row).
const ROWS: usize = 8;

fn share(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        format!("{:.0}%", 100.0 * part / whole)
    } else {
        "-".into()
    }
}

/// A span name for report.md (names are plain already): `|` would end a table's cell, and
/// markup is the target's, never the page's (a renderer that passes HTML through would run it).
fn cell(name: &str) -> String {
    name.replace('|', "/").replace('`', "'").replace('<', "&lt;").replace('>', "&gt;")
}

/// The section; `charts` are the tail charts written beside the report (title, relative path:
/// `charts/tail-N.png`, `charts/waterfall-N.png` for step N), none for a report without charts.
pub(crate) fn markdown(lab: &Lab, charts: &[(String, String)]) -> String {
    let mut md = String::new();
    if !lab.steps.iter().any(|s| s.traces.is_some()) {
        return md;
    }
    let _ = writeln!(md, "## Where the tail's time went\n");
    let _ = writeln!(
        md,
        "Each request of a traced target carried a W3C `traceparent`; the spans the target exported over OTLP \
         were joined to the requests by their trace ids. For the slowest 1% of a step's counted requests and its \
         median ones (those between the 45th and 55th percentile): each span name's *self* time (its length less \
         what its children cover), a mean over the requests with spans, and the time no span covers (the network \
         and the queues before the server's first span).\n"
    );
    for (i, s) in lab.steps.iter().enumerate() {
        let Some(t) = &s.traces else { continue };
        let _ = writeln!(md, "### {}\n", s.id);
        if let Some(why) = &t.missing {
            let _ = writeln!(md, "- {}\n", why.replace('|', "/"));
        }
        if let Some(e) = &t.exported {
            let _ = writeln!(
                md,
                "- {}: each the parent of the target's span of its request.\n",
                e.line().replace('|', "/")
            );
        }
        let Some(tail) = &t.tail else {
            let _ = writeln!(md, "No counted requests.\n");
            continue;
        };
        let (slow, med) = (&tail.slowest, &tail.median);
        if slow.with_spans == 0 && med.with_spans == 0 {
            let _ =
                writeln!(md, "No spans came for these requests: is the target instrumented, and sending to the lab?\n");
            continue;
        }
        let lead = |g: &spans::Group| {
            g.names.first().map_or_else(
                || format!("{} (no span)", show_us(g.latency_us)),
                |n| {
                    format!(
                        "{} {} of {} ({})",
                        cell(&n.name),
                        show_us(n.self_us),
                        show_us(g.latency_us),
                        share(n.self_us, g.latency_us)
                    )
                },
            )
        };
        let _ = writeln!(
            md,
            "**The slowest 1% ({} of {} with spans): {}; median requests ({} of {}): {}.**\n",
            slow.with_spans,
            slow.requests,
            lead(slow),
            med.with_spans,
            med.requests,
            lead(med)
        );
        let _ = writeln!(md, "| span | slowest 1% | share | median | share |\n|---|---|---|---|---|");
        let mut names: Vec<&str> = slow.names.iter().map(|n| n.name.as_str()).collect();
        for n in &med.names {
            if !names.contains(&n.name.as_str()) {
                names.push(&n.name);
            }
        }
        let of = |g: &spans::Group, name: &str| g.names.iter().find(|n| n.name == name).map_or(0.0, |n| n.self_us);
        for name in names.iter().take(ROWS) {
            let (a, b) = (of(slow, name), of(med, name));
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                cell(name),
                show_us(a),
                share(a, slow.latency_us),
                show_us(b),
                share(b, med.latency_us)
            );
        }
        if names.len() > ROWS {
            let rest = |g: &spans::Group| names[ROWS..].iter().map(|n| of(g, n)).sum::<f64>();
            let (a, b) = (rest(slow), rest(med));
            let _ = writeln!(
                md,
                "| {} other spans | {} | {} | {} | {} |",
                names.len() - ROWS,
                show_us(a),
                share(a, slow.latency_us),
                show_us(b),
                share(b, med.latency_us)
            );
        }
        let _ = writeln!(
            md,
            "| (no span: network, queues) | {} | {} | {} | {} |",
            show_us(slow.uncovered_us),
            share(slow.uncovered_us, slow.latency_us),
            show_us(med.uncovered_us),
            share(med.uncovered_us, med.latency_us)
        );
        let _ =
            writeln!(md, "| **latency** | **{}** | | **{}** | |\n", show_us(slow.latency_us), show_us(med.latency_us));
        if let Some((name, grew)) = tail.grew_most().filter(|g| g.1 > 0.0) {
            let _ = writeln!(md, "Grew most in the tail: {} (+{} a request).\n", cell(name), show_us(grew));
        }
        let ids: Vec<String> = slow.trace_ids.iter().map(|i| format!("`{i}`")).collect();
        let _ = writeln!(md, "Trace ids of the slowest: {}.\n", ids.join(", "));
        for stem in ["tail", "waterfall"] {
            let path = format!("charts/{stem}-{i}.png");
            if let Some((title, _)) = charts.iter().find(|(_, p)| *p == path) {
                let _ = writeln!(md, "![{}]({path})\n", cell(title).replace(['[', ']'], ""));
            }
        }
    }
    if let Some(c) = lab.steps.iter().rev().find_map(|s| s.traces.as_ref()).map(|t| &t.receiver) {
        let dropped = c.unknown_trace + c.over_request + c.over_lab + c.malformed;
        if dropped > 0 || c.refused > 0 {
            let _ = writeln!(
                md,
                "The receiver kept {} of {} spans: {} of traces this lab did not send, {} past 64 a request, {} past \
                 the lab's bound, {} malformed; {} exports refused (not OTLP, too large, another path).\n",
                c.kept, c.received, c.unknown_trace, c.over_request, c.over_lab, c.malformed, c.refused
            );
        }
    }
    md
}

/// A ratio to three places; none (`-`) where the other side never had the span.
fn ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.3}")
    } else {
        "-".into()
    }
}

/// A span's finding in a hypothesis's sentence: ` In the slowest 1%, db.query: **supported**
/// (e.g. 50 req/s: 40.2ms -> 2.1ms of self time, ratio 0.052).`
pub(crate) fn span_sentence(f: &crate::measure::span::SpanFinding, emphasis: &str) -> String {
    let e = f.points.iter().find(|p| p.finding == f.finding).or(f.points.first());
    let effect = e.map_or(" (no load point has spans of both sides)".into(), |p| {
        format!(
            " (e.g. {}: {} -> {} of self time, ratio {})",
            p.point,
            show_us(p.other_us),
            show_us(p.subject_us),
            ratio(p.ratio)
        )
    });
    format!(" In the slowest 1%, {}: {emphasis}{}{emphasis}{effect}.", cell(&f.span), f.finding.label())
}

/// A hypothesis judged on a span, a line per load point: `db.query: 40.2ms -> 2.1ms of self
/// time in the slowest 1% (new -> old), ratio 0.052 [0.041, 0.066] over 3 and 3 steps; supported`.
pub(crate) fn span_text(f: &crate::measure::span::SpanFinding, subject: &str, than: &str) -> String {
    let name = cell(&f.span);
    if f.points.is_empty() {
        return format!(
            "**{name}** (self time in the slowest 1%): inconclusive: no load point has spans of both {than} and \
             {subject}."
        );
    }
    let mut s = format!("**{name}** (self time in the slowest 1%, from the spans): **{}**.\n", f.finding.label());
    for p in &f.points {
        let ci = p.ci.map_or_else(
            || {
                if p.steps.0 < 2 || p.steps.1 < 2 {
                    " (one step a side: no interval)".to_owned()
                } else {
                    format!(" (no interval: {than}'s slowest requests never had it)")
                }
            },
            |(lo, hi)| format!(" [{lo:.3}, {hi:.3}] over {} and {} steps", p.steps.0, p.steps.1),
        );
        s += &format!(
            "\n- {}: {name}: {} -> {} of self time in the slowest 1% ({than} -> {subject}), ratio {}{ci}; {}",
            p.point,
            show_us(p.other_us),
            show_us(p.subject_us),
            ratio(p.ratio),
            p.finding.label()
        );
    }
    s
}
