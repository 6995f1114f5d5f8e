//! Reading labs back: only those a command asks for (filtered in SQL, on the indexes the schema
//! keeps), their steps and figures put in place as the rows come, a metric's name held once.

use std::collections::HashMap;
use std::sync::Arc;

use super::Stored;

/// Which labs, steps and figures to read; none set: all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// One lab, by its identity.
    pub uid: Option<String>,
    pub plan: Option<String>,
    pub machine: Option<String>,
    pub branch: Option<String>,
    pub target: Option<String>,
    /// A metric's name, or `fn:` for every profiled function's.
    pub metric: Option<String>,
}

const LAB_COLUMNS: &str = "l.id, l.uid, l.plan, l.started_unix_s, l.commit_sha, l.branch, l.tags, l.loadlab, \
     l.measurement, l.machine, l.machine_text, l.path, l.quick";

/// A statement's conditions and the values of its parameters, numbered in order (`$1`...: both
/// databases bind them so).
#[derive(Clone, Default)]
struct Where {
    conditions: Vec<String>,
    values: Vec<String>,
}

impl Where {
    fn equal(&mut self, column: &str, value: Option<&String>) {
        if let Some(v) = value {
            self.values.push(v.clone());
            self.conditions.push(format!("{column} = ${}", self.values.len()));
        }
    }

    fn text(&self) -> String {
        if self.conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conditions.join(" AND "))
        }
    }
}

impl Filter {
    /// The statements that read labs, steps and figures, each with its parameters' values.
    pub(super) fn statements(&self) -> [(String, Vec<String>); 3] {
        let mut labs = Where::default();
        labs.equal("l.uid", self.uid.as_ref());
        labs.equal("l.plan", self.plan.as_ref());
        labs.equal("l.machine", self.machine.as_ref());
        labs.equal("l.branch", self.branch.as_ref());
        let mut steps = labs.clone();
        steps.equal("s.target", self.target.as_ref());
        let mut figures = labs.clone();
        match self.metric.as_deref() {
            Some(prefix @ (crate::entry::FUNCTION | crate::entry::SPAN)) => {
                figures.conditions.push(format!("f.metric LIKE '{prefix}%'"));
            }
            other => figures.equal("f.metric", other.map(str::to_owned).as_ref()),
        }
        [
            (format!("SELECT {LAB_COLUMNS} FROM labs l{} ORDER BY l.started_unix_s, l.id", labs.text()), labs.values),
            (
                format!(
                    "SELECT s.lab_id, s.step, s.target, s.load_key, s.label, s.repeat_no, s.not_counted \
                     FROM steps s JOIN labs l ON l.id = s.lab_id{} ORDER BY s.lab_id, s.step",
                    steps.text()
                ),
                steps.values,
            ),
            (
                format!(
                    "SELECT f.lab_id, f.step, f.metric, f.value FROM figures f JOIN labs l ON l.id = f.lab_id{} \
                     ORDER BY f.lab_id, f.step, f.metric",
                    figures.text()
                ),
                figures.values,
            ),
        ]
    }
}

/// Labs being read: their steps and figures put in place as they come.
#[derive(Default)]
pub(super) struct Labs {
    labs: Vec<Stored>,
    /// A lab's place by its key.
    at: HashMap<i64, usize>,
    /// Each metric's name, once.
    names: HashMap<String, Arc<str>>,
    /// The lab whose figures are coming, and its steps' places by id.
    steps_of: Option<(usize, HashMap<String, usize>)>,
}

impl Labs {
    pub(super) fn lab(&mut self, lab: Stored) {
        self.labs.push(lab);
    }

    /// After the last lab: where each is, for its steps and figures.
    pub(super) fn index(&mut self) {
        self.at = self.labs.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
    }

    pub(super) fn step(&mut self, (lab, step): (i64, crate::entry::Step)) {
        if let Some(&i) = self.at.get(&lab) {
            self.labs[i].1.steps.push(step);
        }
    }

    /// A figure of step `step` of lab `lab`. Figures come lab by lab: each lab's steps are
    /// indexed by id once, when its first figure comes (a linear search per figure made a lab
    /// of 100,000 steps take 100 s to read).
    pub(super) fn figure(&mut self, lab: i64, step: &str, metric: &str, value: f64) {
        let Some(&i) = self.at.get(&lab) else { return };
        if self.steps_of.as_ref().is_none_or(|(at, _)| *at != i) {
            let ids = self.labs[i].1.steps.iter().enumerate().map(|(k, s)| (s.id.clone(), k)).collect();
            self.steps_of = Some((i, ids));
        }
        let Some(&k) = self.steps_of.as_ref().and_then(|(_, ids)| ids.get(step)) else { return };
        let s = &mut self.labs[i].1.steps[k];
        let name = match self.names.get(metric) {
            Some(n) => Arc::clone(n),
            None => {
                // A profiled function's name is whatever the target's symbols say.
                let n: Arc<str> = crate::admit::plain(metric).into();
                self.names.insert(metric.to_owned(), Arc::clone(&n));
                n
            }
        };
        s.values.push((name, value));
    }
}

impl Labs {
    pub(super) fn into_labs(self) -> Vec<Stored> {
        self.labs
    }
}
