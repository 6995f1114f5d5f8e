//! A history's series: one metric of one target at one load point of one plan, on one machine
//! (and one way of measuring), a point per lab in the order the labs ran, each the centre of the
//! lab's counted repeats; with its change points.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::accept::Acceptance;
pub(crate) use crate::admit::plain;
use crate::store::Stored;
use stats::change_points::{change_points, ChangePoint, Settings};

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
    /// When, which commit and where: shared by the lab's points in every series (a history of
    /// 10,000 labs has 500,000 points), read through the point.
    #[serde(flatten)]
    pub of: Arc<LabOf>,
    pub value: f64,
    /// The counted repeats it is the centre of.
    pub repeats: usize,
    /// loadlab's own CPU per request in the same step (the centre of the same repeats): the
    /// machine, as the gate's control and bisect read it.
    #[serde(skip)]
    pub own_cpu: Option<f64>,
    /// The speed probe's round trip on the target's CPUs in the same steps (µs), where kept.
    #[serde(skip)]
    pub speed: Option<f64>,
}

/// What a point says of its lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabOf {
    pub started_unix_s: i64,
    pub commit: Option<String>,
    pub branch: Option<String>,
    /// The lab's folder, for links.
    pub path: String,
    /// Its tags, as stored (`{"version":"1.4"}`): for a page's hover.
    #[serde(skip)]
    pub tags: String,
}

impl std::ops::Deref for Point {
    type Target = LabOf;

    fn deref(&self) -> &LabOf {
        &self.of
    }
}

impl Point {
    /// The commit as given, owned.
    pub fn commit_text(&self) -> Option<String> {
        self.commit.clone()
    }

    /// The commit's first 10 characters, or `-`, with no control character.
    pub fn short_commit(&self) -> String {
        self.commit.as_deref().map_or_else(|| "-".into(), |c| plain(&c.chars().take(10).collect::<String>()))
    }

    /// The branch as a terminal may show it, or `-`.
    pub fn branch_text(&self) -> String {
        self.branch.as_deref().map_or_else(|| "-".into(), plain)
    }
}

/// `s` for a cell of a Markdown table: plain, with `|`, `<` and `>` that cannot end the cell or
/// open a tag.
pub fn md_cell(s: &str) -> String {
    plain(s).replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}

/// A value of a series in its metric's unit, as every table and line shows it (a function's CPU
/// series, named by the function, in µs per request; a span's self time in the slowest 1%, as a
/// duration; other processes' share of the machine, in %);
/// "-" when there is none.
pub fn show(metric: &str, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if crate::figures::is_machine_share(metric) {
        return format!("{v:.1}%");
    }
    if metric == crate::figures::MACHINE_SPEED {
        return format!("{v:.1}µs");
    }
    if metric.starts_with(crate::entry::SPAN) {
        return results::duration::show_us(v);
    }
    lab::Metric::parse(metric).map_or_else(|_| format!("{v:.1}µs/req"), |m| m.show(v))
}

/// What each control of a machine's change is called.
const OWN_TEXT: &str = "loadlab's own CPU per request";
const SPEED_TEXT: &str = "the speed probe's time on the target's CPUs";

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
    /// Per change point (in order), why the machine made it, when it did
    /// ([`crate::machine_change`]).
    #[serde(skip)]
    pub machine: Vec<Option<String>>,
}

impl Series {
    /// Where each level begins: the series' start, then each confirmed change point (a pending
    /// one does not begin a level until it is confirmed or accepted). The one definition of a
    /// level the gate reads.
    pub fn level_starts(&self) -> Vec<usize> {
        std::iter::once(0).chain(self.changes.iter().filter(|c| c.pending == 0).map(|c| c.index)).collect()
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

    /// Why the machine made change point `i`, if it did.
    pub fn machine_made(&self, i: usize) -> Option<&str> {
        self.machine.get(i).and_then(Option::as_deref)
    }
}

/// Which series to show.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pub plan: Option<String>,
    pub target: Option<String>,
    /// A metric name (`p99`), or `fn:` for every profiled function's, `span:` for every span's.
    pub metric: Option<String>,
    /// A load point: its rate (`400`) or its words (`400/s http2`).
    pub load: Option<String>,
    pub branch: Option<String>,
    /// Put labs of different machines (and loadlab measurements) in one series.
    pub any_machine: bool,
    /// Every lab, those off the line too ([`on_line`]): what a bisect reads of its own labs.
    pub off_line: bool,
}

/// The tag a bisect's labs carry (`good..bad`): labs of commits it chose, off the line.
pub const BISECT_TAG: &str = "bisect";

/// The tag `lab ab`'s labs carry (`base..head`): a pull request's head and its base, labbed
/// side by side, off the line (the head is not a commit of the line yet).
pub const AB_TAG: &str = "ab";

/// Whether each lab (in run order) is on its line: for each plan on each machine, the labs of
/// each new commit as it came, and reruns of the newest. A lab of a commit the line has passed
/// (a rerun of an old commit) and every lab a bisect or `lab ab` ran are kept, and shown where they belong
/// (bisect.md, `--json`), but are off the line: they cannot move the line's change points or
/// the verdict on its newest commit.
pub fn on_line(labs: &[Stored]) -> Vec<bool> {
    /// Per line (plan, machine): the commits it has held, and its newest.
    type Line<'a> = (std::collections::HashSet<&'a str>, Option<&'a str>);
    let mut lines: HashMap<(&str, &str), Line<'_>> = HashMap::new();
    labs.iter()
        .map(|(_, e)| {
            if off_line_by_tag(e) {
                return false;
            }
            let Some(commit) = e.commit.as_deref() else { return true };
            let (seen, newest) = lines.entry((e.plan.as_str(), e.machine.as_str())).or_default();
            if *newest == Some(commit) {
                return true;
            }
            if seen.contains(commit) {
                return false;
            }
            seen.insert(commit);
            *newest = Some(commit);
            true
        })
        .collect()
}

/// Whether `e` is a lab a bisect or `lab ab` ran.
fn off_line_by_tag(e: &crate::entry::Entry) -> bool {
    [BISECT_TAG, AB_TAG].iter().any(|tag| e.tags.contains(tag))
        && serde_json::from_str::<std::collections::BTreeMap<String, String>>(&e.tags)
            .is_ok_and(|t| t.contains_key(BISECT_TAG) || t.contains_key(AB_TAG))
}

impl Query {
    /// What of the query the history can filter by itself (the load point is matched here).
    pub fn filter(&self) -> crate::store::Filter {
        crate::store::Filter {
            uid: None,
            plan: self.plan.clone(),
            machine: None,
            branch: self.branch.clone(),
            target: self.target.clone(),
            metric: self.metric.clone(),
        }
    }

    fn branch_ok(&self, branch: Option<&str>) -> bool {
        self.branch.as_deref().is_none_or(|b| branch == Some(b))
    }

    /// Whether the series `key` is asked for (its labs' branch aside, when `any_branch`).
    fn takes(&self, key: &Key, branch: Option<&str>, any_branch: bool) -> bool {
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
            if m == crate::entry::FUNCTION || m == crate::entry::SPAN {
                key.metric.starts_with(m)
            } else {
                key.metric == m
            }
        });
        self.plan.as_deref().is_none_or(|p| key.plan == p)
            && self.target.as_deref().is_none_or(|t| key.target == t)
            && (any_branch || self.branch_ok(branch))
            && load_ok
            && metric_ok
    }
}

/// The series `query` asks for, each with its change points by `settings`, in key order.
pub fn series(labs: &[Stored], query: &Query, settings: &Settings) -> Vec<Series> {
    series_where(labs, query, settings, |_| true)
}

/// [`series`], with change points only where `changes_wanted` says (a check needs them in the
/// series it gates, not in every profiled function's).
pub fn series_where(
    labs: &[Stored],
    query: &Query,
    settings: &Settings,
    changes_wanted: impl Fn(&Key) -> bool,
) -> Vec<Series> {
    // A history of 10,000 labs holds about 500,000 figures: each is placed by keys borrowed
    // from the labs (no string is copied per figure), and each lab's commit, branch and folder
    // are shared by its points.
    type StepKey<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, u32, bool);
    struct Gathered {
        key: Key,
        machine_text: String,
        /// Per counted repeat, in run order: its lab's index, its value, loadlab's own CPU per
        /// request and the speed probe's time on the target's CPUs in the same step.
        values: Vec<(usize, f64, Option<f64>, Option<f64>)>,
    }
    let mut steps: HashMap<StepKey<'_>, usize> = HashMap::new();
    let mut by_metric: HashMap<(usize, &str), usize> = HashMap::new();
    let mut gathered: Vec<Gathered> = Vec::new();
    let mut shared: Vec<Option<Arc<LabOf>>> = vec![None; labs.len()];
    let line = on_line(labs);
    let on = if query.off_line { vec![true; labs.len()] } else { line.clone() };
    for (i, (_, lab)) in labs.iter().enumerate().filter(|(i, _)| on[*i]) {
        let (machine, measurement) =
            if query.any_machine { ("any", 0) } else { (lab.machine.as_str(), lab.measurement) };
        for step in lab.steps.iter().filter(|s| s.not_counted.is_none()) {
            let step_key = (
                lab.plan.as_str(),
                step.target.as_str(),
                step.label.as_str(),
                step.load.as_str(),
                machine,
                measurement,
                lab.quick,
            );
            let next = steps.len();
            let at = *steps.entry(step_key).or_insert(next);
            let own_cpu = step.values.iter().find(|(m, _)| **m == *lab::Metric::GeneratorCpu.name()).map(|v| v.1);
            let speed = step.values.iter().find(|(m, _)| **m == *crate::figures::MACHINE_SPEED).map(|v| v.1);
            for (metric, value) in &step.values {
                let g = match by_metric.get(&(at, &**metric)) {
                    Some(&g) => g,
                    None => {
                        let key = Key {
                            plan: lab.plan.clone(),
                            target: step.target.clone(),
                            load: step.label.clone(),
                            load_key: step.load.clone(),
                            metric: metric.to_string(),
                            machine: machine.to_owned(),
                            measurement,
                            quick: lab.quick,
                        };
                        // An excluded key is remembered as such, so it is tested once.
                        let g = if query.takes(&key, None, true) { gathered.len() } else { usize::MAX };
                        if g != usize::MAX {
                            gathered.push(Gathered { key, machine_text: String::new(), values: Vec::new() });
                        }
                        by_metric.insert((at, &**metric), g);
                        g
                    }
                };
                let Some(g) = gathered.get_mut(g) else { continue };
                if !query.branch_ok(lab.branch.as_deref()) {
                    continue;
                }
                if g.machine_text != lab.machine_text {
                    g.machine_text.clone_from(&lab.machine_text);
                }
                g.values.push((i, *value, own_cpu, speed));
            }
        }
    }
    let mut out: Vec<Series> = gathered
        .into_iter()
        .map(|g| {
            // Each point's lab, as an index into `labs`.
            let lab_at: Vec<usize> = g.values.chunk_by(|a, b| a.0 == b.0).map(|run| run[0].0).collect();
            let points: Vec<Point> = g
                .values
                .chunk_by(|a, b| a.0 == b.0)
                .map(|run| {
                    let i = run[0].0;
                    let values: Vec<f64> = run.iter().map(|v| v.1).collect();
                    let own: Vec<f64> = run.iter().filter_map(|v| v.2).collect();
                    let speed: Vec<f64> = run.iter().filter_map(|v| v.3).collect();
                    let (id, lab) = &labs[i];
                    let of = shared[i].get_or_insert_with(|| {
                        Arc::new(LabOf {
                            started_unix_s: lab.started_unix_s,
                            commit: lab.commit.clone(),
                            branch: lab.branch.clone(),
                            path: lab.path.clone(),
                            tags: lab.tags.clone(),
                        })
                    });
                    Point {
                        lab: *id,
                        of: Arc::clone(of),
                        value: stats::describe::centre(&values),
                        repeats: values.len(),
                        own_cpu: (own.len() == values.len()).then(|| stats::describe::centre(&own)),
                        speed: (speed.len() == values.len()).then(|| stats::describe::centre(&speed)),
                    }
                })
                .collect();
            // Change points are the line's: labs off it (a bisect's, `lab ab`'s ABBA pairs, a
            // rerun of an old commit) are shown, never a change of the line (their order is not
            // the commits').
            let on_line_at: Vec<usize> = (0..points.len()).filter(|&k| line[lab_at[k]]).collect();
            let (changes, machine) = if changes_wanted(&g.key) {
                let values: Vec<f64> = on_line_at.iter().map(|&k| points[k].value).collect();
                let mut found = change_points(&values, settings);
                let machine = if crate::machine_change::controlled(&g.key.metric) {
                    // The probe on the target's CPUs first; loadlab's own CPU per request where the
                    // probe does not explain a change (or the labs have none).
                    let own: Vec<Option<f64>> = on_line_at.iter().map(|&k| points[k].own_cpu).collect();
                    let speed: Vec<Option<f64>> = on_line_at.iter().map(|&k| points[k].speed).collect();
                    let by_speed = crate::machine_change::explained(&values, &speed, &found, settings, SPEED_TEXT);
                    let by_own = crate::machine_change::explained(&values, &own, &found, settings, OWN_TEXT);
                    by_speed.into_iter().zip(by_own).map(|(s, o)| s.or(o)).collect()
                } else {
                    vec![None; found.len()]
                };
                for c in &mut found {
                    c.index = on_line_at[c.index];
                }
                (found, machine)
            } else {
                (Vec::new(), Vec::new())
            };
            let accepted = vec![None; changes.len()];
            Series { key: g.key, machine_text: g.machine_text, points, changes, accepted, machine }
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_ci_cannot_drive_a_terminal_or_break_a_table() {
        assert_eq!(plain("main\u{1b}[2J\nx"), "main?[2J?x");
        assert_eq!(plain("a\u{202e}b\u{7}c\u{2066}d\u{9b}"), "a?b?c?d?");
        assert_eq!(md_cell("<img src=x onerror=alert(1)>|a"), "&lt;img src=x onerror=alert(1)&gt;\\|a");
        let of = LabOf {
            started_unix_s: 0,
            commit: Some("c0ffee\u{1b}[31mred".into()),
            branch: Some("feat\nnext".into()),
            path: String::new(),
            tags: String::new(),
        };
        let p = Point { lab: 1, of: Arc::new(of), value: 1.0, repeats: 1, own_cpu: None, speed: None };
        assert_eq!((p.short_commit(), p.branch_text()), ("c0ffee?[31".to_owned(), "feat?next".to_owned()));
    }
}
