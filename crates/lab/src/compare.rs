//! What changed between two labs (`lab compare OLD NEW`) or two results files (`report
//! --compare`): cells matched by target and load point, each metric that matters compared with
//! its 95% interval and a verdict (better, worse, or `~`: not significant, or within the noise
//! threshold), a geometric-mean row as benchstat prints, and a CI gate (`--fail-on`).
//!
//! The statistics are those of the lab (`measure::estimate`): across repeats with 3 or more a side, else
//! within the runs (a block bootstrap over their 1 s windows, re-read from the step files).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::calibration::Calibration;
use crate::measure::ab::{judge, Found, Sample};
use crate::measure::estimate::{Basis, Comparison};
use crate::measure::metric::Metric;
use crate::measure::windows::Window;
use stats::describe::centre;

use crate::measure::metric::COMPARED;
use crate::plan::gate::Gate;
use crate::side::{CellData, Side};

/// What a compared metric did, old to new (a row's `verdict` in compare.json).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Better,
    Worse,
    /// Not significant, or within the noise threshold.
    Same,
}

impl Change {
    pub fn label(self) -> &'static str {
        match self {
            Change::Better => "better",
            Change::Worse => "worse",
            Change::Same => "~",
        }
    }
}

/// One metric of one cell, old against new.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub target: String,
    pub load: String,
    #[serde(rename = "measure")]
    pub metric: Metric,
    pub old: f64,
    pub new: f64,
    /// (new / old - 1) in %, with its 95% interval.
    pub change_pct: f64,
    pub ci_pct: Option<(f64, f64)>,
    pub p: Option<f64>,
    pub verdict: Change,
    pub basis: Basis,
    /// Why `~` where that is not plain: within the threshold, run-to-run variation not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Held to the service's calibrated spread (`lab calibrate`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub calibrated: bool,
}

impl Row {
    /// Why a gate cannot judge this row, if it cannot: CPU read once a step has no test at one
    /// run a side; any metric's change within one run a side leaves out how much two labs of one
    /// build differ (bench/aa.sh: such gates failed on 6 of 16 A/A pairs of nginx, where 5% was
    /// the aim), so without a calibration it is not judged.
    pub fn not_gateable(&self) -> Option<String> {
        if self.p.is_none() {
            return Some(self.note.clone().unwrap_or_default());
        }
        (self.basis == Basis::WithinRun && !self.calibrated).then(|| {
            "one run a side: the change within runs leaves out how much two labs of one build differ; \
             set repeats >= 3, or give a calibration (lab calibrate), to gate on it"
                .to_owned()
        })
    }
}

impl Gate {
    /// The row breaks the gate: a significant change (beyond the threshold) past the limit.
    pub fn broken_by(&self, r: &Row) -> bool {
        r.metric == self.metric
            && r.verdict != Change::Same
            && if self.above { r.change_pct > self.limit_pct } else { r.change_pct < self.limit_pct }
    }
}

/// The comparison of two sides.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Changes {
    pub old: String,
    pub new: String,
    /// Changes within this (%) are `~` however significant.
    pub threshold_pct: f64,
    /// Where the run-to-run spread the rows are held to was measured (`lab calibrate`), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<String>,
    /// The labs that calibration was measured from (0 without one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub calibration_labs: usize,
    pub rows: Vec<Row>,
    /// Per metric, the geometric mean of new / old over the cells, as a change in %.
    pub geomean_pct: Vec<(Metric, f64)>,
    /// Cells on one side only, and steps left out, one line each.
    pub only_old: Vec<String>,
    pub only_new: Vec<String>,
    pub excluded: Vec<String>,
    pub gates: Vec<Gate>,
    /// The gate lines broken, with the row that broke each.
    pub failed: Vec<String>,
    /// Gates that could not be judged on some cell (a CPU figure with one run a side and no
    /// calibration has no spread to test against), one line each: not a pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<String>,
    /// Where the CPU per request moved, in cells profiled on both sides ([`with_profiles`]).
    pub profiles: Vec<profile::diff::Differential>,
    /// Profiles that could not be compared, one line each.
    pub profile_problems: Vec<String>,
    /// Per cell traced on both sides, the span whose time in the slowest requests grew most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tails: Vec<crate::measure::tails::TailGrowth>,
}

impl Changes {
    /// What the gates were held to, for a reader: the family-wise rate over the rows they
    /// watch, and what two labs run one after the other cannot show. None without gates.
    pub fn held_to(&self) -> Option<String> {
        if self.gates.is_empty() {
            return None;
        }
        let watched = self
            .rows
            .iter()
            .filter(|r| self.gates.iter().any(|g| g.metric == r.metric) && r.not_gateable().is_none())
            .count();
        if watched == 0 {
            return Some("The gates watch no row that could be judged: nothing was held to them.".into());
        }
        Some(format!(
            "The gates were held to a family-wise {:.0}% over the {watched} rows they watch (Holm). Each side's \
             repeats ran inside its own lab, so a drift of the machine between the two labs is not in the interval; \
             on a shared machine, `lab ab` interleaves the two builds in one job.",
            (1.0 - stats::CONFIDENCE) * 100.0
        ))
    }
}

/// `o` with the differentials of every cell profiled on both sides (each side's first profiled
/// step), their flame graphs written into `out/profiles`.
pub(crate) fn with_profiles(mut o: Changes, old: &Side, new: &Side, out: &Path) -> Changes {
    for (n, (key, nc)) in new.cells.iter().enumerate() {
        let Some(oc) = old.cells.get(key) else { continue };
        let (Some((oid, op, od)), Some((nid, np, nd))) = (oc.first_profile(), nc.first_profile()) else { continue };
        let title = format!("{} at {}: {} against {}", nc.target, nc.label, new.name, old.name);
        let (oname, nname) = (format!("old {oid}"), format!("new {nid}"));
        match profile::diff::compare(
            (&op, &od, &oname),
            (&np, &nd, &nname),
            out,
            "profiles",
            &format!("compare-{}", n + 1),
            &title,
        ) {
            Ok(d) => o.profiles.push(d),
            Err(e) => o.profile_problems.push(format!("{} at {}: profiles not compared: {e}", nc.target, nc.label)),
        }
    }
    o
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn row(metric: Metric, old: &CellData, new: &CellData, threshold_pct: f64, spread: Option<Found<'_>>) -> Option<Row> {
    let vals = |c: &CellData| -> Vec<f64> {
        c.steps.iter().filter_map(|s| s.values.get(&metric).copied()).filter(|v| v.is_finite()).collect()
    };
    let (a, b) = (vals(new), vals(old));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let windows = |c: &CellData| -> Vec<Window> { c.steps.iter().flat_map(|s| s.windows.iter().cloned()).collect() };
    let requests = |c: &CellData| c.steps.iter().map(|s| s.requests).min().unwrap_or(0);
    let (wa, wb) = (windows(new), windows(old));
    let c: Comparison = judge(
        metric,
        Sample { values: &a, windows: &wa, requests: requests(new) },
        Sample { values: &b, windows: &wb, requests: requests(old) },
        spread,
    );
    let change_pct = (c.ratio - 1.0) * 100.0;
    let within = stats::floors::within(c.ratio, threshold_pct / 100.0);
    let verdict = match (c.significant && !within, (c.ratio > 1.0) == metric.higher_is_better()) {
        (false, _) => Change::Same,
        (true, true) => Change::Better,
        (true, false) => Change::Worse,
    };
    let note = if c.significant && within {
        Some(format!("within the {threshold_pct}% threshold"))
    } else if verdict == Change::Same && metric.is_sampled() && (a.len() < 2 || b.len() < 2) && spread.is_none() {
        Some(
            "CPU is read once a step, from its processes' CPU clocks: one run a side has no spread to test it \
             against; set repeats >= 3, or give a calibration, to compare it"
                .into(),
        )
    } else {
        c.note.clone()
    };
    Some(Row {
        target: new.target.clone(),
        load: new.label.clone(),
        metric,
        // The values the change is the ratio of.
        old: centre(&b),
        new: centre(&a),
        change_pct,
        ci_pct: c.ci.map(|(lo, hi)| ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0)),
        p: c.p,
        verdict,
        basis: c.basis,
        note,
        calibrated: spread.is_some(),
    })
}

/// The gate lines broken. Many cells and metrics judged at once would raise the chance of one
/// false "worse" with each one added, so a row breaks a gate only when its change survives
/// Holm's correction over every row the gates watch: the chance that a gate fails on noise
/// stays at 5% however many cells there are.
fn gate_failures(gates: &[Gate], rows: &[Row]) -> Vec<String> {
    let watched: Vec<&Row> =
        rows.iter().filter(|r| gates.iter().any(|g| g.metric == r.metric) && r.not_gateable().is_none()).collect();
    // A bootstrap's smallest p says no resample crossed 1: less than it can resolve, not equal.
    let floor = 1.0 / stats::bootstrap::RESAMPLES as f64;
    let p = |r: &Row| r.p.map_or(1.0, |p| if r.basis == Basis::WithinRun && p <= floor { 0.0 } else { p });
    let stands = stats::holm(&watched.iter().map(|r| p(r)).collect::<Vec<_>>(), 1.0 - stats::CONFIDENCE);
    gates
        .iter()
        .flat_map(|g| {
            watched
                .iter()
                .zip(&stands)
                .filter(|(r, stands)| **stands && g.broken_by(r))
                .map(|(r, _)| format!("{}: {} at {}: {:+.1}%", g.text(), r.target, r.load, r.change_pct))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// How a comparison decides: the noise threshold, the gates, and the service's measured spread.
#[derive(Clone, Debug, Default)]
pub struct Rule {
    /// Changes within this (%) are `~` however significant.
    pub threshold_pct: f64,
    pub gates: Vec<Gate>,
    /// From `lab calibrate`, with where it was read from.
    pub calibration: Option<Calibration>,
}

/// Compares `new` with `old`.
pub fn changes(old: &Side, new: &Side, rule: Rule) -> Changes {
    let Rule { threshold_pct, gates, calibration } = rule;
    let mut rows = Vec::new();
    let mut excluded = Vec::new();
    let mut tails = Vec::new();
    for (key, n) in &new.cells {
        let Some(o) = old.cells.get(key) else { continue };
        tails.extend(crate::measure::tails::grew(o, n));
        for (side, c) in [("old", o), ("new", n)] {
            excluded.extend(c.excluded.iter().map(|e| format!("{side} {e}")));
        }
        let spread = |m: Metric| calibration.as_ref().and_then(|c| c.find(key, m));
        rows.extend(COMPARED.iter().filter_map(|m| row(*m, o, n, threshold_pct, spread(*m))));
    }
    let describe = |c: &CellData| format!("{} at {}", c.target, c.label);
    let only_old = old.cells.iter().filter(|(k, _)| !new.cells.contains_key(*k)).map(|(_, c)| describe(c)).collect();
    let only_new = new.cells.iter().filter(|(k, _)| !old.cells.contains_key(*k)).map(|(_, c)| describe(c)).collect();
    let geomean_pct = COMPARED
        .iter()
        .filter_map(|m| {
            // Over the rows' own ratios (those their intervals are about).
            let ratios: Vec<f64> = rows
                .iter()
                .filter(|r| r.metric == *m && r.change_pct > -100.0 && r.change_pct.is_finite())
                .map(|r| 1.0 + r.change_pct / 100.0)
                .collect();
            (!ratios.is_empty()).then(|| (*m, (centre(&ratios) - 1.0) * 100.0))
        })
        .collect();
    let failed = gate_failures(&gates, &rows);
    // A gate on a row it cannot judge (one run a side, uncalibrated) is said, not passed.
    let not_judged = gates
        .iter()
        .flat_map(|g| {
            rows.iter()
                .filter(|r| r.metric == g.metric)
                .filter_map(|r| {
                    let why = r.not_gateable()?;
                    Some(format!("{}: {} at {}: NOT JUDGED ({why})", g.text(), r.target, r.load))
                })
                .collect::<Vec<_>>()
        })
        // A gate that watches no row at all judged nothing: said, never a pass.
        .chain(gates.iter().filter(|g| !rows.iter().any(|r| r.metric == g.metric)).map(|g| {
            let why = match g.metric {
                Metric::TargetCpu => "the target's CPU was not measured on both sides of any cell",
                _ => "no cell has the figure on both sides",
            };
            format!("{}: NOT JUDGED (it watches no row: {why})", g.text())
        }))
        .collect();
    Changes {
        old: old.name.clone(),
        new: new.name.clone(),
        threshold_pct,
        calibration_labs: calibration.as_ref().map_or(0, |c| c.labs.len()),
        calibration: calibration.map(|c| c.describe(new.machine.as_ref())),
        rows,
        geomean_pct,
        only_old,
        only_new,
        excluded,
        gates,
        failed,
        not_judged,
        profiles: Vec::new(),
        profile_problems: Vec::new(),
        tails,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::windows::tests::run;
    use crate::side::StepData;
    use std::collections::BTreeMap;

    fn side(median_ms: f64, seed: u64) -> Side {
        let windows = run(10, 100, median_ms, seed);
        let all: Vec<&Window> = windows.iter().collect();
        let mut values = BTreeMap::new();
        for m in [Metric::Throughput, Metric::P50, Metric::P99, Metric::Success] {
            values.insert(m, crate::measure::estimate::window_metric(m, &all).unwrap());
        }
        let cell = CellData {
            target: "svc".into(),
            label: "100 req/s, http1".into(),
            steps: vec![StepData {
                id: "s".into(),
                values,
                windows,
                requests: 1_000,
                bytes_in: 0,
                files: Vec::new(),
                profile: None,
                tail: None,
                speed_us: None,
            }],
            excluded: vec![],
        };
        Side { name: format!("{median_ms}"), cells: BTreeMap::from([("svc @ x".to_owned(), cell)]), machine: None }
    }

    #[test]
    fn a_gate_on_a_figure_no_cell_has_judged_nothing_and_says_so() {
        let gates = Gate::parse_list("target_cpu>+5%").unwrap();
        let o = changes(&side(10.0, 1), &side(10.0, 2), Rule { threshold_pct: 2.0, gates, calibration: None });
        assert!(o.failed.is_empty());
        assert_eq!(
            o.not_judged,
            vec!["target_cpu>+5%: NOT JUDGED (it watches no row: the target's CPU was not measured on both sides of any cell)"]
        );
        assert!(o.held_to().unwrap().contains("watch no row"), "{:?}", o.held_to());
    }

    #[test]
    fn a_slower_run_is_worse_on_latency_and_one_run_a_side_is_not_gated() {
        let gates = Gate::parse_list("p50>+10%, throughput<-3%").unwrap();
        let o = changes(&side(10.0, 1), &side(13.0, 2), Rule { threshold_pct: 2.0, gates, calibration: None });
        let p50 = o.rows.iter().find(|r| r.metric == Metric::P50).unwrap();
        assert_eq!(p50.verdict, Change::Worse, "{p50:?}");
        assert!((p50.change_pct - 30.0).abs() < 4.0, "{p50:?}");
        let (lo, hi) = p50.ci_pct.unwrap();
        assert!(lo > 0.0 && hi > lo, "{p50:?}");
        assert_eq!(p50.basis, Basis::WithinRun);
        let tp = o.rows.iter().find(|r| r.metric == Metric::Throughput).unwrap();
        assert_eq!(tp.verdict, Change::Same, "{tp:?}");
        // One run a side: the change is shown, and the gates say they could not judge it.
        assert!(o.failed.is_empty(), "{:?}", o.failed);
        assert_eq!(o.not_judged.len(), 2, "{:?}", o.not_judged);
        assert!(o.not_judged[0].starts_with("p50>+10%: svc at 100 req/s, http1: NOT JUDGED (one run a side"));
        // Held to a calibration, the same rows are gated.
        let mut calibrated = o.rows.clone();
        calibrated.iter_mut().for_each(|r| r.calibrated = true);
        let failed = gate_failures(&Gate::parse_list("p50>+10%").unwrap(), &calibrated);
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(failed[0].starts_with("p50>+10%: svc at 100 req/s, http1: +"), "{failed:?}");
        assert!(o.geomean_pct.iter().any(|(m, g)| *m == Metric::P50 && (*g - 30.0).abs() < 4.0));
        // The same run against itself: nothing changed, nothing fails.
        let same = changes(
            &side(10.0, 1),
            &side(10.0, 1),
            Rule { threshold_pct: 2.0, gates: Gate::parse_list("p50>+10%").unwrap(), calibration: None },
        );
        assert!(same.rows.iter().all(|r| r.verdict == Change::Same), "{:?}", same.rows);
        assert!(same.failed.is_empty());
    }

    fn lab_gate_default() -> &'static str {
        crate::plan::gate::HISTORY_DEFAULT
    }

    #[test]
    fn gates_parse_and_refuse() {
        assert_eq!(Gate::parse("p99>+5%").unwrap(), Gate { metric: Metric::P99, above: true, limit_pct: 5.0 });
        assert_eq!(Gate::parse("throughput<-3%").unwrap().text(), "throughput<-3%");
        assert_eq!(Gate::parse("target_cpu>+10%").unwrap().metric, Metric::TargetCpu);
        // p90 is a metric, but not one compared: a gate on it could never break.
        for bad in ["p99", "p42>+5%", "p99>5", "p99>fast%", "p90>+5%", "p99>-5%", "throughput<+3%", "p50<-100%"] {
            assert!(Gate::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Gate::parse("p99>-5%").unwrap_err(), "\"p99>-5%\": a gate on p99> takes a change like +5%");
        // A history records p90, and gates it.
        assert_eq!(Gate::parse_history_list("p90>+5%").unwrap()[0].metric, Metric::P90);
        assert_eq!(Gate::parse_history_list(lab_gate_default()).unwrap().len(), 3);
        let g = Gate::parse("throughput<-3%").unwrap();
        assert!(g.passed_by(0.96) && !g.passed_by(0.98) && !g.passed_by(1.5));
    }
}
