//! What a lab found, from its steps' numbers: per target and load point the repeats' summary and
//! SLO verdict, per target its ceiling on a rate ladder, per hypothesis its finding. Pure: it
//! takes numbers and gives numbers, for the reports to render and `lab.json` to keep.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::matrix::{Matrix, Point};
use crate::numbers::Numbers;
use crate::plan::{Hypothesis, Plan};
use crate::stats::{compare, summarize, Comparison, Summary};
use crate::verdict::{Finding, Metric, SloVerdict};

/// One step as it ran.
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    pub id: String,
    pub target: usize,
    pub point: usize,
    pub repeat: u32,
    /// The results file, relative to the output directory.
    pub file: String,
    pub numbers: Numbers,
    pub warmup_requests: u64,
    /// Seconds since the lab started.
    pub started_s: f64,
    pub ended_s: f64,
    /// The target's process tree, and the generator, during the step.
    pub target_cpu_pct: Option<f64>,
    pub target_rss_mb: Option<f64>,
    pub generator_cpu_pct: Option<f64>,
    /// vegeta's text report of the step.
    #[serde(skip)]
    pub text: String,
}

/// The metrics summarised over repeats in every cell.
pub const SUMMARISED: [Metric; 8] = [
    Metric::Rps,
    Metric::Throughput,
    Metric::Success,
    Metric::P50,
    Metric::P90,
    Metric::P99,
    Metric::Max,
    Metric::Mean,
];

/// A target at a load point, over its repeats.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub target: usize,
    pub point: usize,
    /// Steps (indices into the lab's steps), one per repeat.
    pub steps: Vec<usize>,
    pub metrics: BTreeMap<&'static str, Summary>,
    /// p50 and p99 of successful requests only, over repeats.
    pub ok_p50: Summary,
    pub ok_p99: Summary,
    pub slo: SloVerdict,
    pub generator_limited: bool,
}

/// A target's ceiling on a rate ladder: the highest rate that held the SLO below the first
/// that broke it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Ceiling {
    pub target: String,
    pub holds_up_to: Option<f64>,
    pub breaks_at: Option<f64>,
    /// The clauses broken at `breaks_at`.
    pub broke: Vec<String>,
}

/// A hypothesis at one load point.
#[derive(Clone, Debug, Serialize)]
pub struct HypothesisPoint {
    pub point: String,
    /// Medians of the subject and of the other.
    pub subject: f64,
    pub other: f64,
    pub comparison: Comparison,
    pub finding: Finding,
}

#[derive(Clone, Debug, Serialize)]
pub struct HypothesisResult {
    pub claim: String,
    pub metric: Metric,
    pub subject: String,
    pub than: String,
    pub lower: bool,
    pub points: Vec<HypothesisPoint>,
    pub finding: Finding,
}

/// Everything the lab found.
#[derive(Clone, Debug, Serialize)]
pub struct Findings {
    pub cells: Vec<Cell>,
    pub ceilings: Vec<Ceiling>,
    pub hypotheses: Vec<HypothesisResult>,
    /// Some step broke the SLO (the exit status says so).
    pub slo_failed: bool,
}

pub fn find(plan: &Plan, matrix: &Matrix, steps: &[StepResult]) -> Findings {
    let mut cells = Vec::new();
    for p in 0..matrix.points.len() {
        for t in 0..plan.targets.len() {
            let idx: Vec<usize> =
                steps.iter().enumerate().filter(|(_, s)| s.target == t && s.point == p).map(|(i, _)| i).collect();
            if idx.is_empty() {
                continue;
            }
            let numbers: Vec<&Numbers> = idx.iter().map(|&i| &steps[i].numbers).collect();
            let values = |m: Metric| numbers.iter().map(|n| m.of(n)).collect::<Vec<_>>();
            cells.push(Cell {
                target: t,
                point: p,
                metrics: SUMMARISED.iter().map(|m| (m.name(), summarize(&values(*m)))).collect(),
                ok_p50: summarize(&numbers.iter().map(|n| n.ok_latency.p50).collect::<Vec<_>>()),
                ok_p99: summarize(&numbers.iter().map(|n| n.ok_latency.p99).collect::<Vec<_>>()),
                slo: SloVerdict::of(&plan.slo, &numbers),
                generator_limited: numbers.iter().any(|n| n.generator_limited),
                steps: idx,
            });
        }
    }
    let ceilings =
        if plan.slo.is_empty() || plan.load.rate.len() < 2 { Vec::new() } else { ceilings(plan, matrix, &cells) };
    let hypotheses = plan.hypotheses.iter().map(|h| hypothesis(h, plan, matrix, steps)).collect();
    let slo_failed = cells.iter().any(|c| c.slo.failed());
    Findings { cells, ceilings, hypotheses, slo_failed }
}

/// Per target (and per other setting of the point), walking the rates upwards.
fn ceilings(plan: &Plan, matrix: &Matrix, cells: &[Cell]) -> Vec<Ceiling> {
    let mut out = Vec::new();
    for (t, target) in plan.targets.iter().enumerate() {
        // Group the target's cells by everything but the rate.
        let mut groups: BTreeMap<String, Vec<&Cell>> = BTreeMap::new();
        for c in cells.iter().filter(|c| c.target == t) {
            let p = &matrix.points[c.point];
            let key = Point { rate: None, ..p.clone() }.label(&crate::matrix::Axes { rate: false, ..matrix.axes });
            groups.entry(key).or_default().push(c);
        }
        for (key, mut group) in groups {
            group.sort_by(|a, b| {
                matrix.points[a.point]
                    .rate
                    .partial_cmp(&matrix.points[b.point].rate)
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let mut ceiling = Ceiling {
                target: if key == "all" { target.name.clone() } else { format!("{} ({key})", target.name) },
                holds_up_to: None,
                breaks_at: None,
                broke: Vec::new(),
            };
            for c in group {
                let rate = matrix.points[c.point].rate;
                match &c.slo {
                    SloVerdict::Pass => ceiling.holds_up_to = rate,
                    SloVerdict::Fail { broken } => {
                        ceiling.breaks_at = rate;
                        ceiling.broke = broken.clone();
                        break;
                    }
                    // A generator-limited step says nothing about the target.
                    SloVerdict::GeneratorLimited | SloVerdict::None => {}
                }
            }
            out.push(ceiling);
        }
    }
    out
}

/// Compares the subject with the other at every load point where both ran.
fn hypothesis(h: &Hypothesis, plan: &Plan, matrix: &Matrix, steps: &[StepResult]) -> HypothesisResult {
    let target_index = |name: &str| plan.targets.iter().position(|t| t.name == name);
    let values = |t: usize, p: usize| -> Vec<f64> {
        steps
            .iter()
            .filter(|s| s.target == t && s.point == p && !s.numbers.generator_limited)
            .map(|s| h.metric.of(&s.numbers))
            .collect()
    };
    let mut points = Vec::new();
    let mut add = |label: String, a: Vec<f64>, b: Vec<f64>| {
        if a.is_empty() || b.is_empty() {
            return;
        }
        let comparison = compare(&a, &b);
        let finding = Finding::of(&comparison, h.lower);
        points.push(HypothesisPoint {
            point: label,
            subject: crate::stats::median(&a),
            other: crate::stats::median(&b),
            comparison,
            finding,
        });
    };
    match (target_index(&h.subject), target_index(&h.than)) {
        // Two targets, at each load point.
        (Some(a), Some(b)) => {
            for (p, point) in matrix.points.iter().enumerate() {
                add(point.label(&matrix.axes), values(a, p), values(b, p));
            }
        }
        // Two variants, for each target at each point that differs only in the variant.
        _ => {
            for (t, target) in plan.targets.iter().enumerate() {
                for (pa, a) in
                    matrix.points.iter().enumerate().filter(|(_, p)| p.variant.as_deref() == Some(&h.subject))
                {
                    let twin = matrix.points.iter().position(|b| {
                        b.variant.as_deref() == Some(&h.than)
                            && Point { variant: None, ..b.clone() } == Point { variant: None, ..a.clone() }
                    });
                    if let Some(pb) = twin {
                        let axes = crate::matrix::Axes { variant: false, ..matrix.axes };
                        let label = format!("{}, {}", target.name, a.label(&axes));
                        add(label, values(t, pa), values(t, pb));
                    }
                }
            }
        }
    }
    let finding = Finding::overall(&points.iter().map(|p| p.finding).collect::<Vec<_>>());
    HypothesisResult {
        claim: h.claim.clone(),
        metric: h.metric,
        subject: h.subject.clone(),
        than: h.than.clone(),
        lower: h.lower,
        points,
        finding,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numbers::Latencies;
    use std::path::Path;

    fn plan(extra: &str) -> Plan {
        let text = format!(
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.b]\nurl = \"http://127.0.0.1:2/\"\n\
             [load]\nrate = [100, 200, 300]\nrepeats = 3\n[slo]\np99 = \"< 100ms\"\n{extra}"
        );
        crate::plan::parse(&text, "t.toml", Path::new(".")).unwrap()
    }

    /// Steps where a's p99 is 50 ms + 10 ms per 100/s, b's twice that, with a little noise.
    fn steps(plan: &Plan, m: &Matrix) -> Vec<StepResult> {
        m.steps
            .iter()
            .map(|s| {
                let rate = m.points[s.point].rate.unwrap();
                let base = 50.0 + rate / 10.0;
                let p99 = if s.target == 0 { base } else { 2.0 * base } + s.repeat as f64;
                StepResult {
                    id: s.id.clone(),
                    target: s.target,
                    point: s.point,
                    repeat: s.repeat,
                    file: String::new(),
                    numbers: Numbers {
                        success: 1.0,
                        rate,
                        latency: Latencies { p99, ..Default::default() },
                        ..Default::default()
                    },
                    warmup_requests: 0,
                    started_s: 0.0,
                    ended_s: 0.0,
                    target_cpu_pct: None,
                    target_rss_mb: None,
                    generator_cpu_pct: None,
                    text: String::new(),
                }
            })
            .filter(|_| !plan.targets.is_empty())
            .collect()
    }

    #[test]
    fn cells_ceilings_and_hypotheses() {
        let p = plan("[[hypotheses]]\nclaim = \"a is faster\"\nmetric = \"p99\"\nlower = \"a\"\nthan = \"b\"\n");
        let m = crate::matrix::expand(&p);
        let f = find(&p, &m, &steps(&p, &m));
        assert_eq!(f.cells.len(), 6);
        assert!(f.cells.iter().all(|c| c.steps.len() == 3));
        // a: p99 60, 70, 80 ms: holds everywhere. b: 120 ms at 100/s already breaks.
        assert_eq!(
            f.ceilings[0],
            Ceiling { target: "a".into(), holds_up_to: Some(300.0), breaks_at: None, broke: vec![] }
        );
        assert_eq!(f.ceilings[1].holds_up_to, None);
        assert_eq!(f.ceilings[1].breaks_at, Some(100.0));
        assert_eq!(f.ceilings[1].broke, vec!["p99 < 100.0ms (measured 120.0ms)".to_owned()]);
        assert!(f.slo_failed);
        let h = &f.hypotheses[0];
        assert_eq!(h.points.len(), 3);
        assert_eq!(h.finding, Finding::Supported);
        assert!((h.points[0].comparison.ratio - 0.5).abs() < 0.02, "{:?}", h.points[0]);
    }

    #[test]
    fn a_claim_the_other_way_is_rejected() {
        let p = plan("[[hypotheses]]\nclaim = \"b is faster\"\nmetric = \"p99\"\nlower = \"b\"\nthan = \"a\"\n");
        let m = crate::matrix::expand(&p);
        let f = find(&p, &m, &steps(&p, &m));
        assert_eq!(f.hypotheses[0].finding, Finding::Rejected);
    }
}
