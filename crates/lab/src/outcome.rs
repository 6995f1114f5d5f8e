//! What a lab found, from its steps' numbers: per target and load point the repeats' summary and
//! SLO verdict, per target its ceiling on a rate ladder, per hypothesis its finding. Pure: it
//! takes numbers and gives numbers, for the reports to render and `lab.json` to keep.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::estimate::{summarize, summarize_share, summarize_within, Comparison, Estimate, MIN_REPEATS};
use crate::measure::numbers::Numbers;
use crate::measure::verdict::{Finding, Metric, SloVerdict};
use crate::plan::matrix::{Matrix, Point};
use crate::plan::{Hypothesis, Plan};

/// One step as it ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub started_s: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub ended_s: f64,
    /// The target's process tree, and the generator, during the step: CPU % of one core over
    /// the counted part (from the CPU seconds below where they were read, else the samples).
    pub target_cpu_pct: Option<f64>,
    pub target_rss_mb: Option<f64>,
    pub generator_cpu_pct: Option<f64>,
    /// CPU seconds used from the warm-up's end to the step's end, read from the processes' CPU
    /// clocks in ns (`run::cpu`): none for a target without a process of its own here.
    #[serde(default)]
    pub target_cpu_s: Option<f64>,
    #[serde(default)]
    pub generator_cpu_s: Option<f64>,
    /// Why the target's CPU in this step is not a measurement (a target measured by its
    /// exporter that restarted, did not answer, or moved too few ticks), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_unmeasured: Option<String>,
    /// The target's host during the step (its node_exporter's CPU by mode), when measured;
    /// a host busy with a neighbour, or robbed by its hypervisor, leaves the step uncounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<scrape::host::HostUse>,
    /// Why the host was not measured in this step, when it was asked for and not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_unmeasured: Option<String>,
    /// loadlab's own machine during the step (`/proc/stat` at its edges): what other processes
    /// used of it beside loadlab and the target, where the target's CPU here is known. Said,
    /// recorded in a history (a busy machine can explain a slower lab there), not a reason to
    /// leave the step out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<scrape::host::HostUse>,
    /// The machine's speed during the step: a fixed piece of work's time on each CPU and on the
    /// target's (`run::speed`), the control a target's CPU per request is read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<crate::run::speed::Speed>,
    /// The target was down during this step (it had exited: when and how): not a measurement.
    pub down: Option<String>,
    /// Why the step says nothing of its target though it ran (the generator could not send, a
    /// busy machine broke the SLO), by the lab's one rule ([`crate::measure::verdict::uncounted`]),
    /// written for readers of lab.json such as `lab compare`.
    #[serde(default)]
    pub uncounted: Option<String>,
    /// Where the target's CPU went during the step (a profiled target's first repeat, or all).
    #[serde(default)]
    pub profile: Option<profile::StepProfile>,
    /// A profile asked for and not taken: why, in one line.
    #[serde(default)]
    pub profile_missing: Option<String>,
    /// A traced target's spans: where the step's tail went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<crate::run::traced::StepTraces>,
    /// vegeta's text report of the step.
    #[serde(skip)]
    pub text: String,
    /// The counted requests by second, for intervals within the run.
    #[serde(skip)]
    pub windows: Vec<crate::measure::windows::Window>,
}

impl StepResult {
    /// A step not run, `at_s` into the lab, because its target is `down` (why): recorded, with
    /// nothing measured.
    pub(crate) fn not_run(step: &crate::plan::matrix::Step, at_s: f64, down: String) -> StepResult {
        StepResult {
            id: step.id.clone(),
            target: step.target,
            point: step.point,
            repeat: step.repeat,
            file: String::new(),
            numbers: Default::default(),
            warmup_requests: 0,
            started_s: at_s,
            ended_s: at_s,
            target_cpu_pct: None,
            target_rss_mb: None,
            generator_cpu_pct: None,
            target_cpu_s: None,
            target_cpu_unmeasured: None,
            host: None,
            host_unmeasured: None,
            machine: None,
            speed: None,
            generator_cpu_s: None,
            down: Some(down),
            uncounted: None,
            profile: None,
            profile_missing: None,
            traces: None,
            text: String::new(),
            windows: Vec::new(),
        }
    }

    /// Whether the step was left out for its target's host (busy with a neighbour, robbed by
    /// its hypervisor), not for what its own numbers show.
    pub fn host_left_out(&self) -> bool {
        self.uncounted.is_some() && self.host.as_ref().and_then(|h| h.neighbour.as_ref()) == self.uncounted.as_ref()
    }

    /// Why the step says nothing of its target, if it does not count: its target was down, or
    /// the lab's rule ([`crate::measure::verdict::uncounted`]) left it out. The one answer for
    /// every reader of a lab (a comparison, a history).
    pub fn not_counted(&self) -> Option<String> {
        match (&self.down, &self.uncounted) {
            (Some(d), _) => Some(format!("target down ({d})")),
            (None, Some(u)) => Some(u.clone()),
            (None, None) => None,
        }
    }
}

impl StepResult {
    /// The step's value of `metric`: from its numbers, or CPU per request from the CPU read
    /// beside it (none where that was not measured).
    pub fn value(&self, metric: Metric) -> Option<f64> {
        match metric {
            Metric::TargetCpu if self.target_cpu_unmeasured.is_none() => {
                Metric::cpu_per_request(self.target_cpu_pct, &self.numbers)
            }
            Metric::TargetCpu => None,
            Metric::GeneratorCpu => Metric::cpu_per_request(self.generator_cpu_pct, &self.numbers),
            m => Some(m.of(&self.numbers)),
        }
    }
}

/// The metrics summarised over repeats in every cell.
pub(crate) const SUMMARISED: [Metric; 8] = [
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    pub target: usize,
    pub point: usize,
    /// Steps (indices into the lab's steps), one per repeat.
    pub steps: Vec<usize>,
    pub metrics: BTreeMap<Metric, Estimate>,
    /// p50 and p99 of successful requests only, over repeats.
    pub ok_p50: Estimate,
    pub ok_p99: Estimate,
    pub slo: SloVerdict,
    /// Repeats that did not count (the generator could not send, or a busy machine), by why.
    pub uncounted: Vec<String>,
}

/// A target's ceiling on a rate ladder: the highest rate that held the SLO below the first
/// that broke it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Ceiling {
    pub target: String,
    pub holds_up_to: Option<f64>,
    pub breaks_at: Option<f64>,
    /// The clauses broken at `breaks_at`.
    pub broke: Vec<String>,
    /// The first rate the generator could not send (nothing above it is claimed), and why.
    pub generator_limited_at: Option<f64>,
    pub generator_why: Option<String>,
    /// The first rate where no step counted for another reason (the target's host was busy):
    /// nothing at or above it is claimed either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncounted_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncounted_why: Option<String>,
}

/// A hypothesis at one load point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HypothesisPoint {
    pub point: String,
    /// Medians of the subject and of the other.
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub subject: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub other: f64,
    pub comparison: Comparison,
    pub finding: Finding,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HypothesisResult {
    pub claim: String,
    pub metric: Metric,
    pub subject: String,
    pub than: String,
    pub lower: bool,
    pub points: Vec<HypothesisPoint>,
    pub finding: Finding,
    /// Judged on a function's CPU per request as well (`where`), from the profiles.
    #[serde(default)]
    pub function: Option<crate::measure::function::FunctionFinding>,
    /// Judged on a span's self time in the slowest 1% as well (`span`), from the traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<crate::measure::span::SpanFinding>,
}

/// Everything the lab found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Findings {
    pub cells: Vec<Cell>,
    pub ceilings: Vec<Ceiling>,
    pub hypotheses: Vec<HypothesisResult>,
    /// Some step broke the SLO (the exit status says so).
    pub slo_failed: bool,
    /// What kept a verdict from being reached (generator-limited cells, a target that died),
    /// one line each: the lab is inconclusive when this is not empty.
    pub inconclusive: Vec<String>,
}

/// The steps during which other processes kept loadlab's machine busy (over
/// [`scrape::host::DEFAULT_BUSY_SHARE`] of it), in one sentence: their latencies include
/// waiting for those processes. None when no step's machine was busy.
pub(crate) fn busy_machine(steps: &[StepResult]) -> Option<String> {
    let busy: Vec<(&str, f64)> = steps
        .iter()
        .filter_map(|s| Some((s.id.as_str(), s.machine.as_ref()?.other_pct?)))
        .filter(|(_, other)| *other > scrape::host::DEFAULT_BUSY_SHARE * 100.0)
        .collect();
    let most = busy.iter().map(|b| b.1).fold(f64::NAN, f64::max);
    let cpus = steps.iter().find_map(|s| s.machine.as_ref()).map_or(0, |m| m.cpus);
    let ids: Vec<&str> = busy.iter().map(|b| b.0).take(5).collect();
    let more = if busy.len() > ids.len() { format!(" and {} more", busy.len() - ids.len()) } else { String::new() };
    (!busy.is_empty()).then(|| {
        format!(
            "loadlab's machine was busy in {} of {} steps: other processes used up to {most:.0}% of its {cpus} CPUs' \
             time ({}{more}), so their latencies include waiting for them; a history check takes such labs' \
             slower latencies as the machine's.",
            busy.len(),
            steps.len(),
            ids.join(", ")
        )
    })
}

/// Judges the steps: whether each counts, decided here once by the lab's rule and recorded in
/// the step (`uncounted`) for everything after to read; then cells, ceilings and hypotheses.
pub(crate) fn find(plan: &Plan, matrix: &Matrix, steps: &mut [StepResult]) -> Findings {
    for s in steps.iter_mut() {
        // A step on a host busy with a neighbour measured the neighbour too, as one whose
        // generator could not send measured the generator.
        s.uncounted = crate::measure::verdict::uncounted(&plan.slo, &s.numbers)
            .or_else(|| s.host.as_ref().and_then(|h| h.neighbour.clone()));
    }
    let steps: &[StepResult] = steps;
    let mut cells = Vec::new();
    for p in 0..matrix.points.len() {
        for t in 0..plan.targets.len() {
            let idx: Vec<usize> =
                steps.iter().enumerate().filter(|(_, s)| s.target == t && s.point == p).map(|(i, _)| i).collect();
            if idx.is_empty() {
                continue;
            }
            let numbers: Vec<&Numbers> = idx.iter().map(|&i| &steps[i].numbers).collect();
            let uncounted: Vec<String> = idx.iter().filter_map(|&i| steps[i].uncounted.clone()).collect();
            // The cell's numbers are those of the repeats that count: a step the generator
            // could not send has no numbers of the target.
            let counts = |i: &&usize| steps[**i].uncounted.is_none();
            let counted: Vec<&Numbers> = idx.iter().filter(counts).map(|&i| &steps[i].numbers).collect();
            let values = |m: Metric| counted.iter().map(|n| m.of(n)).collect::<Vec<_>>();
            // Fewer than 3 repeats: the spread comes from within the runs' windows.
            let pooled: Vec<crate::measure::windows::Window> =
                idx.iter().filter(counts).flat_map(|&i| steps[i].windows.iter().cloned()).collect();
            let summary = |m: Metric, v: &[f64]| {
                if v.len() >= MIN_REPEATS {
                    if m == Metric::Success {
                        summarize_share(v)
                    } else {
                        summarize(v)
                    }
                } else {
                    summarize_within(m, v, &pooled)
                }
            };
            let slo = match idx.iter().find_map(|&i| steps[i].down.clone()) {
                Some(why) if counted.is_empty() || idx.iter().all(|&i| steps[i].down.is_some()) => {
                    SloVerdict::TargetDown { why }
                }
                _ => {
                    // What the host check left out is out of the verdict too, named for its reason.
                    let left_out: Vec<Option<&str>> = idx
                        .iter()
                        .map(|&i| steps[i].uncounted.as_deref().filter(|_| steps[i].host_left_out()))
                        .collect();
                    SloVerdict::of_left_out(&plan.slo, &numbers, &left_out)
                }
            };
            cells.push(Cell {
                target: t,
                point: p,
                metrics: if counted.is_empty() {
                    BTreeMap::new()
                } else {
                    SUMMARISED.iter().map(|m| (*m, summary(*m, &values(*m)))).collect()
                },
                ok_p50: summary(Metric::P50, &counted.iter().map(|n| n.ok_latency.p50).collect::<Vec<_>>()),
                ok_p99: summary(Metric::P99, &counted.iter().map(|n| n.ok_latency.p99).collect::<Vec<_>>()),
                slo,
                uncounted,
                steps: idx,
            });
        }
    }
    let ceilings =
        if plan.slo.is_empty() || plan.load.rate.len() < 2 { Vec::new() } else { ceilings(plan, matrix, &cells) };
    let hypotheses = plan.hypotheses.iter().map(|h| hypothesis(h, plan, matrix, steps)).collect();
    let slo_failed = cells.iter().any(|c| c.slo.failed());
    let mut inconclusive: Vec<String> = cells
        .iter()
        .filter(|c| c.slo.inconclusive())
        .map(|c| {
            format!(
                "{} at {}: {}",
                plan.targets[c.target].name,
                matrix.points[c.point].label(&matrix.axes),
                c.slo.label()
            )
        })
        .collect();
    if plan.slo.is_empty() {
        // Without an SLO, a step the generator could not send is still not a measurement.
        for c in &cells {
            if let Some(why) = c.uncounted.first().filter(|_| c.metrics.is_empty()) {
                let what = match c.steps.iter().all(|&i| steps[i].host_left_out()) {
                    true => "not counted",
                    false => "generator-limited",
                };
                inconclusive.push(format!(
                    "{} at {}: {what}: {why}",
                    plan.targets[c.target].name,
                    matrix.points[c.point].label(&matrix.axes)
                ));
            }
        }
    }
    Findings { cells, ceilings, hypotheses, slo_failed, inconclusive }
}

/// Per target (and per other setting of the point), walking the rates upwards.
fn ceilings(plan: &Plan, matrix: &Matrix, cells: &[Cell]) -> Vec<Ceiling> {
    let mut out = Vec::new();
    for (t, target) in plan.targets.iter().enumerate() {
        // Group the target's cells by everything but the rate.
        let mut groups: BTreeMap<String, Vec<&Cell>> = BTreeMap::new();
        for c in cells.iter().filter(|c| c.target == t) {
            let p = &matrix.points[c.point];
            let key =
                Point { rate: None, ..p.clone() }.label(&crate::plan::matrix::Axes { rate: false, ..matrix.axes });
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
                generator_limited_at: None,
                generator_why: None,
                uncounted_at: None,
                uncounted_why: None,
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
                    // The generator could not send this rate: nothing at or above it is
                    // claimed of the target.
                    SloVerdict::GeneratorLimited { why } => {
                        ceiling.generator_limited_at = rate;
                        ceiling.generator_why = Some(why.clone());
                        break;
                    }
                    SloVerdict::NotCounted { why } => {
                        ceiling.uncounted_at = rate;
                        ceiling.uncounted_why = Some(why.clone());
                        break;
                    }
                    SloVerdict::TargetDown { .. } => break,
                    SloVerdict::None => {}
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
    let counted =
        |t: usize, p: usize| steps.iter().filter(move |s| s.target == t && s.point == p && s.not_counted().is_none());
    let values = |t: usize, p: usize| -> Vec<f64> { counted(t, p).filter_map(|s| s.value(h.metric)).collect() };
    let windows = |t: usize, p: usize| -> Vec<crate::measure::windows::Window> {
        counted(t, p).flat_map(|s| s.windows.iter().cloned()).collect()
    };
    let mut points = Vec::new();
    let mut function_points = Vec::new();
    let mut span_points = Vec::new();
    let tails = |t: usize, p: usize| counted(t, p).filter_map(|s| s.traces.as_ref()?.tail.as_ref());
    // A counted step's profile, else any whose target was up: how the target's CPU splits by
    // function per request does not depend on whether the generator kept pace (only the
    // first repeat is profiled by default, and a busy machine may leave it uncounted).
    let profiled = |t: usize, p: usize| {
        counted(t, p).find_map(|s| s.profile.as_ref()).or_else(|| {
            steps.iter().filter(|s| s.target == t && s.point == p && s.down.is_none()).find_map(|s| s.profile.as_ref())
        })
    };
    let mut add = |label: String, (ta, pa): (usize, usize), (tb, pb): (usize, usize)| {
        if let (Some(f), Some(a), Some(b)) = (&h.function, profiled(ta, pa), profiled(tb, pb)) {
            function_points.extend(crate::measure::function::point(label.clone(), f, a, b, h.lower));
        }
        if let Some(name) = &h.span {
            span_points.extend(crate::measure::span::point(label.clone(), name, tails(ta, pa), tails(tb, pb), h.lower));
        }
        let (a, b) = (values(ta, pa), values(tb, pb));
        if a.is_empty() || b.is_empty() {
            return;
        }
        let requests = |t: usize, p: usize| counted(t, p).map(|s| s.numbers.requests).min().unwrap_or(0);
        let (wa, wb) = (windows(ta, pa), windows(tb, pb));
        let comparison = crate::measure::ab::judge(
            h.metric,
            crate::measure::ab::Sample { values: &a, windows: &wa, requests: requests(ta, pa) },
            crate::measure::ab::Sample { values: &b, windows: &wb, requests: requests(tb, pb) },
            None,
        );
        let finding = Finding::of(&comparison, h.lower);
        points.push(HypothesisPoint {
            point: label,
            subject: stats::describe::centre(&a),
            other: stats::describe::centre(&b),
            comparison,
            finding,
        });
    };
    match (target_index(&h.subject), target_index(&h.than)) {
        // Two targets, at each load point.
        (Some(a), Some(b)) => {
            for (p, point) in matrix.points.iter().enumerate() {
                add(point.label(&matrix.axes), (a, p), (b, p));
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
                        let axes = crate::plan::matrix::Axes { variant: false, ..matrix.axes };
                        let label = format!("{}, {}", target.name, a.label(&axes));
                        add(label, (t, pa), (t, pb));
                    }
                }
            }
        }
    }
    let finding = Finding::overall(&points.iter().map(|p| p.finding).collect::<Vec<_>>());
    let function = h.function.as_ref().map(|f| crate::measure::function::FunctionFinding {
        function: f.clone(),
        finding: Finding::overall(&function_points.iter().map(|p| p.finding).collect::<Vec<_>>()),
        points: function_points,
    });
    let span = h.span.as_ref().map(|name| crate::measure::span::SpanFinding {
        span: name.clone(),
        finding: Finding::overall(&span_points.iter().map(|p| p.finding).collect::<Vec<_>>()),
        points: span_points,
    });
    HypothesisResult {
        claim: h.claim.clone(),
        metric: h.metric,
        subject: h.subject.clone(),
        than: h.than.clone(),
        lower: h.lower,
        points,
        finding,
        function,
        span,
    }
}

#[cfg(test)]
mod tests;
