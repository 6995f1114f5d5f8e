//! A hypothesis judged on a span (`span = "db.query"`): the span's self time in each step's
//! slowest 1% of requests, subject against other, across the repeats of each side (Welch's on
//! logarithms, as every other figure; on the values where a step's slowest requests had none of
//! the span, since a zero has no logarithm and a stand-in for it would set the spread). It
//! answers "is the tail's time in this span", as `where` answers "is the CPU in this function".

use serde::{Deserialize, Serialize};

use crate::measure::verdict::Finding;

/// The span's self time in the slowest 1% at one load point, each side the mean of its steps.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SpanPoint {
    pub point: String,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub subject_us: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub other_us: f64,
    /// subject / other (of geometric means), with its 95% interval from two or more steps a side.
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub ratio: f64,
    #[serde(deserialize_with = "results::nan::nan_pair_is_null")]
    pub ci: Option<(f64, f64)>,
    /// Steps a side whose slowest requests had spans.
    pub steps: (usize, usize),
    pub finding: Finding,
}

/// A hypothesis on a span, over the load points where both sides were traced.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SpanFinding {
    /// As the plan wrote it: a span's name, exactly.
    pub span: String,
    pub points: Vec<SpanPoint>,
    pub finding: Finding,
}

/// The span's self time in each step's slowest requests (none where it is not there: 0).
fn per_step<'a>(tails: impl IntoIterator<Item = &'a spans::Tail>, name: &str) -> Vec<f64> {
    tails
        .into_iter()
        .filter(|t| t.slowest.with_spans > 0)
        .map(|t| t.slowest.names.iter().find(|n| n.name == name).map_or(0.0, |n| n.self_us))
        .collect()
}

/// The span `name` in the subject's steps' tails against the other's, claimed lower (or higher).
/// None when a side has no step whose slowest requests had spans.
pub(crate) fn point<'a>(
    label: String,
    name: &str,
    subject: impl IntoIterator<Item = &'a spans::Tail>,
    other: impl IntoIterator<Item = &'a spans::Tail>,
    lower: bool,
) -> Option<SpanPoint> {
    let (a, b) = (per_step(subject, name), per_step(other, name));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    // The other side never had the span in its tail: no ratio to take.
    let w = if b.iter().all(|x| *x == 0.0) {
        stats::welch::Welch { ratio: f64::NAN, ci: None, p: None }
    } else {
        stats::welch::welch(&a, &b)
    };
    let finding = match w.ci {
        Some((_, hi)) if hi < 1.0 => {
            if lower {
                Finding::Supported
            } else {
                Finding::Rejected
            }
        }
        Some((lo, _)) if lo > 1.0 => {
            if lower {
                Finding::Rejected
            } else {
                Finding::Supported
            }
        }
        _ => Finding::Inconclusive,
    };
    Some(SpanPoint {
        point: label,
        subject_us: stats::describe::mean(&a),
        other_us: stats::describe::mean(&b),
        ratio: w.ratio,
        ci: w.ci,
        steps: (a.len(), b.len()),
        finding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(names: &[(&str, f64)]) -> spans::Tail {
        let group = |names: &[(&str, f64)], with_spans| spans::Group {
            requests: 2,
            with_spans,
            latency_us: 44_000.0,
            names: names.iter().map(|(n, t)| spans::NameTime { name: (*n).into(), self_us: *t }).collect(),
            uncovered_us: 500.0,
            trace_ids: Vec::new(),
        };
        spans::Tail { slowest: group(names, 2), median: group(&[], 2), waterfall: None }
    }

    #[test]
    fn a_span_that_left_the_tail_is_supported_and_one_step_a_side_is_not_enough() {
        // The new build's slowest requests spend ~40 ms in db.query, the old's ~2 ms.
        let slow = [tail(&[("db.query", 40_000.0)]), tail(&[("db.query", 43_000.0)]), tail(&[("db.query", 39_000.0)])];
        let fast = [tail(&[("db.query", 2_000.0)]), tail(&[("db.query", 2_400.0)]), tail(&[("db.query", 1_900.0)])];
        let p = point("50/s".into(), "db.query", &fast, &slow, true).unwrap();
        assert_eq!(p.finding, Finding::Supported, "{p:?}");
        assert_eq!(p.steps, (3, 3));
        assert!((p.other_us - 40_666.7).abs() < 1.0 && (p.subject_us - 2_100.0).abs() < 1.0, "{p:?}");
        let (lo, hi) = p.ci.unwrap();
        assert!(lo < p.ratio && p.ratio < hi && hi < 1.0, "{p:?}");
        // A step whose slowest requests had none of it counts as none, on the values.
        let gone = [tail(&[("db.query", 2_000.0)]), tail(&[("db.query", 2_400.0)]), tail(&[("render", 900.0)])];
        let p = point("50/s".into(), "db.query", &gone, &slow, true).unwrap();
        assert_eq!(p.finding, Finding::Supported, "{p:?}");
        assert!((p.ratio - 4_400.0 / 3.0 / 40_666.7).abs() < 1e-3, "{p:?}");
        // Never in the other's tail: nothing to compare with.
        let p = point("50/s".into(), "db.query", &slow, &gone[2..], false).unwrap();
        assert_eq!((p.ci, p.finding), (None, Finding::Inconclusive));
        // Claimed higher, the same figures reject it.
        assert_eq!(point("x".into(), "db.query", &fast, &slow, false).unwrap().finding, Finding::Rejected);
        // One step a side: no interval, no verdict.
        let p = point("x".into(), "db.query", &fast[..1], &slow[..1], true).unwrap();
        assert_eq!((p.ci, p.finding), (None, Finding::Inconclusive));
        // Steps alike: inconclusive; a side without spans: nothing to judge.
        assert_eq!(point("x".into(), "db.query", &slow, &slow, true).unwrap().finding, Finding::Inconclusive);
        let none = spans::Tail { slowest: spans::Group { with_spans: 0, ..tail(&[]).slowest }, ..tail(&[]) };
        assert_eq!(point("x".into(), "db.query", &[none], &slow, true), None);
    }
}
