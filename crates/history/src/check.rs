//! A gate over history (`history check`): the newest lab against the current level of each of
//! its series (the labs since the series' last change point), not against one baseline run.
//!
//! A gated metric fails when its change from the level's mean passes the gate's threshold and
//! the run-to-run floor of `lab compare` (`lab::run_to_run_floor`), and the value
//! lies beyond the level's own spread: a one-sided Student's t prediction test (the new lab as
//! one more draw from the level), p-values corrected for the number of gated series by Holm's
//! method at a family-wise [`LEVEL`]. The floor is needed: lab series are not normal. Replayed
//! as a history, 20 A/A labs of nginx (sub-millisecond, labs in two modes) failed 5 of 15 checks
//! on the t-test alone (a p99 of 4.2 ms against a level of 0.2 ms ± 0.06 ms), none with it.

use lab::Gate;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::changes::{change_points, ChangePoint, Settings};
use crate::series::{series, Key, Query, Series};
use crate::store::Stored;

/// The family-wise false-alarm level of a check over all its gated series.
pub const LEVEL: f64 = 0.01;

/// How one gated series judged the lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Past the threshold and beyond the level's spread.
    Worse,
    /// Within the threshold or the level's spread.
    Held,
    /// The level has too few labs to tell (or the lab has no counted figure): why.
    TooShort(String),
}

/// A gated series and its verdict on the lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judged {
    pub key: Key,
    pub gate: String,
    pub machine_text: String,
    pub value: f64,
    /// The current level: its mean, standard deviation (of a sample) and labs.
    pub level_mean: f64,
    pub level_std: f64,
    pub level_points: usize,
    /// Where the level began: the commit of its first lab (none: the series' start).
    pub level_since: Option<String>,
    pub change_pct: f64,
    /// The smallest change (%) two labs of one build are not known to reach.
    pub floor_pct: f64,
    /// One-sided p-value of the prediction test, and the Holm-corrected threshold it met (or not).
    pub pvalue: f64,
    pub outcome: Outcome,
    /// Profiled functions at the same target and load whose own CPU per request grew most
    /// against their level: (function, level µs, now µs).
    pub functions: Vec<(String, f64, f64)>,
    /// The series' last confirmed change before this lab, with the commits on either side.
    pub last_change: Option<(ChangePoint, Option<String>, Option<String>)>,
}

impl Judged {
    /// A series' verdict before (or without) any figure: `outcome`, every number unknown.
    fn unjudged(key: Key, gate: &Gate, machine_text: &str, outcome: Outcome) -> Judged {
        Judged {
            key,
            gate: gate.text(),
            machine_text: machine_text.to_owned(),
            value: f64::NAN,
            level_mean: f64::NAN,
            level_std: f64::NAN,
            level_points: 0,
            level_since: None,
            change_pct: f64::NAN,
            floor_pct: f64::NAN,
            pvalue: f64::NAN,
            outcome,
            functions: Vec::new(),
            last_change: None,
        }
    }
}

/// A check of one lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checked {
    pub lab: i64,
    pub plan: String,
    pub commit: Option<String>,
    pub path: String,
    pub judged: Vec<Judged>,
}

impl Checked {
    pub fn worse(&self) -> impl Iterator<Item = &Judged> {
        self.judged.iter().filter(|j| j.outcome == Outcome::Worse)
    }

    /// Why some gated series could not tell, one line each.
    pub fn too_short(&self) -> Vec<String> {
        self.judged
            .iter()
            .filter_map(|j| match &j.outcome {
                Outcome::TooShort(why) => Some(format!("{} ({}): {why}", j.key.text(), j.gate)),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckError(pub String);

/// Judges the lab `lab_id` of `labs` (and only the labs up to it) on `gates`.
pub fn check(
    labs: &[Stored],
    lab_id: i64,
    gates: &[Gate],
    settings: &Settings,
    any_machine: bool,
) -> Result<Checked, CheckError> {
    let at = labs
        .iter()
        .position(|(id, _)| *id == lab_id)
        .ok_or_else(|| CheckError(format!("no lab {lab_id} in the history")))?;
    let (_, lab) = &labs[at];
    if gates.is_empty() {
        return Err(CheckError("no gate: give --fail-on (e.g. 'p99>+5%') or [history] fail_on in the plan".into()));
    }
    let upto = &labs[..=at];
    let query = Query { plan: Some(lab.plan.clone()), any_machine, ..Default::default() };
    let all = series(upto, &query, settings);
    let mut judged = Vec::new();
    for gate in gates {
        let metric = gate.metric.name();
        // The lab's own series for this metric (one per target and load point).
        for s in all.iter().filter(|s| s.key.metric == metric && owns(s, lab, any_machine)) {
            judged.push(judge(s, lab_id, gate, &all, settings));
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
    holm(&mut judged, gates);
    Ok(Checked { lab: lab_id, plan: lab.plan.clone(), commit: lab.commit.clone(), path: lab.path.clone(), judged })
}

/// The series is of the lab's machine and kind.
fn owns(s: &Series, lab: &crate::entry::Entry, any_machine: bool) -> bool {
    s.key.quick == lab.quick && (any_machine || (s.key.machine == lab.machine && s.key.measurement == lab.measurement))
}

fn judge(s: &Series, lab_id: i64, gate: &Gate, all: &[Series], settings: &Settings) -> Judged {
    let mut j = Judged::unjudged(s.key.clone(), gate, &s.machine_text, Outcome::Held);
    let Some(last) = s.points.last().filter(|p| p.lab == lab_id) else {
        j.outcome = Outcome::TooShort("the lab has no counted figure here".into());
        return j;
    };
    j.value = last.value;
    let before = &s.points[..s.points.len() - 1];
    let values: Vec<f64> = before.iter().map(|p| p.value).collect();
    let changes = change_points(&values, settings);
    let since = changes.iter().filter(|c| c.pending == 0).map(|c| c.index).next_back().unwrap_or(0);
    if let Some(c) = changes.iter().rfind(|c| c.pending == 0) {
        j.last_change = Some((c.clone(), before[c.index - 1].commit.clone(), before[c.index].commit.clone()));
    }
    let level = &values[since..];
    j.level_since = before.get(since).filter(|_| since > 0).and_then(|p| p.commit.clone());
    j.level_points = level.len();
    if level.len() < settings.min_points.max(2) {
        j.outcome = Outcome::TooShort(format!(
            "{} lab{} at the current level; needs {}",
            level.len(),
            if level.len() == 1 { "" } else { "s" },
            settings.min_points.max(2)
        ));
        return j;
    }
    let n = level.len() as f64;
    let mean = level.iter().sum::<f64>() / n;
    let std = (level.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (j.level_mean, j.level_std) = (mean, std);
    j.change_pct = if mean == 0.0 { 0.0 } else { (last.value / mean - 1.0) * 100.0 };
    j.floor_pct = lab::run_to_run_floor(gate.metric, mean) * 100.0;
    // Worse is up for a latency or a CPU, down for a rate or a share of successes.
    let up = gate.above;
    let spread = std * (1.0 + 1.0 / n).sqrt();
    j.pvalue = if spread == 0.0 {
        if (up && last.value > mean) || (!up && last.value < mean) {
            0.0
        } else {
            1.0
        }
    } else {
        let t = (last.value - mean) / spread;
        let d = StudentsT::new(0.0, 1.0, n - 1.0).expect("n >= 2");
        if up {
            d.sf(t)
        } else {
            d.cdf(t)
        }
    };
    j.functions = grown(s, lab_id, all, settings);
    j
}

/// The profiled functions at the series' target and load whose own CPU grew most against their
/// level, largest first (at most 5).
fn grown(s: &Series, lab_id: i64, all: &[Series], settings: &Settings) -> Vec<(String, f64, f64)> {
    let mut out: Vec<(String, f64, f64)> = all
        .iter()
        .filter(|f| {
            f.key.metric.starts_with(crate::entry::FUNCTION)
                && f.key.target == s.key.target
                && f.key.load_key == s.key.load_key
                && f.key.machine == s.key.machine
                && f.key.quick == s.key.quick
        })
        .filter_map(|f| {
            let last = f.points.last().filter(|p| p.lab == lab_id)?;
            let before: Vec<f64> = f.points[..f.points.len() - 1].iter().map(|p| p.value).collect();
            if before.is_empty() {
                return None;
            }
            let since = change_points(&before, settings)
                .iter()
                .filter(|c| c.pending == 0)
                .map(|c| c.index)
                .next_back()
                .unwrap_or(0);
            let level = before[since..].iter().sum::<f64>() / (before.len() - since) as f64;
            let name = f.key.metric.trim_start_matches(crate::entry::FUNCTION).to_owned();
            (last.value > level).then_some((name, level, last.value))
        })
        .collect();
    out.sort_by(|a, b| (b.2 - b.1).total_cmp(&(a.2 - a.1)));
    out.truncate(5);
    out
}

/// Holm's step-down over the judged series: the k-th smallest p-value (from 0) passes at
/// `LEVEL / (m - k)` while every smaller one passed; a series fails when its p-value passes and
/// its change is past its gate's threshold.
fn holm(judged: &mut [Judged], gates: &[Gate]) {
    let mut order: Vec<usize> = (0..judged.len()).filter(|&i| judged[i].pvalue.is_finite()).collect();
    order.sort_by(|&a, &b| judged[a].pvalue.total_cmp(&judged[b].pvalue));
    let m = order.len();
    let mut passing = true;
    for (k, &i) in order.iter().enumerate() {
        passing &= judged[i].pvalue <= LEVEL / (m - k) as f64;
        let gate = gates.iter().find(|g| g.text() == judged[i].gate);
        let (change, floor) = (judged[i].change_pct, judged[i].floor_pct);
        let past = gate.is_some_and(|g| {
            if g.above {
                change > g.limit_pct && change > floor
            } else {
                change < g.limit_pct && change < -floor
            }
        });
        if judged[i].outcome == Outcome::Held && passing && past {
            judged[i].outcome = Outcome::Worse;
        }
    }
}
