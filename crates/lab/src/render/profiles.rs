//! The profiles in a lab's report: each profiled step's functions in µs of CPU per request with
//! its flame graph, profiles asked for and not taken, and the differentials of the lab's pairs.

use std::fmt::Write;
use std::path::Path;

use crate::lab_json::Lab;
use crate::plan::matrix::{Axes, Point};
use profile::diff::{self, Differential};
use results::duration::{show_change_us, show_us};

/// The lab's pairs of profiles, compared: each hypothesis's subject against the other at each
/// point, and without hypotheses each variant against the first.
pub(crate) fn differentials(lab: &Lab, dir: &Path) -> (Vec<Differential>, Vec<String>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    let first = |t: usize, p: usize| {
        lab.steps
            .iter()
            .filter(|s| s.target == t && s.point == p && s.uncounted.is_none())
            .find_map(|s| s.profile.as_ref().map(|pr| (s, pr)))
    };
    let target = |name: &str| lab.targets.iter().position(|t| t.name == name);
    let twin = |a: &Point, variant: &str| {
        lab.matrix.points.iter().position(|b| {
            b.variant.as_deref() == Some(variant)
                && Point { variant: None, ..b.clone() } == Point { variant: None, ..a.clone() }
        })
    };
    let mut pairs: Vec<((usize, usize), (usize, usize))> = Vec::new();
    let hypotheses = &lab.findings.hypotheses;
    for h in hypotheses {
        match (target(&h.subject), target(&h.than)) {
            (Some(a), Some(b)) => pairs.extend((0..lab.matrix.points.len()).map(|p| ((b, p), (a, p)))),
            _ => {
                for (pa, a) in
                    lab.matrix.points.iter().enumerate().filter(|(_, p)| p.variant.as_deref() == Some(&h.subject))
                {
                    if let Some(pb) = twin(a, &h.than) {
                        pairs.extend((0..lab.targets.len()).map(|t| ((t, pb), (t, pa))));
                    }
                }
            }
        }
    }
    if hypotheses.is_empty() {
        let variants: Vec<&str> = lab.matrix.points.iter().filter_map(|p| p.variant.as_deref()).collect();
        if let Some(base) = variants.first() {
            for (pa, a) in lab.matrix.points.iter().enumerate().filter(|(_, p)| p.variant.as_deref() != Some(base)) {
                if let Some(pb) = twin(a, base) {
                    pairs.extend((0..lab.targets.len()).map(|t| ((t, pb), (t, pa))));
                }
            }
        }
    }
    pairs.dedup();
    for (n, ((tb, pb), (ta, pa))) in pairs.into_iter().enumerate() {
        let (Some((sb, b)), Some((sa, a))) = (first(tb, pb), first(ta, pa)) else { continue };
        let name = |t: usize, p: usize| {
            let point = &lab.matrix.points[p];
            format!("{} {}", lab.targets[t].name, point.label(&Axes { rate: false, ..Axes::set_in(point) }))
        };
        let at = &lab.matrix.points[pa];
        let title = format!(
            "{} against {} at {}",
            name(ta, pa),
            name(tb, pb),
            at.label(&Axes { variant: false, ..lab.matrix.axes })
        );
        match diff::compare((b, dir, &sb.id), (a, dir, &sa.id), dir, "profiles", &format!("diff-{}", n + 1), &title) {
            Ok(d) => out.push(d),
            Err(e) => problems.push(format!("differential of {} and {} not drawn: {e}", sb.id, sa.id)),
        }
    }
    (out, problems)
}

/// `## Profiles`: nothing when no target was profiled.
pub(crate) fn markdown(lab: &Lab, diffs: &[Differential], problems: &[String]) -> String {
    let mut md = String::new();
    let asked = lab.steps.iter().any(|s| s.profile.is_some() || s.profile_missing.is_some());
    if !asked {
        return md;
    }
    let _ = writeln!(md, "## Profiles\n");
    let _ = writeln!(md, "Where each profiled target's CPU went during a step's measured window (after the warm-up), in µs of CPU per request: the processes' CPU time in the window, shared out by their samples and divided by the successful requests the step counted (as the CPU per request in the tables: a target that fails fast is not read as cheaper). *Self* is in the function itself, *total* with what it calls.\n");
    for s in &lab.steps {
        if let Some(why) = &s.profile_missing {
            let _ = writeln!(md, "- **{}**: {why}", s.id);
        }
    }
    if lab.steps.iter().any(|s| s.profile_missing.is_some()) {
        let _ = writeln!(md);
    }
    for d in diffs {
        md += &differential_md(d);
    }
    for s in &lab.steps {
        let Some(p) = &s.profile else { continue };
        let _ = writeln!(md, "### {}\n", s.id);
        let _ = writeln!(
            md,
            "{}, {} samples, {:.2} CPU-s over {} requests: **{} of CPU per request**.\n",
            p.source,
            p.samples,
            p.cpu_s,
            p.requests,
            show_us(p.us_per_request)
        );
        for n in &p.notes {
            let _ = writeln!(md, "- {n}");
        }
        if !p.notes.is_empty() {
            let _ = writeln!(md);
        }
        let _ = writeln!(md, "| function | self | self % | total | total % |\n|---|---|---|---|---|");
        for f in &p.top {
            let _ = writeln!(
                md,
                "| `{}` | {} | {:.1}% | {} | {:.1}% |",
                f.name,
                show_us(f.self_us),
                f.self_share * 100.0,
                show_us(f.total_us),
                f.total_share * 100.0
            );
        }
        let _ = writeln!(md, "\n[flame graph]({})\n", p.svg);
    }
    for p in problems {
        let _ = writeln!(md, "- {p}");
    }
    md
}

/// A hypothesis judged on a function: `deflate: 38.2µs -> 0.41µs of CPU per request (300kb ->
/// gzip 300kb), ratio 0.011 [0.004, 0.03]; supported`, a line per load point.
pub(crate) fn function_text(f: &crate::measure::function::FunctionFinding, subject: &str, than: &str) -> String {
    if f.points.is_empty() {
        return format!(
            "**{}** (CPU per request): inconclusive: no load point has a profile of both {than} and {subject}.",
            f.function
        );
    }
    let mut s = format!("**{}** (CPU per request, from the profiles): **{}**.\n", f.function, f.finding.label());
    for p in &f.points {
        let ci = p.ci.map_or(String::new(), |(lo, hi)| format!(" [{lo:.3}, {hi:.3}]"));
        s += &format!(
            "\n- {}: {}: {} -> {} of CPU per request ({than} -> {subject}), ratio {:.3}{ci}; {}",
            p.point,
            f.function,
            show_us(p.other_us),
            show_us(p.subject_us),
            p.ratio,
            p.finding.label()
        );
    }
    s
}

/// A differential in Markdown: the totals, the functions that moved most, the flame graph.
pub fn differential_md(d: &Differential) -> String {
    let mut md = format!("### What changed: {}\n\n", d.title);
    let _ =
        writeln!(md, "{} -> {} of CPU per request ({} -> {}).\n", show_us(d.old_us), show_us(d.new_us), d.old, d.new);
    let _ = writeln!(
        md,
        "Ranked by the change in each function's own CPU (where the work moved); the totals, with what it \
         calls, come second.\n\n| function | own, old | own, new | own change | total, old -> new | total change |\n\
         |---|---|---|---|---|---|"
    );
    for c in &d.changes {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} -> {} | {} |",
            // In a code span markup is text; a backtick or a bar in a symbol would end it.
            results::text::plain(&c.name).replace('`', "'").replace('|', "/"),
            show_us(c.old_self_us),
            show_us(c.new_self_us),
            show_change_us(c.self_change_us()),
            show_us(c.old_us),
            show_us(c.new_us),
            show_change_us(c.change_us())
        );
    }
    let _ = writeln!(md, "\n[differential flame graph]({}) (the new shape: what grew, in red)", d.svg);
    if !d.svg_old.is_empty() {
        let _ = writeln!(md, "· [on the old shape]({}) (what shrank or is gone, in blue)", d.svg_old);
    }
    let _ = writeln!(md);
    md
}

/// A differential for a terminal: the functions that moved most, per request.
pub fn differential_text(d: &Differential) -> String {
    let mut s = format!(
        "\nCPU per request by function, {}: {} -> {}\n  {:<48} {:>10} {:>10} {:>11} {:>11}\n",
        d.title,
        show_us(d.old_us),
        show_us(d.new_us),
        "function (own CPU)",
        "old",
        "new",
        "change",
        "with calls"
    );
    for c in d.changes.iter().take(6) {
        let name: String = if c.name.chars().count() > 48 {
            c.name.chars().take(47).collect::<String>() + "…"
        } else {
            c.name.clone()
        };
        let _ = writeln!(
            s,
            "  {name:<48} {:>10} {:>10} {:>11} {:>11}",
            show_us(c.old_self_us),
            show_us(c.new_self_us),
            show_change_us(c.self_change_us()),
            show_change_us(c.change_us())
        );
    }
    let _ = writeln!(s, "  differential flame graphs: {} (new shape), {} (old shape)", d.svg, d.svg_old);
    s
}
