//! A gate over history (`history check`): the newest lab against the current level of each of
//! its series (the labs since the series' last change point), not against one baseline run; and
//! every confirmed change for the worse that nobody accepted.
//!
//! Two rules fail a gated series (exit 3), each only past the gate's threshold:
//! - **the lab against its level**: the lab and the [`IN_A_ROW`] - 1 before it all beyond the
//!   level (a run, as the Western Electric rules read a control chart: a lab alone is a warning,
//!   since a busy machine makes outliers and short spells), each by a one-sided Student's t
//!   prediction test on logarithms (one more draw from the level: `stats::spread::Spread::p_beyond`), the
//!   run's p-value (the largest, to the power of the run's length) Holm-corrected over the gated
//!   series at a family-wise [`LEVEL`]. The level leaves its outliers out (`stats::outliers`). A level of [`stats::spread::REPLACES_FLOOR`] labs or more is
//!   its own calibration: its labs are separate labs, so their spread already is the lab-to-lab
//!   spread. A shorter level (from [`MIN_LEVEL`] labs) is also held to `lab compare`'s fixed
//!   run-to-run floor. The level stops at a pending change, so the slower labs waiting to confirm
//!   it do not widen the level they are judged against.
//! - **a regression carried**: the current level against the last accepted one (the series'
//!   start, or the level after a change someone accepted with `history accept`), once a change
//!   point between them is confirmed: worse past the threshold, with Welch's test on logarithms
//!   at [`LEVEL`]. A change for
//!   the worse is not absorbed into the new normal: it fails every check until it is accepted,
//!   and a later change back clears it.

use std::collections::HashSet;

use lab::Gate;
use stats::outliers::without_outliers;
use stats::spread::Spread;

use crate::accept::Acceptance;
use crate::series::{series_where, Key, Point, Query, Series};
use crate::store::Stored;

/// The family-wise false-alarm level of a check over all its gated series.
pub const LEVEL: f64 = 0.005;

/// Labs a level needs before a lab is judged against it at all.
pub const MIN_LEVEL: usize = stats::spread::MIN_LABS;

/// Labs in a row (this one and those just before it) that must all lie beyond the level for the
/// lab to fail: one alone is a warning (docs/DECISIONS.md, "A gate that catches a real
/// regression", for what each choice costs in false alarms and in power).
pub const IN_A_ROW: usize = 3;

/// Whether levels leave their outliers out by default.
pub const TRIM: bool = true;

/// A lab alone fails its gate when its change is this many times the gate's threshold and its
/// p-value at most [`ALONE_P`] over the gated series (Bonferroni): a change far past its gate is
/// red on the lab that brought it, not two labs later. The bar is the check's own family-wise
/// level: 1e-9 (the first rule) let a doubled cost through on a level of a few labs, whose
/// Student's t on 2-4 degrees of freedom never reaches it (docs/DECISIONS.md for what each costs
/// in false alarms).
pub const ALONE_TIMES: f64 = 4.0;
pub const ALONE_P: f64 = LEVEL;
/// On a level too short for a spread of its own, a lab alone fails at this many times the fixed
/// run-to-run floor (and [`ALONE_TIMES`] its gate).
pub const ALONE_FLOORS: f64 = 2.0;

pub(crate) mod judged;
mod machine;
#[cfg(test)]
mod tests;
pub use judged::{CheckError, Checked, HeldTo, Judged, Outcome, Pending, Regression, Rules};

/// Judges the lab `lab_id` of `labs` (and only the labs up to it).
pub fn check(labs: &[Stored], lab_id: i64, rules: &Rules<'_>) -> Result<Checked, CheckError> {
    let asked = labs
        .iter()
        .position(|(id, _)| *id == lab_id)
        .ok_or_else(|| CheckError(format!("no lab {lab_id} in the history")))?;
    // A lab off its line (a rerun of an old commit, a bisect's) is not the line's newest: the
    // line's newest lab before it is judged, and the check says so.
    let on = crate::series::on_line(&labs[..=asked]);
    let mut at = asked;
    let mut off_line = None;
    if !on[asked] {
        let of = &labs[asked].1;
        let same_line = |e: &crate::entry::Entry| e.plan == of.plan && e.machine == of.machine;
        if let Some(j) = (0..asked).rev().find(|&j| on[j] && same_line(&labs[j].1)) {
            off_line = Some(format!(
                "lab {lab_id} ({}) is off the line (a rerun of a commit the line has passed, or a bisect's): the \
                 line's newest lab before it, {} of commit {}, is judged",
                of.commit.as_deref().map_or("no commit".into(), crate::series::plain),
                labs[j].0,
                labs[j].1.commit.as_deref().map_or("no commit".into(), crate::series::plain)
            ));
            at = j;
        }
    }
    let lab_id = labs[at].0;
    let (_, lab) = &labs[at];
    let default_gates;
    let gates = match rules.gates {
        [] => {
            default_gates = Gate::parse_history_list(lab::HISTORY_DEFAULT).expect("the default gates parse");
            &default_gates[..]
        }
        given => given,
    };
    let upto = &labs[..=at];
    let query = Query { plan: Some(lab.plan.clone()), any_machine: rules.any_machine, ..Default::default() };
    // Change points where a gate looks (the profiled functions' series only give their means).
    let control = machine::wanted(gates);
    let gated = |k: &Key| {
        gates.iter().any(|g| g.metric.name() == k.metric)
            || (control && (k.metric == machine::GENERATOR || k.metric == crate::figures::MACHINE_SPEED))
    };
    let mut all = series_where(upto, &query, rules.settings, gated);
    all.iter_mut().for_each(|s| s.mark_accepted(rules.accepted));
    let mut judged = Vec::new();
    for gate in gates {
        let metric = gate.metric.name();
        // The lab's own series for this metric (one per target and load point).
        for s in all.iter().filter(|s| s.key.metric == metric && owns(s, lab, rules.any_machine)) {
            judged.push(judge(s, lab_id, gate, &all, rules));
        }
        // A load point of this lab with no counted figure: nothing to judge there.
        for step in lab.steps.iter().filter(|st| st.not_counted.is_some()) {
            let counted_elsewhere =
                lab.steps.iter().any(|o| o.load == step.load && o.target == step.target && o.not_counted.is_none());
            let named = judged
                .iter()
                .any(|j: &Judged| j.key.load_key == step.load && j.key.target == step.target && j.gate == gate.text());
            if !counted_elsewhere && !named {
                let key = Key {
                    plan: lab.plan.clone(),
                    target: step.target.clone(),
                    load: step.label.clone(),
                    load_key: step.load.clone(),
                    metric: metric.to_owned(),
                    machine: lab.machine.clone(),
                    measurement: lab.measurement,
                    quick: lab.quick,
                };
                let why = format!("the lab did not count this step: {}", step.not_counted.clone().unwrap_or_default());
                judged.push(Judged::unjudged(key, gate, &lab.machine_text, Outcome::TooShort(why)));
            }
        }
    }
    holm(&mut judged, gates, rules.alone);
    machine::control(&mut judged, &all, lab_id, gates, rules);
    Ok(Checked {
        lab: lab_id,
        plan: lab.plan.clone(),
        commit: lab.commit.clone(),
        path: lab.path.clone(),
        gates: gates.iter().map(Gate::text).collect(),
        default_gates: rules.gates.is_empty(),
        judged,
        off_line,
    })
}

/// A tail of the latencies (p95 and beyond, max): spikes alone, spreads wide and grows faster
/// than the machine slows, so it is judged by runs of labs, on a level that keeps its outliers.
pub(super) fn is_tail(m: lab::Metric) -> bool {
    m.tail_quantile().is_some() || m == lab::Metric::Max
}

/// The series is of the lab's machine and kind.
fn owns(s: &Series, lab: &crate::entry::Entry, any_machine: bool) -> bool {
    s.key.quick == lab.quick && (any_machine || (s.key.machine == lab.machine && s.key.measurement == lab.measurement))
}

/// Worse is up for a latency or a CPU, down for a rate or a share of successes: the gate says.
fn worse_way(gate: &Gate, ratio: f64) -> bool {
    if gate.above {
        ratio > 1.0
    } else {
        ratio < 1.0
    }
}

fn judge(s: &Series, lab_id: i64, gate: &Gate, all: &[Series], rules: &Rules<'_>) -> Judged {
    let mut j = Judged::unjudged(s.key.clone(), gate, &s.machine_text, Outcome::Held);
    let Some(last) = s.points.last().filter(|p| p.lab == lab_id) else {
        j.outcome = Outcome::TooShort("the lab has no counted figure here".into());
        return j;
    };
    j.value = last.value;
    let at = s.points.len() - 1;
    let accepted: Vec<Option<&Acceptance>> = (0..s.changes.len()).map(|i| s.acceptance(i)).collect();
    j.accepted = s
        .changes
        .iter()
        .zip(&accepted)
        .filter_map(|(c, a)| a.map(|a| format!("change at {}: {}", commit_of(s, c.index), a.text())))
        .collect();
    // The level: from the last confirmed change before the lab, up to the first pending one (a
    // pending change someone accepted already starts the level instead).
    let mut since = s.level_starts().into_iter().filter(|&i| i < at).max().unwrap_or(0);
    // An accepted commit starts a level at its first lab whether or not a change point was found
    // there: on a noisy machine the detector may place the step a lab off, or find none, and the
    // team's word says where it is.
    since = since.max(accepted_start(s, rules.accepted, at).unwrap_or(0));
    let mut until = at;
    let start = since;
    for (c, a) in s.changes.iter().zip(&accepted).filter(|(c, _)| c.pending > 0 && c.index > start && c.index <= at) {
        if a.is_none() {
            until = c.index;
            break;
        }
        since = c.index;
    }
    if let Some(c) = s.changes.iter().rfind(|c| c.pending == 0 && c.index <= at) {
        j.last_change = Some((c.clone(), s.points[c.index - 1].commit_text(), s.points[c.index].commit_text()));
    }
    j.pending = s
        .changes
        .iter()
        .filter(|c| c.pending > 0 && c.index > since && gate.passed_by(1.0 + c.change()))
        .map(|c| Pending { commit: s.points[c.index].commit_text(), change_pct: c.change() * 100.0, needs: c.pending })
        .next();
    j.regression = regression(s, gate, &accepted);
    // The labs before this one are judged with it (IN_A_ROW), so none of them is in the level.
    let run = rules.in_a_row.max(1) - 1;
    let previous = if at > since + run { &s.points[at - run..at] } else { &[][..] };
    let until = until.min(at - previous.len());
    let mut level: Vec<f64> = s.points[since..until].iter().map(|p| p.value).collect();
    if !matches!(gate.metric, lab::Metric::Success | lab::Metric::Errors) {
        let all = level.len();
        level.retain(|v| v.is_finite() && *v > 0.0);
        j.level_unratioed = all - level.len();
    }
    j.level_extreme = extreme(&level, gate.above);
    // A tail keeps its outliers: they are how it spreads (a Go service's p99 level of 7 A/A labs,
    // 2 left out, read a spread of 1.9% and failed two checks on +5-7%).
    let trim = rules.trim && !is_tail(gate.metric);
    if trim {
        let all = level.len();
        level = without_outliers(&level);
        j.level_outliers = all - level.len();
    }
    j.level_since = s.points.get(since).filter(|_| since > 0).and_then(Point::commit_text);
    j.level_points = level.len();
    let level_labs: Vec<i64> = s.points[since..until].iter().map(|p| p.lab).collect();
    (j.functions, j.spans) = match &j.regression {
        Some(r) => {
            let from = s.points.iter().position(|p| p.lab == r.from_lab).unwrap_or(0);
            let before: Vec<i64> = s.points[..from].iter().map(|p| p.lab).collect();
            let now: Vec<i64> = s.points[from..].iter().map(|p| p.lab).collect();
            let before = &before[before.len().saturating_sub(r.labs_before)..];
            (grown(s, all, before, &now, crate::entry::FUNCTION), grown(s, all, before, &now, crate::entry::SPAN))
        }
        None => (
            grown(s, all, &level_labs, &[lab_id], crate::entry::FUNCTION),
            grown(s, all, &level_labs, &[lab_id], crate::entry::SPAN),
        ),
    };
    if j.regression.is_some() {
        j.outcome = Outcome::Worse;
    }
    if level.len() < MIN_LEVEL && since > 0 && !level.is_empty() {
        // Just after a change (for the better too) or an accepted one: the level before it
        // lends its spread, so a change shortens no check into "cannot tell".
        let start = s.level_starts().into_iter().filter(|&i| i < since).max().unwrap_or(0);
        let mut before: Vec<f64> =
            s.points[start..since].iter().map(|p| p.value).filter(|v| v.is_finite() && *v > 0.0).collect();
        if trim {
            before = without_outliers(&before);
        }
        if let Some(donor) = Spread::of(&before) {
            let centre = stats::describe::centre(&level);
            j.level_points = level.len();
            j.level_mean = centre;
            j.level_std = f64::NAN;
            j.change_pct = (last.value / centre - 1.0) * 100.0;
            j.held_to = Some(HeldTo::Borrowed { labs: donor.labs() });
            j.lab_pvalue = donor.p_beyond_borrowed(&level, last.value, gate.above);
            j.pvalue = if rules.in_a_row <= 1 { j.lab_pvalue } else { f64::NAN };
            if let Some(first) = previous.first() {
                let changes = previous.iter().map(|p| (p.value / centre - 1.0) * 100.0);
                j.previous_change_pct = if gate.above {
                    changes.fold(f64::INFINITY, f64::min)
                } else {
                    changes.fold(f64::NEG_INFINITY, f64::max)
                };
                j.previous_commit = first.commit_text();
                let p = previous
                    .iter()
                    .map(|p| donor.p_beyond_borrowed(&level, p.value, gate.above))
                    .fold(j.lab_pvalue, f64::max);
                j.pvalue = p.powi(rules.in_a_row.max(1) as i32);
            }
            return j;
        }
    }
    if level.len() < MIN_LEVEL && since == 0 && j.regression.is_none() {
        // A level of MIN_LEVEL labs, then the run judged against it.
        let needs = MIN_LEVEL + rules.in_a_row.max(1);
        j.outcome = Outcome::NotYet(format!(
            "lab {} of the {needs} a series needs before its first judgement",
            s.points.len().min(needs)
        ));
        // Every lab before it as the level: enough for the alone rule, a change far past the
        // gate being red on its first lab however young the series.
        let mut before: Vec<f64> =
            s.points[..at].iter().map(|p| p.value).filter(|v| v.is_finite() && *v > 0.0).collect();
        j.level_extreme = extreme(&before, gate.above);
        if trim {
            before = without_outliers(&before);
        }
        if let Some(spread) = Spread::of(&before).filter(|_| before.len() >= MIN_LEVEL) {
            j.alone_only = true;
            j.level_points = before.len();
            j.level_mean = spread.centre();
            j.level_std = stats::describe::variance(&before).sqrt();
            j.change_pct = (last.value / j.level_mean - 1.0) * 100.0;
            j.held_to = Some(held_to(&spread, gate, j.level_mean));
            j.lab_pvalue = spread.p_beyond(last.value, gate.above);
        }
        return j;
    }
    if level.len() < MIN_LEVEL {
        if j.regression.is_none() {
            j.outcome = Outcome::TooShort(format!(
                "{} lab{} at the current level; needs {MIN_LEVEL}",
                level.len(),
                if level.len() == 1 { "" } else { "s" },
            ));
        }
        return j;
    }
    let plain_mean = stats::describe::mean(&level);
    j.level_std = stats::describe::variance(&level).sqrt();
    let Some(spread) = Spread::of(&level) else {
        // A share of 0 (no errors) has no ratio: the level is shown, nothing is judged.
        j.level_mean = plain_mean;
        if j.regression.is_none() {
            j.outcome = Outcome::TooShort("a level with a value of 0 has no ratio to judge".into());
        }
        return j;
    };
    j.level_mean = spread.centre();
    j.change_pct = (last.value / j.level_mean - 1.0) * 100.0;
    j.held_to = Some(held_to(&spread, gate, j.level_mean));
    j.lab_pvalue = spread.p_beyond(last.value, gate.above);
    j.pvalue = if rules.in_a_row <= 1 { j.lab_pvalue } else { f64::NAN };
    if let Some(first) = previous.first() {
        // The least changed of them (every one must pass the gate), and where the run began.
        let changes = previous.iter().map(|p| (p.value / j.level_mean - 1.0) * 100.0);
        j.previous_change_pct =
            if gate.above { changes.fold(f64::INFINITY, f64::min) } else { changes.fold(f64::NEG_INFINITY, f64::max) };
        j.previous_commit = first.commit_text();
        // Every lab of the run beyond the level: for independent labs, as likely as the largest
        // p-value to the power of their number.
        let p = previous.iter().map(|p| spread.p_beyond(p.value, gate.above)).fold(j.lab_pvalue, f64::max);
        j.pvalue = p.powi(rules.in_a_row.max(1) as i32);
    }
    if machine::read_at_machine_fits(gate.metric) {
        machine::read_at_machine(&mut j, s, all, &s.points[since..until], previous, gate, rules.in_a_row);
    }
    j
}

/// The first point of the latest commit accepted for `s` among its points up to `at` (the
/// series' start is no new level).
fn accepted_start(s: &Series, accepted: &[Acceptance], at: usize) -> Option<usize> {
    accepted
        .iter()
        .filter_map(|a| s.points[..=at].iter().position(|p| a.covers(&s.key.plan, &s.key.metric, p.commit.as_deref())))
        .filter(|&i| i > 0)
        .max()
}

/// The most extreme of `values` on a gate's worse side (the largest when above is worse).
fn extreme(values: &[f64], above: bool) -> f64 {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    if above {
        finite.fold(f64::NAN, f64::max)
    } else {
        finite.fold(f64::NAN, f64::min)
    }
}

/// What a level of `spread` (centred at `mean`) holds a lab to: its own spread from
/// [`stats::spread::REPLACES_FLOOR`] labs, the fixed run-to-run floor below that.
fn held_to(spread: &Spread, gate: &Gate, mean: f64) -> HeldTo {
    if spread.replaces_floor() {
        HeldTo::Spread { labs: spread.labs() }
    } else {
        HeldTo::Floor { pct: gate.metric.floor(mean) * 100.0 }
    }
}

/// The commit at point `i` of `s`, short, or its lab number.
fn commit_of(s: &Series, i: usize) -> String {
    s.points.get(i).map_or_else(|| format!("lab {}", i + 1), crate::series::Point::short_commit)
}

/// The regression the series carries past `gate`, if any: its confirmed level now against the
/// last accepted one.
fn regression(s: &Series, gate: &Gate, accepted: &[Option<&Acceptance>]) -> Option<Regression> {
    let confirmed: Vec<usize> = (0..s.changes.len()).filter(|&i| s.changes[i].pending == 0).collect();
    // The level after the last accepted change, or the last the machine made (a commit did not
    // bring it), or the series' start, is the reference.
    let reference =
        confirmed.iter().rposition(|&i| accepted[i].is_some() || s.machine_made(i).is_some()).map_or(0, |r| r + 1);
    if reference == confirmed.len() {
        return None;
    }
    // Level k begins at starts[k]: the reference level ends where the next begins.
    let starts = s.level_starts();
    let ref_range = starts[reference]..starts[reference + 1];
    let now_start = starts[confirmed.len()];
    let now_end = s.changes.iter().filter(|c| c.pending > 0 && c.index > now_start).map(|c| c.index).next();
    let now_range = now_start..now_end.unwrap_or(s.points.len());
    let values = |r: std::ops::Range<usize>| -> Vec<f64> { s.points[r].iter().map(|p| p.value).collect() };
    let (before, now) = (values(ref_range), values(now_range));
    let c = stats::welch::welch(&now, &before);
    let p = c.p?;
    // The change point itself passed the series' own test; this asks whether the level now is
    // still worse than the accepted one, at the gate's family-wise level.
    if !(gate.passed_by(c.ratio) && p <= LEVEL) {
        return None;
    }
    // Where it began: the first change for the worse after the accepted level.
    let first = confirmed[reference..]
        .iter()
        .map(|&i| &s.changes[i])
        .find(|cp| worse_way(gate, 1.0 + cp.change()))
        .unwrap_or(&s.changes[confirmed[reference]]);
    let pct = |r: f64| (r - 1.0) * 100.0;
    Some(Regression {
        from_lab: s.points[first.index].lab,
        commit: s.points[first.index].commit_text(),
        commit_before: s.points[first.index - 1].commit_text(),
        before: stats::describe::centre(&before),
        now: stats::describe::centre(&now),
        labs_before: before.len(),
        labs_now: now.len(),
        change_pct: pct(c.ratio),
        interval_pct: c.ci.map_or((f64::NAN, f64::NAN), |(lo, hi)| (pct(lo), pct(hi))),
        pvalue: p,
    })
}

/// The profiled functions (`prefix` [`crate::entry::FUNCTION`]) or traced spans
/// ([`crate::entry::SPAN`]) at the series' target and load whose own CPU (or self time in the
/// slowest 1%) grew most from the labs `before` to the labs `now` (their means), largest first
/// (at most 5).
fn grown(s: &Series, all: &[Series], before: &[i64], now: &[i64], prefix: &str) -> Vec<(String, f64, f64)> {
    let (before, now): (HashSet<i64>, HashSet<i64>) = (before.iter().copied().collect(), now.iter().copied().collect());
    let mean_at = |f: &Series, labs: &HashSet<i64>| {
        let v: Vec<f64> = f.points.iter().filter(|p| labs.contains(&p.lab)).map(|p| p.value).collect();
        (!v.is_empty()).then(|| stats::describe::mean(&v))
    };
    let mut out: Vec<(String, f64, f64)> = all
        .iter()
        .filter(|f| {
            f.key.metric.starts_with(prefix)
                && f.key.target == s.key.target
                && f.key.load_key == s.key.load_key
                && f.key.machine == s.key.machine
                && f.key.quick == s.key.quick
        })
        .filter_map(|f| {
            let (was, is) = (mean_at(f, &before)?, mean_at(f, &now)?);
            let name = f.key.metric.trim_start_matches(prefix).to_owned();
            (is > was).then_some((name, was, is))
        })
        .collect();
    out.sort_by(|a, b| (b.2 - b.1).total_cmp(&(a.2 - a.1)));
    out.truncate(5);
    out
}

/// Holm's step-down over the judged series' prediction tests: the k-th smallest p-value (from
/// 0) passes at `LEVEL / (m - k)` while every smaller one passed; a series fails when its
/// p-value passes and both its lab and the one before are past its gate's threshold (and, for a
/// short level, past the fixed floor). A lab beyond its level at `LEVEL / m` without such a run
/// is a warning.
fn holm(judged: &mut [Judged], gates: &[Gate], alone: bool) {
    let p: Vec<f64> = judged.iter().map(|j| if j.pvalue.is_finite() { j.pvalue } else { f64::NAN }).collect();
    let stands = stats::holm(&p, LEVEL);
    let m = p.iter().filter(|x| !x.is_nan()).count();
    let past = |j: &Judged, change_pct: f64| {
        let ratio = 1.0 + change_pct / 100.0;
        gates.iter().find(|g| g.text() == j.gate).is_some_and(|g| {
            g.passed_by(ratio)
                && match j.held_to {
                    Some(HeldTo::Floor { pct }) => !stats::floors::within(ratio, pct / 100.0),
                    _ => true,
                }
        })
    };
    for (i, stands) in stands.into_iter().enumerate() {
        let j = &judged[i];
        let both = past(j, j.change_pct) && past(j, j.previous_change_pct);
        if stands && both && matches!(judged[i].outcome, Outcome::Held | Outcome::Worse) {
            judged[i].outcome = Outcome::Worse;
            judged[i].past_level = true;
        }
    }
    // A level too short for its own spread (held to the fixed floor) gives Student's t too few
    // degrees of freedom to reach any bar (a doubled cost over 3 labs: p = 3e-3); there a change
    // of ALONE_FLOORS times the run-to-run floor (which one build's labs stay within) is the
    // evidence a lab alone needs.
    let beyond_floors = |j: &Judged| match j.held_to {
        Some(HeldTo::Floor { pct }) => {
            let (ratio, floor) = (1.0 + j.change_pct / 100.0, 1.0 + ALONE_FLOORS * pct / 100.0);
            if j.change_pct >= 0.0 {
                ratio >= floor
            } else {
                ratio <= 1.0 / floor
            }
        }
        _ => false,
    };
    let m_alone = judged.iter().filter(|j| j.lab_pvalue.is_finite()).count().max(1);
    for j in judged.iter_mut().filter(|j| !j.past_level && j.lab_pvalue.is_finite()) {
        let evidence = if j.alone_only {
            j.lab_pvalue <= ALONE_P / m_alone as f64
        } else {
            j.lab_pvalue <= LEVEL / m.max(1) as f64
        };
        j.alone_beyond = (evidence || beyond_floors(j)) && past(j, j.change_pct);
        j.past_gate_unproven = !j.alone_beyond && j.outcome == Outcome::Held && past(j, j.change_pct);
    }
    let judgeable =
        |j: &Judged| j.outcome == Outcome::Held || (j.alone_only && matches!(j.outcome, Outcome::NotYet(_)));
    for j in judged.iter_mut().filter(|j| alone && j.alone_beyond && judgeable(j)) {
        let far = gates.iter().find(|g| g.text() == j.gate).is_some_and(|g| {
            Gate { limit_pct: g.limit_pct * ALONE_TIMES, ..g.clone() }.passed_by(1.0 + j.change_pct / 100.0)
        });
        // Within the most extreme lab the level itself produced (its outliers too), a lab alone
        // is what the series does now and then: on this VM a Go service's p99 had 3 outliers in
        // 9 A/A labs, and the next one failed 3 of 21 checks alone.
        let gate = gates.iter().find(|g| g.text() == j.gate);
        let above = gate.is_none_or(|g| g.above);
        // A tail percentile spikes alone on a shared machine (a Go service's p99 tripled in one
        // of 12 A/A labs, 3 of 21 checks failed alone): a tail waits for its run.
        if gate.is_some_and(|g| is_tail(g.metric)) {
            continue;
        }
        let seen =
            j.level_extreme.is_finite() && if above { j.value <= j.level_extreme } else { j.value >= j.level_extreme };
        if far && !seen && (j.lab_pvalue <= ALONE_P / m_alone as f64 || beyond_floors(j)) {
            j.outcome = Outcome::Worse;
            j.alone_far = true;
        }
    }
}
