//! The machine as a control. On a shared or virtual machine every process's CPU per request
//! moves together from lab to lab: over 75 A/A labs each of nginx and the origin simulator,
//! loadlab's own CPU per request and the target's correlated at 0.96 to 0.99, the target's
//! lab-to-lab spread was 17-22% and its ratio to loadlab's 4-5% (docs/DECISIONS.md). A spell of
//! a slower machine then reads as a regression of every target. loadlab's own CPU per request
//! (`generator_cpu`: the same work at the same rate in every lab of a series) measures the
//! machine, so:
//! - a `target_cpu` or a median latency series whose level moves with it (its slope beyond
//!   noise over 8 labs or more) is judged at each lab's machine: the level's regression on it
//!   predicts the lab, and the prediction interval tests it ([`read_at_machine`]);
//! - a `target_cpu` series read as measured fails only when it fails both as measured and relative to loadlab's
//!   own CPU in the same labs (the same rules on the ratio series: two tests that must both
//!   reject, which keeps the gate's false-alarm level and costs power only where loadlab's CPU
//!   moved with the target's);
//! - a latency series that fails while loadlab's own CPU per request is beyond its level the
//!   same way (the machine slower, by the same rules) is judged again relative to it (each lab's
//!   latency divided by loadlab's CPU per request): a warning when that holds (the machine can
//!   explain it, and a rerun tells), still a failure when it fails: a machine 13% slower does
//!   not explain a latency that doubled.
//!   A tail (p95 and beyond, max) is judged relative to the square of it: queues make it grow
//!   faster than the machine slows. Any slowing the speed probe reads is taken out of the share
//!   of the latency that is the target's own CPU (scaled by the probe's time to twice that
//!   share: all of a CPU-bound server's, none of a service that waits), and a CPU-bound
//!   server's latency that still fails is the machine's where its CPU per request is what the
//!   probe explains (a queue amplifies a CPU's change; the probe does not time the build).
//! - a latency series that fails while its hypervisor took far more of loadlab's machine
//!   ([`STEAL_POINTS`], from `machine_steal`) is a warning, as is one while
//!   other processes used far more of loadlab's machine in
//!   the labs it rests on than in the level's labs ([`BUSIER_POINTS`], from `machine_other`; a
//!   carried regression: since the change than before it) is a warning too. A busy neighbour does not slow each cycle, so loadlab's
//!   CPU per request does not see it: two spinners beside origin labs left it unchanged while
//!   p99 rose 20-24% (docs/DECISIONS.md).
//!
//! Each is said on the row (`Judged::machine`) and among the check's warnings.

use std::collections::HashMap;

use lab::{Gate, Metric};
use stats::covariate::Fit;

use super::{holm, judge, Judged, Outcome, Rules};
use crate::series::{Key, Point, Series};

/// The metric that measures the machine.
pub(super) const GENERATOR: &str = "generator_cpu";

/// Points of loadlab's machine (of 100) that other processes must have used more than in the
/// median lab of the level for the machine to explain a latency. Quiet labs left 0-5 points to
/// others; a busy loop per core took 48-97 (docs/DECISIONS.md).
pub(super) const BUSIER_POINTS: f64 = 25.0;

/// Whether loadlab's own CPU series is wanted with its change points, as the control of
/// `gates`: where the target's CPU or a latency is gated.
pub(super) fn wanted(gates: &[Gate]) -> bool {
    gates.iter().any(|g| g.metric == Metric::TargetCpu || g.metric.is_latency())
}

/// loadlab's own CPU series at the place of `s` (same plan, target, load point and machine).
fn generator_of<'a>(s: &Series, all: &'a [Series]) -> Option<&'a Series> {
    let key = Key { metric: GENERATOR.to_owned(), ..s.key.clone() };
    all.iter().find(|g| g.key == key)
}

/// The series of `metric` at the place of `s` (a share of loadlab's machine, the probe's time,
/// the target's CPU per request or its p50).
fn share_of<'a>(s: &Series, all: &'a [Series], metric: &str) -> Option<&'a Series> {
    let key = Key { metric: metric.to_owned(), ..s.key.clone() };
    all.iter().find(|o| o.key == key)
}

/// Points of loadlab's machine (of 100) its hypervisor must have taken (steal) more than in the
/// median lab of the level for the host to explain a latency. Over 420 A/A labs of a Go service
/// on this VM steal read 0.3% or less in 9 of 10; in one spell it read 10-12% and then 26-30%,
/// and the Go service's p50 doubled in the 30% lab (docs/DECISIONS.md). A stolen CPU stops every
/// thread on it for the hypervisor's slice: requests wait, whatever the code does.
pub(super) const STEAL_POINTS: f64 = 10.0;

/// Why a busier machine can explain the latency failure `j` of `s`, by `others` (a share of
/// loadlab's machine others took: `who` took it): none unless it explains each rule that failed
/// it. The lab against its level: the lab judged, or (when it failed as a run) any lab of its
/// run, ran with `points` more of the machine taken than the level's median lab. A carried
/// regression: the median lab since the change did, against the median lab before it.
fn busier(s: &Series, others: &Series, j: &Judged, in_a_row: usize, points: f64, who: &str) -> Option<String> {
    let share: HashMap<i64, f64> = others.points.iter().map(|p| (p.lab, p.value)).collect();
    let of = |points: &[Point]| -> Vec<f64> { points.iter().filter_map(|p| share.get(&p.lab).copied()).collect() };
    let at = s.points.len().checked_sub(1)?;
    let mut why = Vec::new();
    if j.past_level || j.alone_far {
        let run_from = if j.alone_far { at } else { (at + 1).saturating_sub(in_a_row.max(1)) };
        let since = s.level_starts().into_iter().filter(|&i| i < run_from).max().unwrap_or(0);
        let level = of(&s.points[since..run_from]);
        if level.is_empty() {
            return None;
        }
        let usual = stats::describe::median(&level);
        let busy = |p: &Point| share.get(&p.lab).is_some_and(|o| o - usual >= points);
        let run = &s.points[run_from..=at];
        let busy_labs: Vec<f64> = run.iter().filter(|p| busy(p)).filter_map(|p| share.get(&p.lab).copied()).collect();
        if !busy(&s.points[at]) && busy_labs.is_empty() {
            return None;
        }
        let used: Vec<String> = busy_labs.iter().map(|o| format!("{o:.0}%")).collect();
        why.push(format!(
            "{who} {} of loadlab's machine in {} of the {} labs judged, {usual:.0}% in its level's",
            used.join(", "),
            busy_labs.len(),
            run.len()
        ));
    }
    if let Some(r) = &j.regression {
        let from = s.points.iter().position(|p| p.lab == r.from_lab)?;
        let (before, now) = (of(&s.points[from.saturating_sub(r.labs_before)..from]), of(&s.points[from..]));
        if before.is_empty() || now.is_empty() {
            return None;
        }
        let (before, now) = (stats::describe::median(&before), stats::describe::median(&now));
        if now - before < points {
            return None;
        }
        why.push(format!(
            "{who} {now:.0}% of loadlab's machine in the median lab since the change, {before:.0}% before it"
        ));
    }
    (!why.is_empty()).then(|| format!("{}: a busy machine can explain it", why.join("; ")))
}

/// `s` divided, lab by lab, by loadlab's own CPU per request `g` (times its median over the
/// series, so the figures keep their unit and the fixed floors' absolute parts still apply),
/// raised to `power`, with change points and acceptances of its own; none when a lab of `s`
/// lacks loadlab's figure.
fn relative(s: &Series, g: &Series, rules: &Rules<'_>, power: f64) -> Option<Series> {
    let own: HashMap<i64, f64> = g.points.iter().map(|p| (p.lab, p.value)).collect();
    let typical: Vec<f64> =
        s.points.iter().filter_map(|p| own.get(&p.lab).copied()).filter(|v| v.is_finite()).collect();
    let typical = (!typical.is_empty()).then(|| stats::describe::median(&typical))?;
    let points: Vec<Point> = s
        .points
        .iter()
        .filter_map(|p| {
            let by = *own.get(&p.lab)?;
            (by.is_finite() && by > 0.0).then(|| Point { value: p.value / (by / typical).powf(power), ..p.clone() })
        })
        .collect();
    if points.len() < s.points.len() {
        return None;
    }
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let changes = stats::change_points::change_points(&values, rules.settings);
    let mut r = Series {
        key: s.key.clone(),
        machine_text: s.machine_text.clone(),
        points,
        changes,
        accepted: Vec::new(),
        machine: Vec::new(),
    };
    r.mark_accepted(rules.accepted);
    Some(r)
}

/// Takes back the failures the machine explains (after the gate's own rules have run on
/// `judged`), saying so on each row.
pub(super) fn control(judged: &mut [Judged], all: &[Series], lab_id: i64, gates: &[Gate], rules: &Rules<'_>) {
    let gate_of = |j: &Judged| gates.iter().find(|g| g.text() == j.gate);
    // The family again, each target_cpu series relative to loadlab's own CPU.
    let mut family = judged.to_vec();
    let mut relative_at = Vec::new();
    // A lab read at its machine already (`read_at_machine`) fails as it stands; only a carried
    // regression of its series (change points of the figures as measured) is looked at again.
    let lab_failed = |j: &Judged| j.adjusted.is_some() && (j.past_level || j.alone_far);
    for (i, j) in judged.iter().enumerate().filter(|(_, j)| j.outcome == Outcome::Worse && !lab_failed(j)) {
        let Some(gate) = gate_of(j).filter(|g| g.metric == Metric::TargetCpu) else { continue };
        let Some(s) = all.iter().find(|s| s.key == j.key) else { continue };
        let Some(rel) = generator_of(s, all).and_then(|g| relative(s, g, rules, 1.0)) else { continue };
        family[i] = judge(&rel, lab_id, gate, all, rules);
        relative_at.push(i);
    }
    if !relative_at.is_empty() {
        holm(&mut family, gates, rules.alone);
    }
    for i in relative_at {
        if family[i].outcome != Outcome::Worse {
            let j = &mut judged[i];
            j.outcome = Outcome::Held;
            j.past_level = false;
            // A change point the machine made is not the build's regression.
            j.regression = None;
            j.machine = Some(format!(
                "loadlab's own CPU per request moved with it: relative to it, {} (the machine changed, not the build)",
                family[i].change_text()
            ));
        }
    }
    // Latencies: is the machine slower, or busier, in the labs that failed? A slower machine
    // explains at most its own size: the latency is judged again relative to the machine's
    // measure (scaled by it), and fails still when that fails. The measures in turn: the speed
    // probe on the target's CPUs where the labs have it (on a Go service's A/A history it read
    // +18% over a run of three labs whose p50 was +12%, where loadlab's own CPU per request,
    // 20-27% apart between labs, was not beyond its level), then loadlab's own CPU per request
    // (a CPU-bound Python server's p50 moves twice as much as the probe's time: relative to the
    // probe alone, 3 more of 84 A/A checks failed).
    slower_machine(
        judged,
        all,
        lab_id,
        gates,
        rules,
        crate::figures::MACHINE_SPEED,
        "the speed probe's time on the target's CPUs",
    );
    slower_machine(judged, all, lab_id, gates, rules, GENERATOR, "loadlab's own CPU per request");
    // A busier machine explains what a slower one could not: the slower machine's text goes with
    // the failure it kept.
    for j in judged.iter_mut().filter(|j| j.outcome == Outcome::Worse) {
        if !gate_of(j).is_some_and(|g| g.metric.is_latency() && g.above) {
            continue;
        }
        let Some(s) = all.iter().find(|s| s.key == j.key) else { continue };
        let others = share_of(s, all, crate::figures::MACHINE_OTHER)
            .and_then(|o| busier(s, o, j, rules.in_a_row, BUSIER_POINTS, "other processes used"));
        let stolen = || {
            share_of(s, all, crate::figures::MACHINE_STEAL)
                .and_then(|o| busier(s, o, j, rules.in_a_row, STEAL_POINTS, "its hypervisor took"))
        };
        if let Some(why) = others.or_else(stolen) {
            j.outcome = Outcome::Held;
            j.past_level = false;
            j.alone_far = false;
            j.regression = None;
            j.machine = Some(why);
            j.machine_scaled = None;
        }
    }
}

/// How far beyond the level's machines a lab is read at its own, in widths of their range.
const COVERS_MARGIN: f64 = 1.0;

/// The p-value a level's slope on loadlab's own CPU per request must reach to be read at all.
const SLOPE_P: f64 = 0.01;

/// Whether a series of `metric` is judged at its lab's machine ([`read_at_machine`]): the
/// target's CPU per request, and a latency that is not a tail (a CPU-bound server's median is
/// its work; a tail is judged by runs of labs, and grows faster than the machine slows).
pub(super) fn read_at_machine_fits(metric: Metric) -> bool {
    metric == Metric::TargetCpu || (metric.is_latency() && !super::is_tail(metric))
}

/// A target's CPU per request (or its median latency) judged at its lab's machine: the level's
/// regression on a figure of the machine ([`Fit`]) predicts each lab of the run at its own
/// machine, and the prediction interval tests it (the slope's and the residuals' error both in
/// it). The figure is the probe's time on the target's CPUs (`machine_speed`) where the labs
/// have it, else loadlab's own CPU per request, which sees only loadlab's CPUs. Over the labs of
/// 20 A/A histories of a Go service the target's CPU per request moved 6.7% as measured and
/// 2.2% read at loadlab's (docs/DECISIONS.md). Nothing changes where neither gives a line: fewer
/// than [`stats::covariate::MIN_LABS`] labs with both figures, a slope within its noise, or a
/// lab of the run far from the level's machines.
pub(super) fn read_at_machine(
    j: &mut Judged,
    s: &Series,
    all: &[Series],
    level: &[Point],
    previous: &[Point],
    gate: &Gate,
    in_a_row: usize,
) {
    let Some(last) = s.points.last() else { return };
    let covariates = [
        (share_of(s, all, crate::figures::MACHINE_SPEED), "the probe's time on the target's CPUs"),
        (generator_of(s, all), "loadlab's own CPU per request"),
    ];
    for (c, name) in covariates {
        let Some(c) = c else { continue };
        let Some((fit, run, xs, ys)) = line(c, level, previous, last) else { continue };
        let x = run[0].0;
        j.adjusted = Some(fit.slope);
        j.adjusted_by = Some(name.to_owned());
        // The level's most extreme lab, as far from the line at this lab's machine.
        let residuals: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| y / fit.at(*x)).collect();
        j.level_extreme = super::extreme(&residuals, gate.above) * fit.at(x);
        j.level_mean = fit.at(x);
        j.level_std = j.level_mean * fit.sd_at(x);
        j.change_pct = (last.value / j.level_mean - 1.0) * 100.0;
        j.lab_pvalue = fit.p_beyond(x, last.value, gate.above);
        j.pvalue = if in_a_row <= 1 { j.lab_pvalue } else { f64::NAN };
        if run.len() > 1 {
            let changes = run[1..].iter().map(|(x, p)| (p.value / fit.at(*x) - 1.0) * 100.0);
            j.previous_change_pct = if gate.above {
                changes.fold(f64::INFINITY, f64::min)
            } else {
                changes.fold(f64::NEG_INFINITY, f64::max)
            };
            let p = run[1..].iter().map(|(x, p)| fit.p_beyond(*x, p.value, gate.above)).fold(j.lab_pvalue, f64::max);
            j.pvalue = p.powi(in_a_row.max(1) as i32);
        }
        return;
    }
}

/// The lab run (the lab, then the labs before it) with the covariate `c`'s figure of each.
type Run<'a> = Vec<(f64, &'a Point)>;

/// The level's line on covariate `c`, where it can be read at every lab of the run: the fit,
/// the run, and the level's pairs.
fn line<'a>(
    c: &Series,
    level: &[Point],
    previous: &'a [Point],
    last: &'a Point,
) -> Option<(Fit, Run<'a>, Vec<f64>, Vec<f64>)> {
    let own: HashMap<i64, f64> =
        c.points.iter().filter(|p| p.value.is_finite() && p.value > 0.0).map(|p| (p.lab, p.value)).collect();
    let (xs, ys): (Vec<f64>, Vec<f64>) = level
        .iter()
        .filter(|p| p.value.is_finite() && p.value > 0.0)
        .filter_map(|p| Some((*own.get(&p.lab)?, p.value)))
        .unzip();
    // Only a line the level shows (its slope beyond its noise), read where the level's machines
    // were: a machine unlike any of the level's goes to the rules after this (the machine's
    // size taken out, as measured).
    let fit = Fit::of(&xs, &ys).filter(|f| f.slope_p() <= SLOPE_P)?;
    let run: Run<'a> =
        std::iter::once(last).chain(previous).map(|p| Some((*own.get(&p.lab)?, p))).collect::<Option<_>>()?;
    run.iter().all(|(x, _)| fit.covers(*x, COVERS_MARGIN)).then_some((fit, run, xs, ys))
}

/// The latency failures of `judged` a slower machine explains, by the measure `metric` (called
/// `name`), taken back; the others say what the machine took out.
fn slower_machine(
    judged: &mut [Judged],
    all: &[Series],
    lab_id: i64,
    gates: &[Gate],
    rules: &Rules<'_>,
    metric: &str,
    name: &str,
) {
    let gate_of = |j: &Judged| gates.iter().find(|g| g.text() == j.gate);
    let lab_failed = |j: &Judged| j.adjusted.is_some() && (j.past_level || j.alone_far);
    let mut family = judged.to_vec();
    let mut scaled = Vec::new();
    for (i, j) in judged.iter().enumerate().filter(|(_, j)| j.outcome == Outcome::Worse) {
        let Some(gate) = gate_of(j).filter(|g| g.metric.is_latency() && g.above) else { continue };
        if lab_failed(j) {
            continue;
        }
        let Some(s) = all.iter().find(|s| s.key == j.key) else { continue };
        let Some(g) = share_of(s, all, metric) else { continue };
        let machine_gate = Gate { metric: Metric::GeneratorCpu, above: true, limit_pct: gate.limit_pct };
        let mut m = [judge(g, lab_id, &machine_gate, all, rules)];
        holm(&mut m, std::slice::from_ref(&machine_gate), rules.alone);
        // A lab that fails alone (far past its gate, against a level whose spread may be all of
        // one state of the machine) is looked at again on any slower machine: loadlab's own CPU
        // spreads more between labs than a target's median (27% against 15% on a Python
        // server), so its own rules seldom call it slower where the target's p50 doubled with
        // it (16 of 140 A/A checks failed so, docs/DECISIONS.md).
        let alone = j.alone_far && !j.past_level && j.regression.is_none() && m[0].change_pct > 0.0;
        // The probe times a fixed piece of work on the target's CPUs and spreads little between
        // labs (2-5%), so any slowing it read is taken out of the share of the latency that is
        // the target's own work ([`cpu_share`]): all of a CPU-bound server's, none of a service
        // that waits (an origin sleeping 10 ms, 15.6% slower while the probe read +10.8%, is the
        // build's).
        let share = if metric == crate::figures::MACHINE_SPEED && m[0].change_pct > 0.0 {
            cpu_share(s, all).filter(|share| *share > 0.0)
        } else {
            None
        };
        let by_rules = m[0].outcome == Outcome::Worse || alone;
        if !by_rules && share.is_none() {
            continue;
        }
        let why = format!("{name} is {} over the same labs: the machine is slower", m[0].change_text());
        // A tail grows faster than the machine slows: requests queue behind slower ones. At the
        // loads of these labs (a core a fifth to a third busy) a queue's waits grow as about the
        // slowing's power 1.4-1.7 (M/M/1); a tail is judged relative to its square. A server's
        // own work moved up to twice the probe's in the same spells (a CPU-bound Python server's
        // CPU per request against the probe: slope 1.66 over 12 A/A histories), so its share of
        // the latency is scaled by the probe's square.
        let by_rules_power: f64 = if !by_rules {
            0.0
        } else if super::is_tail(gate.metric) {
            2.0
        } else {
            1.0
        };
        let power = share.map_or(by_rules_power, |share| by_rules_power.max(PROBE_POWER * share));
        if let Some(rel) = relative(s, g, rules, power) {
            family[i] = judge(&rel, lab_id, gate, all, rules);
        } else {
            family[i].outcome = Outcome::Held;
        }
        // A CPU-bound server's latency is its CPU's, however much a queue amplifies it: where
        // its CPU per request is what the probe explains, so is its latency.
        let cpu = share.filter(|share| *share >= CPU_BOUND_SHARE).and_then(|_| cpu_explained(s, g, gate, all, rules));
        scaled.push((i, why, power, share, cpu));
    }
    if !scaled.is_empty() {
        holm(&mut family, gates, rules.alone);
    }
    for (i, why, power, share, cpu) in scaled {
        // A change still far past its gate relative to the machine is more than the machine
        // explains (a tail relative to its square: a Go service's p99 +140% while loadlab's own
        // CPU per request was +70%, in an A/A history, failed 2 of 140 checks as measured).
        let far = gate_of(&judged[i]).is_some_and(|g| {
            Gate { limit_pct: g.limit_pct * super::ALONE_TIMES, ..g.clone() }
                .passed_by(1.0 + family[i].change_pct / 100.0)
        });
        let scaled_by = match share {
            Some(share) if power > 1.0 && power == PROBE_POWER * share => format!(
                " to the power {power:.2} (the target's CPU per request is {:.0}% of its median latency, scaled by the probe's square)",
                share * 100.0
            ),
            Some(share) if power < 1.0 => format!(
                " to the power {power:.2} (the target's CPU per request is {:.0}% of its median latency)",
                share * 100.0
            ),
            _ if power == 2.0 => " squared, as queues grow".to_owned(),
            _ => String::new(),
        };
        let j = &mut judged[i];
        if let (true, Some(cpu)) = (family[i].outcome == Outcome::Worse || far, cpu) {
            j.outcome = Outcome::Held;
            j.past_level = false;
            j.alone_far = false;
            j.regression = None;
            j.machine_scaled = None;
            j.machine = Some(format!(
                "{why}; relative to it{scaled_by} {} still, but the target's CPU per request relative to its square is {}: the latency of a server whose CPU per request is its latency follows its CPU, which the machine explains",
                family[i].change_text(),
                cpu
            ));
        } else if family[i].outcome == Outcome::Worse || far {
            // More than the machine explains: still the build's.
            j.machine_scaled =
                Some(format!("{why}, and relative to it{scaled_by} {} still fails", family[i].change_text()));
        } else {
            j.outcome = Outcome::Held;
            j.past_level = false;
            j.regression = None;
            j.machine_scaled = None;
            j.machine =
                Some(format!("{why}, and can explain it (relative to it{scaled_by}, {})", family[i].change_text()));
        }
    }
}

/// The share of its latency a target's CPU per request must be for its latency to follow its
/// CPU (a CPU-bound Python server's: 98-100%).
const CPU_BOUND_SHARE: f64 = 0.8;

/// The target's CPU per request at the place of `s`, relative to the probe `g`'s time squared:
/// its change at the lab judged against the median lab of its level, in words, where that
/// is within twice the latency `gate`'s limit (a change the machine explains). A real change of
/// the server's work is not: the probe does not time the build.
fn cpu_explained(s: &Series, g: &Series, gate: &Gate, all: &[Series], rules: &Rules<'_>) -> Option<String> {
    let cpu = share_of(s, all, Metric::TargetCpu.name())?;
    if cpu.points.last().map(|p| p.lab) != s.points.last().map(|p| p.lab) {
        return None;
    }
    let rel = relative(cpu, g, rules, PROBE_POWER)?;
    let (last, before) = rel.points.split_last()?;
    // The labs of its level: since the relative series' last change before the lab.
    let since = rel.level_starts().into_iter().filter(|&i| i < before.len()).max().unwrap_or(0);
    let before: Vec<f64> = before[since..].iter().map(|p| p.value).collect();
    if before.len() < 3 {
        return None;
    }
    let change = (last.value / stats::describe::median(&before) - 1.0) * 100.0;
    (change <= 2.0 * gate.limit_pct).then(|| format!("{change:+.1}% against the median lab of its level"))
}

/// The probe's power for a server whose latency is all its own CPU: its CPU per request moved
/// up to twice the probe's time in the same spells (docs/DECISIONS.md).
const PROBE_POWER: f64 = 2.0;

/// The share of `s`'s latency that is its target's own CPU: the target's CPU per request (µs)
/// against its median latency (ms) at the same place, the median over the labs with both,
/// at most 1 (a server whose threads work in parallel spends more CPU than it takes time).
/// None where the target's CPU is not measured (a target inside loadlab, a remote one without
/// its exporter).
fn cpu_share(s: &Series, all: &[Series]) -> Option<f64> {
    let at = |metric: Metric| -> Option<HashMap<i64, f64>> {
        let series = share_of(s, all, metric.name())?;
        Some(series.points.iter().filter(|p| p.value.is_finite() && p.value > 0.0).map(|p| (p.lab, p.value)).collect())
    };
    let (cpu, p50) = (at(Metric::TargetCpu)?, at(Metric::P50)?);
    let shares: Vec<f64> =
        s.points.iter().filter_map(|p| Some(cpu.get(&p.lab)? / (p50.get(&p.lab)? * 1000.0))).collect();
    (!shares.is_empty()).then(|| stats::describe::median(&shares).min(1.0))
}
