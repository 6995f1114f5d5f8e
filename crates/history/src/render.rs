//! A history as people and machines read it: the list of series, each series as a table over
//! commits with its change points (text and Markdown), JSON, Otava's CSV, and one HTML page.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::check::{Checked, HeldTo, Outcome, LEVEL};
use crate::series::{md_cell, plain, show, Point, Series};
use stats::change_points::{ChangePoint, Settings};

/// A value of `metric` as people write it: `12.3ms`, `99.90%`, `1200.0/s`, `38.1µs/req`.
fn when(unix_s: i64) -> String {
    chrono::DateTime::from_timestamp(unix_s, 0)
        .map_or_else(|| unix_s.to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

/// How change points were found, in one line.
pub(crate) fn settings_text(s: &Settings) -> String {
    format!(
        "change points: E-divisive means in windows of {} labs, Student's t-test p <= {}, change > {}%, \
         {} labs on each side to confirm",
        s.window,
        s.max_pvalue,
        s.min_magnitude * 100.0,
        s.min_points
    )
}

/// A change point in one line: where, the commits either side, the levels and the change.
fn change_line(s: &Series, c: &ChangePoint) -> String {
    let (lo, hi) = c.change_interval_pct();
    let before = s.points.get(c.index.wrapping_sub(1)).map_or_else(|| "-".into(), Point::short_commit);
    let after = s.points.get(c.index).map_or_else(|| "-".into(), Point::short_commit);
    let pending = if c.pending > 0 {
        format!(" (pending: {} more lab{} to confirm)", c.pending, if c.pending == 1 { "" } else { "s" })
    } else {
        String::new()
    };
    let accepted = s
        .changes
        .iter()
        .position(|x| x.index == c.index)
        .and_then(|i| s.acceptance(i))
        .map_or_else(String::new, |a| format!("; {}", a.text()));
    format!(
        "change at lab {} (after {before}, from {after}): {} -> {}, {:+.1}% [{lo:+.1}, {hi:+.1}], p = {:.2e}{pending}{accepted}",
        c.index + 1,
        show(&s.key.metric, c.mean_before),
        show(&s.key.metric, c.mean_after),
        c.change() * 100.0,
        c.pvalue
    )
}

/// `history` with no subcommand: one line per series.
pub fn list_text(series: &[Series]) -> String {
    let mut out = String::new();
    if series.is_empty() {
        out.push_str("no series yet: record labs with `lab run --history FILE` or `history add LAB_DIR`\n");
        return out;
    }
    // As wide as the longest series' name, so the columns line up whatever the plan is called.
    // A name past 120 characters runs on (a format width past 65,535 is a panic).
    let w = series.iter().map(|s| s.key.text().chars().count()).max().unwrap_or(0).clamp(6, 120);
    let _ = writeln!(out, "{:<w$} {:>5} {:>12} {:>8}  machine", "series", "labs", "last", "changes");
    for s in series {
        let last = s.points.last().map_or(f64::NAN, |p| p.value);
        let confirmed = s.changes.iter().filter(|c| c.pending == 0).count();
        let pending = s.changes.len() - confirmed;
        let changes = if pending > 0 { format!("{confirmed}+{pending}?") } else { confirmed.to_string() };
        let _ = writeln!(
            out,
            "{:<w$} {:>5} {:>12} {:>8}  {}",
            s.key.text(),
            s.points.len(),
            show(&s.key.metric, last),
            changes,
            s.key.machine
        );
    }
    out
}

/// `history show`: each series as a table over its labs, change points marked.
pub fn show_text(series: &[Series], settings: &Settings) -> String {
    let mut out = Vec::new();
    let _ = write_show(&mut out, series, settings);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`show_text`], written as it is made (a history of 10,000 labs shows 30 MB).
pub fn write_show(out: &mut impl std::io::Write, series: &[Series], settings: &Settings) -> std::io::Result<()> {
    for s in series {
        writeln!(out, "{}\n  machine {}: {}", s.key.text(), s.key.machine, s.machine_text)?;
        writeln!(out, "  {:>4}  {:<16}  {:<10}  {:<12}  {:>12}", "lab", "when", "commit", "branch", "value")?;
        for (i, p) in s.points.iter().enumerate() {
            if let Some(c) = s.changes.iter().find(|c| c.index == i) {
                let line =
                    change_line(s, c).replacen("change", if c.pending > 0 { "--- change?" } else { "--- change" }, 1);
                writeln!(out, "  {line}")?;
            }
            writeln!(
                out,
                "  {:>4}  {:<16}  {:<10}  {:<12}  {:>12}",
                i + 1,
                when(p.started_unix_s),
                p.short_commit(),
                p.branch_text(),
                show(&s.key.metric, p.value)
            )?;
        }
        if s.changes.is_empty() {
            writeln!(out, "  no change point")?;
        }
        writeln!(out)?;
    }
    // What changed is said last too, where a terminal leaves the reader.
    let overview = crate::overview::Overview::of(series, &[]);
    write!(out, "{}", crate::overview::changes_text(&overview))?;
    writeln!(out, "{}", settings_text(settings))
}

/// The series and their change points as JSON.
pub fn json(series: &[Series], settings: &Settings) -> String {
    let mut out = Vec::new();
    let _ = write_json(&mut out, series, settings);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`json`], written as it is made: one series' changes at a time are held.
pub fn write_json(out: &mut impl std::io::Write, series: &[Series], settings: &Settings) -> std::io::Result<()> {
    struct Doc<'a>(&'a [Series], &'a Settings);
    struct One<'a>(&'a Series);
    impl serde::Serialize for Doc<'_> {
        fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut m = ser.serialize_map(Some(2))?;
            let s = self.1;
            let settings = serde_json::json!({
                "window": s.window,
                "max_pvalue": s.max_pvalue,
                "min_magnitude": s.min_magnitude,
                "min_points": s.min_points,
            });
            m.serialize_entry("settings", &settings)?;
            m.serialize_entry("series", &self.0.iter().map(One).collect::<Vec<_>>())?;
            m.end()
        }
    }
    impl serde::Serialize for One<'_> {
        fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let s = self.0;
            let mut m = ser.serialize_map(Some(4))?;
            m.serialize_entry("key", &s.key)?;
            m.serialize_entry("machine_text", &s.machine_text)?;
            m.serialize_entry("points", &s.points)?;
            m.serialize_entry("changes", &changes_json(s))?;
            m.end()
        }
    }
    serde_json::to_writer_pretty(&mut *out, &Doc(series, settings))?;
    writeln!(out)
}

/// A series' change points as `--json` gives them.
fn changes_json(s: &Series) -> Vec<serde_json::Value> {
    s.changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (lo, hi) = c.change_interval_pct();
            serde_json::json!({
                "accepted": s.acceptance(i),
                "machine": s.machine_made(i),
                "index": c.index,
                "commit_before": s.points.get(c.index.wrapping_sub(1)).and_then(|p| p.commit.clone()),
                "commit_after": s.points.get(c.index).and_then(|p| p.commit.clone()),
                "lab_before": s.points.get(c.index.wrapping_sub(1)).map(|p| p.path.clone()),
                "lab_after": s.points.get(c.index).map(|p| p.path.clone()),
                "mean_before": c.mean_before,
                "mean_after": c.mean_after,
                "change_pct": c.change() * 100.0,
                "change_interval_pct": [lo, hi],
                "pvalue": c.pvalue,
                "pending": c.pending,
            })
        })
        .collect()
}

pub fn csv(series: &[Series]) -> String {
    // One load point of one plan on one machine: columns named by metric, as Otava reads them;
    // else by the whole key, so that no two columns share a name.
    let one_cell = series.windows(2).all(|w| {
        let (a, b) = (&w[0].key, &w[1].key);
        (&a.plan, &a.target, &a.load_key, &a.machine, a.quick) == (&b.plan, &b.target, &b.load_key, &b.machine, b.quick)
    });
    let column = |s: &Series| {
        if one_cell {
            s.key.metric.clone()
        } else {
            format!("{} on {}", s.key.text(), s.key.machine)
        }
    };
    // By (time, lab): the commit and a cell per series.
    type Row = (Option<String>, Vec<Option<f64>>);
    let mut rows: BTreeMap<(i64, i64), Row> = BTreeMap::new();
    for (i, s) in series.iter().enumerate() {
        for p in &s.points {
            let row =
                rows.entry((p.started_unix_s, p.lab)).or_insert_with(|| (p.commit_text(), vec![None; series.len()]));
            row.1[i] = Some(p.value);
        }
    }
    let quote =
        |s: &str| if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() };
    let mut out = String::from("time,commit");
    for s in series {
        out.push(',');
        out.push_str(&quote(&column(s)));
    }
    out.push('\n');
    for ((t, _), (commit, values)) in rows {
        let time = chrono::DateTime::from_timestamp(t, 0)
            .map_or_else(|| t.to_string(), |d| d.format("%Y-%m-%d %H:%M:%S +0000").to_string());
        let _ = write!(out, "{time},{}", quote(commit.as_deref().unwrap_or("")));
        for v in values {
            out.push(',');
            if let Some(v) = v {
                let _ = write!(out, "{v}");
            }
        }
        out.push('\n');
    }
    out
}

/// history.md, for a CI summary: the overview (changes newest first, the plans' last checks,
/// the series that did not move); with `all`, every series' labs too.
pub fn markdown(series: &[Series], settings: &Settings, checks: &[Checked], all: bool) -> String {
    let mut out = String::from("# History\n\n");
    let _ = writeln!(out, "{}.\n", settings_text(settings));
    out.push_str(&crate::overview::markdown(&crate::overview::Overview::of(series, checks)));
    if !all {
        return out;
    }
    for s in series {
        let _ = writeln!(
            out,
            "## {}\n\nMachine `{}`: {}.\n",
            md_cell(&s.key.text()),
            s.key.machine,
            md_cell(&s.machine_text)
        );
        if s.changes.is_empty() {
            out.push_str("No change point.\n\n");
        }
        for c in &s.changes {
            let _ = writeln!(out, "- {}", change_line(s, c));
        }
        if !s.changes.is_empty() {
            out.push('\n');
        }
        out.push_str("| lab | when | commit | branch | value |\n|---:|---|---|---|---:|\n");
        for (i, p) in s.points.iter().enumerate() {
            let mark = if s.changes.iter().any(|c| c.index == i) { " **(change)**" } else { "" };
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} | {}{mark} |",
                i + 1,
                when(p.started_unix_s),
                md_cell(&p.short_commit()),
                md_cell(&p.branch_text()),
                show(&s.key.metric, p.value)
            );
        }
        out.push('\n');
    }
    out
}

/// A check as the terminal and a CI log show it: per gated series its verdict, what it was held
/// to, a regression it still carries (with where it began), a pending change past the gate.
pub fn check_text(c: &Checked) -> String {
    let mut out = String::new();
    let commit = c.commit.as_deref().map_or_else(|| "no commit".to_owned(), plain);
    let _ = writeln!(out, "history check of {} ({commit}), lab {}:", c.plan, c.path);
    if let Some(why) = &c.off_line {
        let _ = writeln!(out, "  {why}");
    }
    if c.default_gates {
        let _ = writeln!(out, "  gates: {} (the default: --fail-on or [history] fail_on to choose)", c.gates.join(","));
    }
    let short = |c: &Option<String>| {
        c.as_deref().map_or_else(|| "-".to_owned(), |c| plain(&c.chars().take(10).collect::<String>()))
    };
    for j in &c.judged {
        let verdict = match (&j.outcome, &j.regression) {
            (Outcome::Worse, Some(_)) if j.past_level => "WORSE (and a regression not accepted)".to_owned(),
            (Outcome::Worse, _) if j.alone_far => format!(
                "WORSE (this lab alone: over {}x the gate's threshold at p <= {:.0e} over the gated series)",
                crate::check::ALONE_TIMES,
                crate::check::ALONE_P
            ),
            (Outcome::Worse, Some(_)) => "WORSE (a regression not accepted)".to_owned(),
            (Outcome::Worse, None) => "WORSE".to_owned(),
            (Outcome::Held, _) if j.machine.is_some() => "ok (the machine, see below)".to_owned(),
            (Outcome::Held, _) => "ok".to_owned(),
            (Outcome::TooShort(why), _) => format!("cannot tell: {why}"),
            (Outcome::NotYet(why), _) => format!("not judged yet: {why}"),
        };
        let metric = &j.key.metric;
        if j.level_mean.is_finite() && j.change_pct.is_finite() {
            let since =
                j.level_since.as_deref().map_or_else(|| "the series' start".to_owned(), |c| short(&Some(c.into())));
            let held = match &j.held_to {
                Some(HeldTo::Spread { labs }) => format!("held to the level's own spread ({labs} labs)"),
                Some(HeldTo::Borrowed { labs }) => {
                    format!("held to the spread of the level before it ({labs} labs: this level is new)")
                }
                Some(HeldTo::Floor { pct }) => {
                    format!(
                        "held to the fixed floor {pct:.0}% (a spread of its own from {} labs)",
                        stats::spread::REPLACES_FLOOR
                    )
                }
                None => String::new(),
            };
            let mut outliers = match j.level_outliers {
                0 => String::new(),
                n => format!(" (and {n} outlier{} left out)", if n == 1 { "" } else { "s" }),
            };
            if j.level_unratioed > 0 {
                let n = j.level_unratioed;
                let _ = write!(
                    outliers,
                    " (and {n} value{} of 0 or below left out: no ratio)",
                    if n == 1 { "" } else { "s" }
                );
            }
            let previous = if j.previous_change_pct.is_finite() {
                let (commit, change) = (short(&j.previous_commit), j.previous_change_pct);
                match crate::check::IN_A_ROW {
                    2 => format!(" (the lab before, {commit}: {change:+.1}%)"),
                    n => format!(" (the {} labs before, from {commit}: {change:+.1}% at least)", n - 1),
                }
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {} [{}]: {} against a level of {} ± {} over {} labs{outliers} since {since}: {:+.1}%{previous}, p = \
                 {:.2e}, {held}: {verdict}",
                j.key.text(),
                j.gate,
                show(metric, j.value),
                show(metric, j.level_mean),
                show(metric, j.level_std),
                j.level_points,
                j.change_pct,
                // Alone (no run of labs before it yet): the lab's own p.
                if j.pvalue.is_finite() { j.pvalue } else { j.lab_pvalue }
            );
            if let Some(why) = &j.machine {
                let _ = writeln!(out, "    warning: beyond its level, but {why}");
            }
            if let Some(why) = &j.machine_scaled {
                let _ = writeln!(out, "    {why}");
            }
            if let (Some(slope), Some(by)) = (j.adjusted, &j.adjusted_by) {
                let _ = writeln!(
                    out,
                    "    the level read at this lab's machine: {metric} moves {slope:.2}% for 1% of {by} over the \
                     level's labs"
                );
            }
            if j.alone_beyond && !j.alone_far {
                let _ = writeln!(
                    out,
                    "    warning: this lab is beyond its level (p = {:.2e}); {} labs in a row beyond it fail the gate: \
                     red from the {} lab after it if it stays (rerun this commit to know sooner)",
                    j.lab_pvalue,
                    crate::check::IN_A_ROW,
                    crate::check::judged::nth(crate::check::IN_A_ROW - 1)
                );
            }
            if j.past_gate_unproven {
                let _ = writeln!(
                    out,
                    "    warning: {:+.1}% is past the gate, but the level's spread cannot tell it from noise yet (p = \
                     {:.2e}): red from the {} lab after it if it stays",
                    j.change_pct,
                    j.lab_pvalue,
                    crate::check::judged::nth(crate::check::IN_A_ROW - 1)
                );
            }
        } else {
            let _ = writeln!(out, "  {} [{}]: {verdict}", j.key.text(), j.gate);
        }
        if let Some(r) = &j.regression {
            let _ = writeln!(
                out,
                "    regression since {} (after {}): {} -> {}, {:+.1}% [{:+.1}, {:+.1}] over {} and {} labs, p = {:.2e}; \
                 it fails every check until accepted: loadlab history accept {} --reason \"...\"",
                short(&r.commit),
                short(&r.commit_before),
                show(metric, r.before),
                show(metric, r.now),
                r.change_pct,
                r.interval_pct.0,
                r.interval_pct.1,
                r.labs_before,
                r.labs_now,
                r.pvalue,
                // Meant to be pasted: one word whatever the history holds.
                results::text::shell_word(&short(&r.commit))
            );
        } else if let Some((cp, before, after)) = &j.last_change {
            let _ = writeln!(
                out,
                "    its level moved from {} to {} ({:+.1}%) between {} and {}",
                show(metric, cp.mean_before),
                show(metric, cp.mean_after),
                cp.change() * 100.0,
                short(before),
                short(after)
            );
        }
        if let Some(p) = &j.pending {
            let _ = writeln!(
                out,
                "    warning: a change of {:+.1}% from {} past the gate, not yet confirmed ({} more lab{})",
                p.change_pct,
                short(&p.commit),
                p.needs,
                if p.needs == 1 { "" } else { "s" }
            );
        }
        for a in &j.accepted {
            let _ = writeln!(out, "    {a}");
        }
        if j.outcome == Outcome::Worse {
            for (f, was, now) in &j.functions {
                let _ = writeln!(out, "    grew: {f} {was:.1} -> {now:.1} µs of its own CPU per request");
            }
            let show = results::duration::show_us;
            for (name, was, now) in &j.spans {
                let _ =
                    writeln!(out, "    grew in the slowest 1%: {name} {} -> {} of self time", show(*was), show(*now));
            }
        }
    }
    let _ = writeln!(
        out,
        "method: the lab and the {} before it against each series' current level (the labs since its last change \
         point, up to a pending one, outliers left out): all beyond it by a one-sided Student's t prediction test on \
         logarithms, Holm-corrected over {} gated series at a family-wise {}%, held to the level's own spread from {} \
         labs and to the fixed run-to-run floor below that; \
         and the level against the last accepted one (a confirmed change for the worse fails until `history accept`). \
         A change must also pass the gate's threshold; a lab alone fails when its change is over {}x the \
         threshold at p <= {:.0e} (Bonferroni over the gated series), or, on a level too short for a spread of its \
         own, over {}x the fixed floor",
        crate::check::IN_A_ROW - 1,
        c.judged.iter().filter(|j| j.pvalue.is_finite()).count(),
        LEVEL * 100.0,
        stats::spread::REPLACES_FLOOR,
        crate::check::ALONE_TIMES,
        crate::check::ALONE_P,
        crate::check::ALONE_FLOORS
    );
    out
}
