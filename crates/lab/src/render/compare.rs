//! A comparison's outputs: the table on the terminal, `compare.md`, `compare.json`, and a
//! self-contained `compare.html` with each cell's old and new latency percentiles (HDR) in one
//! chart, as `plot --chart hdr` draws them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use report::chart::{render_png, render_svg, Chart, ChartBuilder, ChartData};

use super::charts::Figure;
use crate::compare::{Change, Changes, Row, Rule};
use crate::measure::estimate::Basis;
use crate::side::Side;

fn change(r: &Row) -> String {
    match r.ci_pct {
        Some((lo, hi)) => format!("{:+.1}% [{:+.1}, {:+.1}]", r.change_pct, lo, hi),
        None => format!("{:+.1}%", r.change_pct),
    }
}

fn verdict(r: &Row) -> String {
    match &r.note {
        Some(n) if r.verdict == Change::Same => format!("~ ({n})"),
        _ => r.verdict.label().to_owned(),
    }
}

/// The table for a terminal, benchstat-like: one block per cell, a geomean line, what was left
/// out, and the gate.
pub fn text(o: &Changes) -> String {
    let mut s = format!("old: {}\nnew: {}\n", o.old, o.new);
    let mut cell = String::new();
    for r in &o.rows {
        let here = format!("{} at {}", r.target, r.load);
        if here != cell {
            let _ = write!(
                s,
                "\n{here}\n  {:<14} {:>12} {:>12}  {:<26} {:>6}  verdict\n",
                "metric", "old", "new", "change [95%]", "p"
            );
            cell = here;
        }
        let _ = writeln!(
            s,
            "  {:<14} {:>12} {:>12}  {:<26} {:>6}  {}",
            r.metric.name(),
            r.metric.show(r.old),
            r.metric.show(r.new),
            change(r),
            r.p.map_or("-".into(), |p| format!("{p:.3}")),
            verdict(r)
        );
    }
    if !o.geomean_pct.is_empty() {
        let g: Vec<String> = o.geomean_pct.iter().map(|(m, g)| format!("{} {g:+.1}%", m.name())).collect();
        let _ = writeln!(s, "\ngeomean: {}", g.join(", "));
    }
    for (what, list) in [("only in old", &o.only_old), ("only in new", &o.only_new), ("left out", &o.excluded)] {
        for l in list.iter() {
            let _ = writeln!(s, "{what}: {l}");
        }
    }
    for d in &o.profiles {
        s += &super::profiles::differential_text(d);
    }
    for p in &o.profile_problems {
        let _ = writeln!(s, "{p}");
    }
    for t in &o.tails {
        let _ = writeln!(s, "tail: {}", t.text());
    }
    if let Some(c) = &o.calibration {
        let _ = writeln!(s, "\n{}", crate::measure::ab::calibrated_sentence(c, o.calibration_labs));
    } else if let Some(rows) = one_run_rows(o) {
        let _ = writeln!(s, "\n{}", crate::measure::ab::one_run_sentence(Some(rows)));
    }
    if let Some(h) = o.held_to() {
        let _ = writeln!(s, "\n{h}");
    }
    for f in &o.failed {
        let _ = writeln!(s, "FAILED {f}");
    }
    for n in &o.not_judged {
        let _ = writeln!(s, "{n}");
    }
    s
}

/// How many rows were judged on one run a side, of how many, when any was.
fn one_run_rows(o: &Changes) -> Option<(usize, usize)> {
    let one = o.rows.iter().filter(|r| r.basis == Basis::WithinRun).count();
    (one > 0).then_some((one, o.rows.len()))
}

fn basis_text(o: &Changes) -> String {
    let mut s = crate::measure::ab::method_text();
    if let Some(c) = &o.calibration {
        s = format!("{}\n\n{s}", crate::measure::ab::calibrated_sentence(c, o.calibration_labs));
    } else if let Some(rows) = one_run_rows(o) {
        s = format!("{}\n\n{s}", crate::measure::ab::one_run_sentence(Some(rows)));
    }
    let _ = write!(
        s,
        " A change is better or worse when its 95% interval excludes 0 and it is beyond the {}% threshold; \
         otherwise `~`.",
        o.threshold_pct
    );
    s
}

/// `compare.md`; `charts` are (title, relative path) of the images written beside it.
pub(crate) fn markdown(o: &Changes, charts: &[(String, String)]) -> String {
    let mut md = format!("# What changed\n\nOld: `{}`. New: `{}`.\n\n{}\n\n", o.old, o.new, basis_text(o));
    if !o.failed.is_empty() {
        let _ = writeln!(
            md,
            "**Failed the gate** ({}):\n",
            o.gates.iter().map(|g| g.text()).collect::<Vec<_>>().join(", ")
        );
        for f in &o.failed {
            let _ = writeln!(md, "- {f}");
        }
        let _ = writeln!(md);
    } else if !o.not_judged.is_empty() {
        let _ = writeln!(md, "**Not judged**:\n");
        for n in &o.not_judged {
            let _ = writeln!(md, "- {n}");
        }
        let _ = writeln!(md);
    } else if !o.gates.is_empty() {
        let _ = writeln!(md, "The gate held: {}.\n", o.gates.iter().map(|g| g.text()).collect::<Vec<_>>().join(", "));
    }
    if let Some(h) = o.held_to() {
        let _ = writeln!(md, "{h}\n");
    }
    let _ = writeln!(md, "| target | load | metric | old | new | change [95%] | p | verdict | basis |\n|---|---|---|---|---|---|---|---|---|");
    for r in &o.rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.target,
            r.load,
            r.metric.name(),
            r.metric.show(r.old),
            r.metric.show(r.new),
            change(r),
            r.p.map_or("-".into(), |p| format!("{p:.3}")),
            verdict(r).replace('|', "/"),
            if r.basis == Basis::Repeats { "repeats" } else { "within runs" }
        );
    }
    if !o.geomean_pct.is_empty() {
        let g: Vec<String> = o.geomean_pct.iter().map(|(m, g)| format!("{} {g:+.1}%", m.name())).collect();
        let _ = writeln!(md, "\nGeometric mean of new / old over the cells: {}.", g.join(", "));
    }
    for (what, list) in [
        ("Only in old (not compared)", &o.only_old),
        ("Only in new (not compared)", &o.only_new),
        ("Steps left out", &o.excluded),
    ] {
        if !list.is_empty() {
            let _ = writeln!(md, "\n{what}:\n");
            for l in list.iter() {
                let _ = writeln!(md, "- {}", l.replace('|', "/"));
            }
        }
    }
    if !o.profiles.is_empty() || !o.profile_problems.is_empty() {
        let _ = writeln!(md, "\n## Where the CPU per request moved\n");
        for d in &o.profiles {
            md += &super::profiles::differential_md(d);
        }
        for p in &o.profile_problems {
            let _ = writeln!(md, "- {p}");
        }
    }
    if !o.tails.is_empty() {
        let _ = writeln!(md, "\n## What grew in the tail\n");
        let _ = writeln!(
            md,
            "Per cell traced on both sides, the span whose self time in the slowest 1% of requests grew most (a mean \
             over each side's steps; its interval with two or more steps a side):\n"
        );
        for t in &o.tails {
            // The span's name is the target's words: its markup is shown, never passed through.
            let _ = writeln!(md, "- {}", t.text().replace('|', "/").replace('<', "&lt;").replace('>', "&gt;"));
        }
    }
    if !charts.is_empty() {
        let _ = writeln!(md, "\n## Latency by percentile, old and new\n");
        for (t, p) in charts {
            let _ = writeln!(md, "![{t}]({p})\n");
        }
    }
    md
}

/// Per cell present on both sides, the HDR curves of its first old and new step.
fn figures(old: &Side, new: &Side) -> Vec<Figure> {
    let mut out = Vec::new();
    for (key, n) in &new.cells {
        let Some(o) = old.cells.get(key) else { continue };
        let mut b = ChartBuilder::new(format!("{} at {}", n.target, n.label));
        let mut fed = 0;
        for (side, c) in [("old", o), ("new", n)] {
            let Some(step) = c.steps.first().filter(|s| !s.files.is_empty()) else { continue };
            // The side's lab folder too: both sides' steps have the same id.
            let folder = step.files[0]
                .parent()
                .and_then(Path::parent)
                .map_or_else(String::new, |f| format!(" ({})", f.display()));
            b.source(format!("{side}{folder} {}", step.id));
            let read = step.files.iter().all(|file| {
                let Ok(f) = std::fs::File::open(file) else { return false };
                let mut reader = results::Reader::new(std::io::BufReader::new(f), file.display().to_string());
                // The step without its warm-up, as the table beside it counts it.
                results::feed(&mut reader, &mut results::WithoutWarmup::new(&mut b)).is_ok()
            });
            fed += usize::from(read);
        }
        if fed == 2 {
            let data: ChartData = b.finish();
            out.push(Figure {
                stem: format!("compare-{}", out.len() + 1),
                title: data.title.clone(),
                svg: render_svg(&data, Chart::Hdr),
            });
        }
    }
    out
}

/// Writes compare.md, compare.html (self-contained) and compare.json into `dir`, the charts as
/// PNG in `dir/charts/`; returns the three files.
/// `new` against `old` under `rule`, the profiles of both sides diffed, and every file of the
/// comparison written into `dir`: what `lab compare` and a plan's `[baseline]` share.
pub fn compared(old: &Side, new: &Side, rule: Rule, dir: &Path) -> std::io::Result<(Changes, Vec<PathBuf>)> {
    let outcome = crate::compare::with_profiles(crate::compare::changes(old, new, rule), old, new, dir);
    let files = write(&outcome, old, new, dir)?;
    Ok((outcome, files))
}

pub(crate) fn write(o: &Changes, old: &Side, new: &Side, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    fn named(p: &Path) -> impl Fn(std::io::Error) -> std::io::Error + '_ {
        move |e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    }
    std::fs::create_dir_all(dir).map_err(named(dir))?;
    let figures = figures(old, new);
    let mut images = Vec::new();
    if !figures.is_empty() {
        let charts = dir.join("charts");
        std::fs::create_dir_all(&charts).map_err(named(&charts))?;
        for f in &figures {
            let png = render_png(&f.svg, 1.5).map_err(std::io::Error::other)?;
            results::files::put(&charts.join(format!("{}.png", f.stem)), &png)?;
            images.push((f.title.clone(), format!("charts/{}.png", f.stem)));
        }
    }
    let md_text = markdown(o, &images);
    let (md, page, json) = (dir.join("compare.md"), dir.join("compare.html"), dir.join("compare.json"));
    results::files::put(&md, md_text.as_bytes())?;
    results::files::put(
        &page,
        super::html::render("What changed", &md_text, &figures, &super::html::flames(dir, &md_text), None).as_bytes(),
    )?;
    results::files::put(&json, &serde_json::to_vec_pretty(o).map_err(std::io::Error::other)?)?;
    Ok(vec![md, page, json])
}
