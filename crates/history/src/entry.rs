//! What a lab adds to a history: one entry (the lab: plan, when, commit, machine) and its
//! steps, each with its figures, or, when it does not count, why.

use std::path::Path;
use std::sync::Arc;

use lab::Lab;
use lab::Metric;
use lab::Provenance;
use serde::Serialize;

/// The step figures a history keeps (as `lab compare` compares them, with p90), by the names
/// `history show --metric` takes. A profiled step adds `fn:NAME` for each of its top functions:
/// µs of the function's own CPU per successful request.
pub const RECORDED: [Metric; 7] = lab::HISTORY_GATED;

/// The prefix of a profiled function's series.
pub const FUNCTION: &str = "fn:";

/// One lab in a history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// The lab's identity in a history ([`uid`]): adding its folder again adds nothing.
    pub uid: String,
    pub plan: String,
    pub started_unix_s: i64,
    pub commit: Option<String>,
    pub branch: Option<String>,
    /// `{"version":"1.4"}`.
    pub tags: String,
    pub loadlab: String,
    pub measurement: u32,
    /// The machine's fingerprint ([`lab::Machine::fingerprint`]) and its words.
    pub machine: String,
    pub machine_text: String,
    /// The lab's folder, absolute, for links from the history's pages.
    pub path: String,
    pub quick: bool,
    pub steps: Vec<Step>,
}

/// One step of a lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub id: String,
    pub target: String,
    /// The load point as `lab compare` keys it (the point's fields as JSON), and in words.
    pub load: String,
    pub label: String,
    pub repeat: u32,
    /// Why the step does not count (generator-limited, target down, interrupted); none when it
    /// does. Steps that do not count are kept, and never enter a series.
    pub not_counted: Option<String>,
    /// (metric, value) in the metric's unit: ms, a share, /s, µs per request. A name is shared
    /// by every step that has it (a history of 10,000 labs holds 500,000 figures).
    pub values: Vec<(Arc<str>, f64)>,
}

/// The entry of `lab`, read from `dir`; `provenance` where the lab recorded none (or to say
/// otherwise: a commit given when importing).
pub fn entry(lab: &Lab, dir: &Path, provenance: &Provenance) -> Entry {
    let last = lab.steps.len().saturating_sub(1);
    let steps = lab
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let point = lab.matrix.points.get(s.point);
            let not_counted = s
                .not_counted()
                .or_else(|| {
                    // A step a target died in (or right after) measured its death, not its level:
                    // the lab judges it, the history does not put it in a series.
                    lab.deaths
                        .iter()
                        .find(|d| d.during.as_deref() == Some(s.id.as_str()))
                        .map(|d| format!("target down: {}", d.text()))
                })
                .or_else(|| {
                    // The last step of an interrupted lab may be short.
                    (lab.interrupted && i == last).then(|| "interrupted: the lab was stopped during it".to_owned())
                });
            let mut values = Vec::new();
            if not_counted.is_none() {
                for m in RECORDED {
                    let v = match m {
                        Metric::TargetCpu => Metric::cpu_per_request(s.target_cpu_pct, &s.numbers),
                        Metric::GeneratorCpu => Metric::cpu_per_request(s.generator_cpu_pct, &s.numbers),
                        _ => Some(m.of(&s.numbers)),
                    };
                    if let Some(v) = v.filter(|v| v.is_finite()) {
                        values.push((m.name().into(), v));
                    }
                }
                for f in s.profile.iter().flat_map(|p| &p.top) {
                    if f.self_us.is_finite() {
                        values.push((format!("{FUNCTION}{}", f.name).into(), f.self_us));
                    }
                }
            }
            Step {
                id: s.id.clone(),
                target: lab.targets.get(s.target).map_or_else(|| format!("target {}", s.target), |t| t.name.clone()),
                load: point.map(|p| serde_json::to_string(p).unwrap_or_default()).unwrap_or_default(),
                label: point.map(|p| p.label(&lab::Axes::set_in(p))).unwrap_or_default(),
                repeat: s.repeat,
                not_counted,
                values,
            }
        })
        .collect();
    let machine = provenance.machine.fingerprint();
    Entry {
        uid: uid(lab.id.as_deref(), &lab.name, lab.started_unix_s as i64, &machine),
        plan: lab.name.clone(),
        started_unix_s: lab.started_unix_s as i64,
        commit: provenance.commit.clone(),
        branch: provenance.branch.clone(),
        tags: serde_json::to_string(&provenance.tags).unwrap_or_else(|_| "{}".into()),
        loadlab: provenance.loadlab.clone(),
        measurement: provenance.measurement,
        machine,
        machine_text: provenance.machine.text(),
        // Absolute, so that a page written anywhere can link to it.
        path: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()).display().to_string(),
        quick: lab.quick,
        steps,
    }
}

/// A lab's identity in a history: the id it drew when it started, or, for a lab.json written
/// before labs had one, its plan, start second and machine (the key such labs were stored by,
/// which a history of an earlier schema is given when it is brought up to date).
pub fn uid(id: Option<&str>, plan: &str, started_unix_s: i64, machine: &str) -> String {
    match id {
        Some(id) => id.to_owned(),
        None => format!("key:{plan}|{started_unix_s}|{machine}"),
    }
}

/// The provenance `lab` is recorded with: what it recorded, overridden by what is `given` (a
/// commit named when importing). A lab.json written before provenance was recorded has only
/// what is given, on an unknown machine (a series of its own).
pub fn provenance_of(lab: &Lab, given: &lab::Given) -> Provenance {
    let mut p = lab.provenance.clone().unwrap_or_else(|| Provenance {
        loadlab: "unknown".into(),
        machine: lab::Machine { cpu: "unknown machine (the lab recorded none)".into(), ..Default::default() },
        ..Default::default()
    });
    if given.commit.is_some() {
        p.commit.clone_from(&given.commit);
    }
    if given.branch.is_some() {
        p.branch.clone_from(&given.branch);
    }
    p.tags.extend(given.tags.clone());
    p
}
