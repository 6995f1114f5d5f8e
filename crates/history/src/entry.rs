//! What a lab adds to a history: one entry (the lab: plan, when, commit, machine) and its
//! steps, each with its figures, or, when it does not count, why.

use std::path::Path;
use std::sync::Arc;

use lab::Lab;
use lab::Metric;
use lab::Provenance;
use serde::Serialize;

use crate::admit::{
    name, plain, range, within, Refused, CLOCK_AHEAD_S, EARLIEST_START, MAX_COMMIT, MAX_NAME, MAX_PATH, MAX_TAGS,
};
use crate::figures::{MACHINE_OTHER, MACHINE_SPEED, MACHINE_STEAL};

/// The step figures a history keeps (as `lab compare` compares them, with p90), by the names
/// `history show --metric` takes. A profiled step adds `fn:NAME` for each of its top functions:
/// µs of the function's own CPU per successful request; a traced step `span:NAME` for the spans
/// its slowest 1% spent most in.
pub const RECORDED: [Metric; 7] = lab::HISTORY_GATED;

/// The prefix of a profiled function's series.
pub const FUNCTION: &str = "fn:";

/// The prefix of a traced span's series: its self time in the step's slowest 1% of requests
/// (µs of wall time a request), for the span names that took most of it.
pub const SPAN: &str = "span:";

/// The span names of a step's slowest requests a history keeps, by their self time.
const SPANS_KEPT: usize = 8;

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

impl Entry {
    /// What an entry holds is what a history can keep: names without control characters and of a
    /// bounded length, step ids each once, every figure within its metric's range.
    pub fn admissible(&self) -> Result<(), Refused> {
        let e = self;
        let texts = [
            ("plan", Some(e.plan.as_str()), MAX_NAME),
            ("commit", e.commit.as_deref(), MAX_COMMIT),
            ("branch", e.branch.as_deref(), MAX_NAME),
            ("tags", Some(e.tags.as_str()), MAX_TAGS),
            ("loadlab", Some(e.loadlab.as_str()), MAX_NAME),
            ("machine", Some(e.machine.as_str()), MAX_NAME),
            ("machine_text", Some(e.machine_text.as_str()), MAX_NAME),
            ("path", Some(e.path.as_str()), MAX_PATH),
        ];
        for (field, text, max) in texts {
            if let Some(t) = text {
                name(field, t, max)?;
            }
        }
        if let Ok(tags) = serde_json::from_str::<std::collections::BTreeMap<String, String>>(&e.tags) {
            for (k, v) in &tags {
                name(&format!("tags.{}", plain(k)), &format!("{k}{v}"), MAX_NAME)?;
            }
        }
        let mut ids = std::collections::HashSet::new();
        for (i, s) in e.steps.iter().enumerate() {
            let at = |field: &str| format!("steps[{i}].{field}");
            if !ids.insert(s.id.as_str()) {
                return Err(Refused(format!("{}: step {:?} is in the lab twice", at("id"), plain(&s.id))));
            }
            name(&at("id"), &s.id, MAX_NAME)?;
            name(&at("target"), &s.target, MAX_NAME)?;
            name(&at("label"), &s.label, MAX_NAME)?;
            if let Some(why) = &s.not_counted {
                name(&at("not_counted"), why, MAX_TAGS)?;
            }
            if s.load.chars().count() > MAX_TAGS {
                return Err(Refused(format!("{}: over {MAX_TAGS} characters", at("load"))));
            }
            for (m, v) in &s.values {
                name(&at("metric"), m, MAX_NAME)?;
                let (max, unit) = range(m);
                within(&at(&format!("values.{}", plain(m))), *v, 0.0, max, unit)?;
            }
        }
        if !(EARLIEST_START..=chrono::Utc::now().timestamp().saturating_add(CLOCK_AHEAD_S)).contains(&e.started_unix_s)
        {
            return Err(Refused(format!("started_unix_s: {} is not a time a lab ran at", e.started_unix_s)));
        }
        Ok(())
    }
}

impl Entry {
    /// Whether `stored` (as a history read it back) is this same lab: the same plan, start,
    /// commit, steps and figures. A lab.json with a known id and other figures is another lab.
    pub fn same_lab(&self, stored: &Entry) -> bool {
        // Within 1e-12 of each other: a figure read back from lab.json may differ from the one
        // the lab held in its last bits (serde_json's float parser is not always correctly
        // rounded). Not by rounding both to 12 digits: two values a bit apart can round apart
        // (92.77761066334998 and 92.77761066335 did).
        let figures = |s: &Step| {
            let mut v: Vec<(String, f64)> = s.values.iter().map(|(m, v)| (m.to_string(), *v)).collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let close = |a: f64, b: f64| a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
        let same_figures = |a: &Step, b: &Step| {
            let (fa, fb) = (figures(a), figures(b));
            fa.len() == fb.len() && fa.iter().zip(&fb).all(|(x, y)| x.0 == y.0 && close(x.1, y.1))
        };
        fn steps(e: &Entry) -> Vec<&Step> {
            let mut v: Vec<&Step> = e.steps.iter().collect();
            v.sort_by(|a, b| a.id.cmp(&b.id));
            v
        }
        let (mine, theirs) = (steps(self), steps(stored));
        let same_steps = mine.len() == theirs.len()
            && mine.iter().zip(&theirs).all(|(a, b)| {
                (&a.id, &a.target, &a.label, a.repeat, &a.not_counted)
                    == (&b.id, &b.target, &b.label, b.repeat, &b.not_counted)
                    && same_figures(a, b)
            });
        self.plan == stored.plan
            && self.started_unix_s == stored.started_unix_s
            && self.commit == stored.commit
            && same_steps
    }
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
/// otherwise: a commit given when importing). Refused, naming the field, when the lab holds what
/// no lab can measure or what a history must not keep ([`crate::admit`]).
pub(crate) fn entry(lab: &Lab, dir: &Path, provenance: &Provenance) -> Result<Entry, Refused> {
    crate::admit::lab(lab)?;
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
                if let Some(o) = s.machine.as_ref().and_then(|m| m.other_pct).filter(|o| o.is_finite()) {
                    values.push((MACHINE_OTHER.into(), o));
                }
                if let Some(stolen) = s.machine.as_ref().map(|m| m.steal_pct).filter(|v| v.is_finite()) {
                    values.push((MACHINE_STEAL.into(), stolen));
                }
                if let Some(us) = s.speed.as_ref().map(|v| v.target_us).filter(|v| v.is_finite() && *v > 0.0) {
                    values.push((MACHINE_SPEED.into(), us));
                }
                for f in s.profile.iter().flat_map(|p| &p.top) {
                    if f.self_us.is_finite() {
                        values.push((format!("{FUNCTION}{}", f.name).into(), f.self_us));
                    }
                }
                let tail = s.traces.as_ref().and_then(|t| t.tail.as_ref()).filter(|t| t.slowest.with_spans > 0);
                for n in tail.iter().flat_map(|t| t.slowest.names.iter().take(SPANS_KEPT)) {
                    if n.self_us.is_finite() {
                        values.push((format!("{SPAN}{}", n.name).into(), n.self_us));
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
    let e = Entry {
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
    };
    e.admissible()?;
    Ok(e)
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
pub(crate) fn provenance_of(lab: &Lab, given: &lab::Given) -> Provenance {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_with(values: Vec<(&str, f64)>) -> Entry {
        Entry {
            uid: "u".into(),
            plan: "api".into(),
            started_unix_s: 1_790_000_000,
            commit: Some("c1".into()),
            branch: Some("main".into()),
            tags: "{}".into(),
            loadlab: "0.1.0".into(),
            measurement: 2,
            machine: "m".into(),
            machine_text: "a machine".into(),
            path: "/labs/1".into(),
            quick: false,
            steps: vec![crate::entry::Step {
                id: "s1".into(),
                target: "svc".into(),
                load: "{}".into(),
                label: "100/s".into(),
                repeat: 1,
                not_counted: None,
                values: values.into_iter().map(|(m, v)| (m.into(), v)).collect(),
            }],
        }
    }

    #[test]
    fn a_figure_read_back_a_bit_apart_is_the_same_lab_and_another_figure_is_not() {
        // Both sides of a 12-digit rounding boundary: the same figure, read back.
        let held = entry_with(vec![("machine_other", 92.77761066334998), ("p50", 2.0)]);
        let read = entry_with(vec![("p50", 2.0), ("machine_other", 92.77761066335)]);
        assert!(held.same_lab(&read) && read.same_lab(&held));
        let other = entry_with(vec![("machine_other", 92.7776), ("p50", 2.0)]);
        assert!(!held.same_lab(&other));
        let fewer = entry_with(vec![("p50", 2.0)]);
        assert!(!held.same_lab(&fewer));
    }

    #[test]
    fn an_entry_is_held_to_what_a_lab_can_measure() {
        assert_eq!(
            super::Entry::admissible(&entry_with(vec![("p50", 2.0), ("success", 1.0), ("target_cpu", 80.0)])),
            Ok(())
        );
        for (m, v) in [("p50", -1.0), ("p99", f64::NAN), ("p99", 1e308), ("success", 5.0), ("target_cpu", -3.0)] {
            let why = super::Entry::admissible(&entry_with(vec![(m, v)])).unwrap_err().0;
            assert!(why.starts_with(&format!("steps[0].values.{m}: ")), "{why}");
        }
        let mut e = entry_with(vec![]);
        e.steps.push(e.steps[0].clone());
        assert!(super::Entry::admissible(&e).unwrap_err().0.contains("is in the lab twice"));
        let mut e = entry_with(vec![]);
        e.plan = "api\u{1b}[2J".into();
        assert!(super::Entry::admissible(&e).unwrap_err().0.starts_with("plan: holds the control character"));
        let mut e = entry_with(vec![]);
        e.branch = Some("x".repeat(65_536));
        assert_eq!(super::Entry::admissible(&e).unwrap_err().0, "branch: over 1000 characters");
        let mut e = entry_with(vec![]);
        e.started_unix_s = i64::MAX;
        assert!(super::Entry::admissible(&e).unwrap_err().0.starts_with("started_unix_s: "));
        let mut e = entry_with(vec![]);
        e.tags = r#"{"v":"a\u202eb"}"#.into();
        assert!(super::Entry::admissible(&e).unwrap_err().0.starts_with("tags.v: holds"));
    }
}
