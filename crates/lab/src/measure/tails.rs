//! What grew in the tail between two sides: in a cell traced on both, the span name whose self
//! time in the slowest 1% of requests grew most, with its interval where each side has two or
//! more steps (Welch's on logarithms, as every other figure of `lab compare`); in `lab ab`, over
//! its pairs of labs as every other row of it ([`TailGrowth::paired_over`]).

use serde::{Deserialize, Serialize};

use crate::side::CellData;

/// The span that grew most in a cell's tail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TailGrowth {
    pub target: String,
    pub load: String,
    pub name: String,
    /// Its mean self time in the slowest requests, µs, on each side.
    pub old_us: f64,
    pub new_us: f64,
    /// new / old - 1, in %; none when the old side had none of it.
    pub change_pct: Option<f64>,
    /// The 95% interval of the change, with two or more steps a side.
    pub interval_pct: Option<(f64, f64)>,
    /// Pairs of labs the change and its interval were taken over (Student's paired t), when
    /// they were; else Welch's over each side's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
    /// The slowest requests' latency, µs, on each side.
    pub old_latency_us: f64,
    pub new_latency_us: f64,
}

impl TailGrowth {
    /// `svc at 50/s: db.query in the slowest 1% 2.16ms -> 41.20ms (+1807% [+1500, +2100]); their
    /// latency 4.29ms -> 44.01ms`.
    pub fn text(&self) -> String {
        let show = results::duration::show_us;
        // A bound past +10,000% says only that few steps were compared.
        let bound = |b: f64| if b > 10_000.0 { ">+10000".to_owned() } else { format!("{b:+.0}") };
        let change = match (self.change_pct, self.interval_pct) {
            (Some(c), Some((lo, hi))) => match self.pairs {
                Some(n) => format!(" ({c:+.0}% [{}, {}], over {n} pairs)", bound(lo), bound(hi)),
                None => format!(" ({c:+.0}% [{}, {}])", bound(lo), bound(hi)),
            },
            (Some(c), None) => format!(" ({c:+.0}%, one step a side: no interval)"),
            (None, _) => " (none before)".to_owned(),
        };
        format!(
            "{} at {}: {} in the slowest 1% {} -> {}{change}; their latency {} -> {}",
            self.target,
            self.load,
            self.name,
            show(self.old_us),
            show(self.new_us),
            show(self.old_latency_us),
            show(self.new_latency_us)
        )
    }
}

impl TailGrowth {
    /// The change and its interval over pairs of labs (`(base, head)`, each lab's cell), run one
    /// after the other so that a drift of the machine falls on both: Student's paired t on the
    /// logarithms of each pair's ratio of the span's mean self time in the slowest 1% (on the
    /// plain differences where a lab's slowest requests had none of it). Pairs where either lab
    /// had no spans in its slowest requests are left out; with fewer than two, nothing changes.
    pub fn paired_over(&mut self, pairs: &[(&CellData, &CellData)]) {
        let mean = |c: &CellData| {
            let v = per_step(c, &self.name);
            (!v.is_empty()).then(|| stats::describe::mean(&v))
        };
        let values: Vec<(f64, f64)> = pairs.iter().filter_map(|(b, h)| Some((mean(b)?, mean(h)?))).collect();
        if values.len() < 2 {
            return;
        }
        let p = stats::paired::Paired::of(&values);
        let Some((lo, hi)) = p.interval(stats::CONFIDENCE) else { return };
        if p.base_mean() > 0.0 {
            self.change_pct = Some((p.ratio - 1.0) * 100.0);
        }
        self.interval_pct = Some(((lo - 1.0) * 100.0, (hi - 1.0) * 100.0));
        self.pairs = Some(values.len());
    }
}

/// Each step's slowest-1% self time of `name` (0 where its slowest requests had none of it), of
/// the steps whose slowest requests had spans.
fn per_step(c: &CellData, name: &str) -> Vec<f64> {
    c.steps
        .iter()
        .filter_map(|s| s.tail.as_ref())
        .filter(|t| t.slowest.with_spans > 0)
        .map(|t| t.slowest.names.iter().find(|n| n.name == name).map_or(0.0, |n| n.self_us))
        .collect()
}

fn latency(c: &CellData) -> f64 {
    let l: Vec<f64> = c
        .steps
        .iter()
        .filter_map(|s| s.tail.as_ref())
        .filter(|t| t.slowest.with_spans > 0)
        .map(|t| t.slowest.latency_us)
        .collect();
    if l.is_empty() {
        0.0
    } else {
        stats::describe::mean(&l)
    }
}

/// The span whose tail self time grew most from `old` to `new` (by its mean over each side's
/// steps), when both sides have spans in their slowest requests.
pub fn grew(old: &CellData, new: &CellData) -> Option<TailGrowth> {
    let names: std::collections::BTreeSet<&str> = [old, new]
        .iter()
        .flat_map(|c| c.steps.iter().filter_map(|s| s.tail.as_ref()))
        .flat_map(|t| t.slowest.names.iter().map(|n| n.name.as_str()))
        .collect();
    let mean = |v: &[f64]| if v.is_empty() { None } else { Some(stats::describe::mean(v)) };
    let (name, a, b) = names
        .into_iter()
        .filter_map(|name| Some((name, mean(&per_step(old, name))?, mean(&per_step(new, name))?)))
        .max_by(|x, y| (x.2 - x.1).total_cmp(&(y.2 - y.1)))?;
    let (olds, news) = (per_step(old, name), per_step(new, name));
    let positive = |v: &[f64]| v.len() >= 2 && v.iter().all(|x| *x > 0.0);
    let interval_pct = (positive(&olds) && positive(&news))
        .then(|| stats::welch::welch(&news, &olds).ci)
        .flatten()
        .map(|(lo, hi)| ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0));
    Some(TailGrowth {
        target: new.target.clone(),
        load: new.label.clone(),
        name: name.to_owned(),
        old_us: a,
        new_us: b,
        change_pct: (a > 0.0).then(|| (b / a - 1.0) * 100.0),
        interval_pct,
        pairs: None,
        old_latency_us: latency(old),
        new_latency_us: latency(new),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::side::StepData;

    fn step(names: &[(&str, f64)], latency_us: f64) -> StepData {
        let group = |names: &[(&str, f64)]| spans::Group {
            requests: 2,
            with_spans: 2,
            latency_us,
            names: names.iter().map(|(n, t)| spans::NameTime { name: (*n).into(), self_us: *t }).collect(),
            uncovered_us: 500.0,
            trace_ids: Vec::new(),
        };
        StepData {
            id: "s".into(),
            values: Default::default(),
            windows: Vec::new(),
            requests: 100,
            bytes_in: 0,
            files: Vec::new(),
            profile: None,
            tail: Some(spans::Tail { slowest: group(names), median: group(&[]), waterfall: None }),
            speed_us: None,
        }
    }

    fn cell(steps: Vec<StepData>) -> CellData {
        CellData { target: "svc".into(), label: "50/s".into(), steps, excluded: Vec::new() }
    }

    #[test]
    fn the_span_that_grew_most_with_its_interval() {
        let old = cell(vec![
            step(&[("db.query", 2000.0), ("render", 1000.0)], 4000.0),
            step(&[("db.query", 2200.0), ("render", 1100.0)], 4200.0),
        ]);
        let new = cell(vec![
            step(&[("db.query", 40_000.0), ("render", 1000.0)], 42_000.0),
            step(&[("db.query", 42_000.0), ("render", 1050.0)], 44_000.0),
        ]);
        let g = grew(&old, &new).unwrap();
        assert_eq!(g.name, "db.query");
        assert!((g.change_pct.unwrap() - 1852.4).abs() < 0.1, "{g:?}");
        let (lo, hi) = g.interval_pct.unwrap();
        assert!(lo > 1000.0 && hi > lo, "{g:?}");
        let text = g.text();
        assert!(text.starts_with("svc at 50/s: db.query in the slowest 1% ") && text.contains(" (+1852% ["), "{text}");
        // One step a side: the figures, no interval; a span new on the new side: no ratio.
        let g =
            grew(&cell(vec![step(&[("db.query", 2000.0)], 4000.0)]), &cell(vec![step(&[("lock", 9000.0)], 12_000.0)]))
                .unwrap();
        assert_eq!((g.name.as_str(), g.change_pct, g.interval_pct), ("lock", None, None));
        assert!(g.text().contains("(none before)"), "{}", g.text());
        // Without spans on a side: nothing to say.
        assert_eq!(grew(&cell(Vec::new()), &new), None);
    }

    #[test]
    fn over_pairs_of_labs_a_drift_both_sides_share_is_left_out() {
        // The machine drifts 2x over the run, both sides alike; head's db.query is 1.5x base's
        // in every pair. Welch's over the labs sees the drift; the pairs see the change.
        let lab = |db: f64| cell(vec![step(&[("db.query", db), ("render", 900.0)], db + 2000.0)]);
        let drift = [1.0, 1.3, 1.6, 2.0];
        let base: Vec<CellData> = drift.iter().map(|d| lab(2000.0 * d)).collect();
        let head: Vec<CellData> = drift.iter().map(|d| lab(3000.0 * d * if *d > 1.5 { 1.01 } else { 0.99 })).collect();
        let merge = |labs: &[CellData]| cell(labs.iter().flat_map(|c| c.steps.clone()).collect());
        let mut g = grew(&merge(&base), &merge(&head)).unwrap();
        let (wlo, whi) = g.interval_pct.unwrap();
        let pairs: Vec<(&CellData, &CellData)> = base.iter().zip(&head).collect();
        g.paired_over(&pairs);
        let (lo, hi) = g.interval_pct.unwrap();
        assert_eq!(g.pairs, Some(4));
        assert!((g.change_pct.unwrap() - 50.0).abs() < 1.0, "{g:?}");
        assert!(lo > 40.0 && hi < 60.0, "paired [{lo}, {hi}]");
        assert!(hi - lo < (whi - wlo) / 5.0, "paired [{lo}, {hi}] against Welch's [{wlo}, {whi}]");
        assert!(g.text().contains(", over 4 pairs)"), "{}", g.text());
        // One pair with spans: Welch's stays.
        let mut one = grew(&merge(&base), &merge(&head)).unwrap();
        let empty = cell(Vec::new());
        one.paired_over(&[(&base[0], &head[0]), (&base[1], &empty)]);
        assert_eq!((one.pairs, one.interval_pct), (None, Some((wlo, whi))));
    }
}
