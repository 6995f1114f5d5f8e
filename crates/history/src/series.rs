//! A history's series: one metric of one target at one load point of one plan, on one machine
//! (and one way of measuring), a point per lab in the order the labs ran, each the centre of the
//! lab's counted repeats; with its change points.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::accept::Acceptance;
use crate::changes::{change_points, ChangePoint, Settings};
use crate::store::Stored;

/// What a series is of. Labs on different machines (or measured differently) never share a
/// series unless asked (`any_machine`): then `machine` is `any`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Key {
    pub plan: String,
    pub target: String,
    /// The load point in words (`400/s`), and as `lab compare` keys it.
    pub load: String,
    #[serde(skip)]
    pub load_key: String,
    pub metric: String,
    pub machine: String,
    pub measurement: u32,
    /// `--quick` labs (2 s steps) are a series of their own.
    pub quick: bool,
}

impl Key {
    /// `api / svc @ 400/s: p99`.
    pub fn text(&self) -> String {
        let quick = if self.quick { " (quick)" } else { "" };
        format!("{} / {} @ {}: {}{quick}", self.plan, self.target, self.load, self.metric)
    }
}

/// One lab's value in a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The lab's key in the history.
    pub lab: i64,
    pub started_unix_s: i64,
    pub commit: Option<String>,
    pub branch: Option<String>,
    /// The lab's folder, for links.
    pub path: String,
    pub value: f64,
    /// The counted repeats it is the centre of.
    pub repeats: usize,
}

impl Point {
    /// The commit's first 10 characters, or `-`, with no control character.
    pub fn short_commit(&self) -> String {
        self.commit.as_deref().map_or_else(|| "-".into(), |c| plain(&c.chars().take(10).collect::<String>()))
    }

    /// The branch as a terminal may show it, or `-`.
    pub fn branch_text(&self) -> String {
        self.branch.as_deref().map_or_else(|| "-".into(), plain)
    }
}

/// `s` with each control character (an ANSI escape, a newline) as `?`: a commit or a branch name
/// is whatever CI was given, and a terminal or a table must not act on it.
pub fn plain(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// `s` for a cell of a Markdown table: plain, with `|`, `<` and `>` that cannot end the cell or
/// open a tag.
pub fn md_cell(s: &str) -> String {
    plain(s).replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub key: Key,
    /// The machine in words (the last lab's, under `any_machine`).
    pub machine_text: String,
    pub points: Vec<Point>,
    pub changes: Vec<ChangePoint>,
    /// Per change point (in order), the acceptance that covers it ([`Series::mark_accepted`]).
    #[serde(skip)]
    pub accepted: Vec<Option<Acceptance>>,
}

impl Series {
    /// The points of the current level: those since the last confirmed change point.
    pub fn level_since(&self) -> usize {
        self.changes.iter().filter(|c| c.pending == 0).map(|c| c.index).next_back().unwrap_or(0)
    }

    /// Notes, per change point, the acceptance that covers it (the latest, if several do).
    pub fn mark_accepted(&mut self, accepted: &[Acceptance]) {
        self.accepted = self
            .changes
            .iter()
            .map(|c| {
                let commit = self.points.get(c.index).and_then(|p| p.commit.as_deref());
                accepted.iter().rev().find(|a| a.covers(&self.key.plan, &self.key.metric, commit)).cloned()
            })
            .collect();
    }

    /// The acceptance of change point `i`, if it was marked accepted.
    pub fn acceptance(&self, i: usize) -> Option<&Acceptance> {
        self.accepted.get(i).and_then(Option::as_ref)
    }
}

/// Which series to show.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pub plan: Option<String>,
    pub target: Option<String>,
    /// A metric name (`p99`), or `fn:` for every profiled function's.
    pub metric: Option<String>,
    /// A load point: its rate (`400`) or its words (`400/s http2`).
    pub load: Option<String>,
    pub branch: Option<String>,
    /// Put labs of different machines (and loadlab measurements) in one series.
    pub any_machine: bool,
}

impl Query {
    fn takes(&self, key: &Key, branch: Option<&str>) -> bool {
        let load_ok = self.load.as_deref().is_none_or(|l| {
            let rate = serde_json::from_str::<serde_json::Value>(&key.load_key)
                .ok()
                .and_then(|v| v.get("rate").and_then(serde_json::Value::as_f64));
            match l.trim_end_matches("/s").parse::<f64>() {
                Ok(r) => rate == Some(r),
                Err(_) => key.load == l,
            }
        });
        let metric_ok = self.metric.as_deref().is_none_or(|m| {
            if m == crate::entry::FUNCTION {
                key.metric.starts_with(m)
            } else {
                key.metric == m
            }
        });
        self.plan.as_deref().is_none_or(|p| key.plan == p)
            && self.target.as_deref().is_none_or(|t| key.target == t)
            && self.branch.as_deref().is_none_or(|b| branch == Some(b))
            && load_ok
            && metric_ok
    }
}

/// The series `query` asks for, each with its change points by `settings`, in key order.
pub fn series(labs: &[Stored], query: &Query, settings: &Settings) -> Vec<Series> {
    // Per series: the machine in words, and per lab (in run order) its counted repeats' values.
    type Gathered = (String, Vec<(usize, Vec<f64>)>);
    let mut by_key: BTreeMap<Key, Gathered> = BTreeMap::new();
    for (i, (_, lab)) in labs.iter().enumerate() {
        for step in lab.steps.iter().filter(|s| s.not_counted.is_none()) {
            for (metric, value) in &step.values {
                let key = Key {
                    plan: lab.plan.clone(),
                    target: step.target.clone(),
                    load: step.label.clone(),
                    load_key: step.load.clone(),
                    metric: metric.clone(),
                    machine: if query.any_machine { "any".into() } else { lab.machine.clone() },
                    measurement: if query.any_machine { 0 } else { lab.measurement },
                    quick: lab.quick,
                };
                if !query.takes(&key, lab.branch.as_deref()) {
                    continue;
                }
                let (machine, points) = by_key.entry(key).or_default();
                machine.clone_from(&lab.machine_text);
                match points.last_mut() {
                    Some((at, values)) if *at == i => values.push(*value),
                    _ => points.push((i, vec![*value])),
                }
            }
        }
    }
    by_key
        .into_iter()
        .map(|(key, (machine_text, per_lab))| {
            let points: Vec<Point> = per_lab
                .into_iter()
                .map(|(i, values)| {
                    let (id, lab) = &labs[i];
                    Point {
                        lab: *id,
                        started_unix_s: lab.started_unix_s,
                        commit: lab.commit.clone(),
                        branch: lab.branch.clone(),
                        path: lab.path.clone(),
                        value: lab::centre(&values),
                        repeats: values.len(),
                    }
                })
                .collect();
            let values: Vec<f64> = points.iter().map(|p| p.value).collect();
            let changes = change_points(&values, settings);
            let accepted = vec![None; changes.len()];
            Series { key, machine_text, points, changes, accepted }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_ci_cannot_drive_a_terminal_or_break_a_table() {
        assert_eq!(plain("main\u{1b}[2J\nx"), "main?[2J?x");
        assert_eq!(md_cell("<img src=x onerror=alert(1)>|a"), "&lt;img src=x onerror=alert(1)&gt;\\|a");
        let p = Point {
            lab: 1,
            started_unix_s: 0,
            commit: Some("c0ffee\u{1b}[31mred".into()),
            branch: Some("feat\nnext".into()),
            path: String::new(),
            value: 1.0,
            repeats: 1,
        };
        assert_eq!((p.short_commit(), p.branch_text()), ("c0ffee?[31".to_owned(), "feat?next".to_owned()));
    }
}
