//! The machine as a control. On a shared or virtual machine every process's CPU per request
//! moves together from lab to lab: over 75 A/A labs each of nginx and the origin simulator,
//! loadlab's own CPU per request and the target's correlated at 0.96 to 0.99, the target's
//! lab-to-lab spread was 17-22% and its ratio to loadlab's 4-5% (docs/DECISIONS.md). A spell of
//! a slower machine then reads as a regression of every target. loadlab's own CPU per request
//! (`generator_cpu`: the same work at the same rate in every lab of a series) measures the
//! machine, so:
//! - a `target_cpu` series fails only when it fails both as measured and relative to loadlab's
//!   own CPU in the same labs (the same rules on the ratio series: two tests that must both
//!   reject, which keeps the gate's false-alarm level and costs power only where loadlab's CPU
//!   moved with the target's);
//! - a latency series that fails while loadlab's own CPU per request is beyond its level the
//!   same way (the machine slower, by the same rules) is a warning instead: the machine, not the
//!   build, can explain it, and a rerun tells.
//!
//! Either is said on the row (`Judged::machine`) and among the check's warnings.

use std::collections::HashMap;

use lab::{Gate, Metric};

use super::{holm, judge, Judged, Outcome, Rules};
use crate::series::{Key, Point, Series};

/// The metric that measures the machine.
pub(super) const GENERATOR: &str = "generator_cpu";

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

/// `s` divided, lab by lab, by loadlab's own CPU per request `g`, with change points and
/// acceptances of its own; none when a lab of `s` lacks loadlab's figure.
fn relative(s: &Series, g: &Series, rules: &Rules<'_>) -> Option<Series> {
    let own: HashMap<i64, f64> = g.points.iter().map(|p| (p.lab, p.value)).collect();
    let points: Vec<Point> = s
        .points
        .iter()
        .filter_map(|p| {
            let by = *own.get(&p.lab)?;
            (by.is_finite() && by > 0.0).then(|| Point { value: p.value / by, ..p.clone() })
        })
        .collect();
    if points.len() < s.points.len() {
        return None;
    }
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let changes = stats::change_points::change_points(&values, rules.settings);
    let mut r =
        Series { key: s.key.clone(), machine_text: s.machine_text.clone(), points, changes, accepted: Vec::new() };
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
    for (i, j) in judged.iter().enumerate().filter(|(_, j)| j.outcome == Outcome::Worse) {
        let Some(gate) = gate_of(j).filter(|g| g.metric == Metric::TargetCpu) else { continue };
        let Some(s) = all.iter().find(|s| s.key == j.key) else { continue };
        let Some(rel) = generator_of(s, all).and_then(|g| relative(s, g, rules)) else { continue };
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
    // Latencies: is the machine slower in the labs that failed?
    for j in judged.iter_mut().filter(|j| j.outcome == Outcome::Worse) {
        let Some(gate) = gate_of(j).filter(|g| g.metric.is_latency() && g.above) else { continue };
        let Some(s) = all.iter().find(|s| s.key == j.key) else { continue };
        let Some(g) = generator_of(s, all) else { continue };
        let machine_gate = Gate { metric: Metric::GeneratorCpu, above: true, limit_pct: gate.limit_pct };
        let mut m = [judge(g, lab_id, &machine_gate, all, rules)];
        holm(&mut m, std::slice::from_ref(&machine_gate), false);
        if m[0].outcome == Outcome::Worse {
            j.outcome = Outcome::Held;
            j.past_level = false;
            j.regression = None;
            j.machine = Some(format!(
                "loadlab's own CPU per request is {} over the same labs: the machine is slower, and can explain it",
                m[0].change_text()
            ));
        }
    }
}
