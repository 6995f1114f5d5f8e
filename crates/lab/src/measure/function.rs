//! A hypothesis judged on a function's CPU per request (`where = "deflate"`): the share of the
//! profile's samples in stacks through it, times the CPU per request, subject against other.
//! One profile a side gives no repeats, so the interval is that of the sample counts
//! (`stats::counts`); the CPU and the requests are measured,
//! not sampled, and taken as exact.

use serde::{Deserialize, Serialize};

use crate::measure::verdict::Finding;
use profile::StepProfile;

/// The function's CPU per request at one load point.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FunctionPoint {
    pub point: String,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub subject_us: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub other_us: f64,
    /// subject / other, with its 95% interval.
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub ratio: f64,
    #[serde(deserialize_with = "results::nan::nan_pair_is_null")]
    pub ci: Option<(f64, f64)>,
    pub finding: Finding,
}

/// A hypothesis on a function, over the load points where both sides were profiled.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FunctionFinding {
    /// As the plan wrote it: part of a function's name.
    pub function: String,
    pub points: Vec<FunctionPoint>,
    pub finding: Finding,
}

/// Samples in stacks through `pattern`, and its µs of CPU per request.
fn cost(p: &StepProfile, pattern: &str) -> Option<(f64, f64)> {
    let weight = *p.matched.get(pattern)?;
    if !p.us_per_request.is_finite() {
        return None;
    }
    // A target so idle that no sample fell in the window (100 µs of CPU per request at 50/s is
    // one sample in 2 s at 99 Hz): nothing seen, bounded by `point`'s half a sample.
    if p.weight == 0 {
        return Some((0.0, 0.0));
    }
    let samples = weight as f64 / p.weight as f64 * p.samples as f64;
    Some((samples, weight as f64 * p.us_per_weight()))
}

/// The function `pattern` in `subject` against `other`, claimed lower (or higher).
pub(crate) fn point(
    label: String,
    pattern: &str,
    subject: &StepProfile,
    other: &StepProfile,
    lower: bool,
) -> Option<FunctionPoint> {
    let ((ca, a), (cb, b)) = (cost(subject, pattern)?, cost(other, pattern)?);
    // Half a sample where none fell: a function absent from one side still has a bound.
    let floor = |p: &StepProfile| 0.5 * p.us_per_request / p.samples.max(1) as f64;
    let ratio = a.max(floor(subject)) / b.max(floor(other));
    let ci = stats::counts::ratio_interval(ratio, ca, cb, stats::CONFIDENCE);
    let finding = if ci.1 < 1.0 {
        if lower {
            Finding::Supported
        } else {
            Finding::Rejected
        }
    } else if ci.0 > 1.0 {
        if lower {
            Finding::Rejected
        } else {
            Finding::Supported
        }
    } else {
        Finding::Inconclusive
    };
    Some(FunctionPoint { point: label, subject_us: a, other_us: b, ratio, ci: Some(ci), finding })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(samples: u64, through: u64, us_per_request: f64) -> StepProfile {
        StepProfile {
            source: "perf".into(),
            folded: String::new(),
            svg: String::new(),
            samples,
            weight: samples,
            cpu_s: 1.0,
            requests: 1000,
            us_per_request,
            top: Vec::new(),
            notes: Vec::new(),
            matched: [("deflate".to_owned(), through)].into(),
        }
    }

    #[test]
    fn a_function_that_left_is_supported_and_a_few_samples_are_not_enough() {
        // 004: deflate was 40% of 100 µs per request; gone (1 sample of 500) after.
        let p = point("x".into(), "deflate", &profile(500, 1, 60.0), &profile(500, 200, 100.0), true).unwrap();
        assert!((p.other_us - 40.0).abs() < 1e-9 && (p.subject_us - 0.12).abs() < 1e-9, "{p:?}");
        assert_eq!(p.finding, Finding::Supported);
        let p = point("x".into(), "deflate", &profile(500, 1, 60.0), &profile(500, 200, 100.0), false).unwrap();
        assert_eq!(p.finding, Finding::Rejected);
        // 6 samples against 5: within the counts' noise.
        let p = point("x".into(), "deflate", &profile(50, 6, 100.0), &profile(50, 5, 100.0), true).unwrap();
        assert_eq!(p.finding, Finding::Inconclusive, "{p:?}");
        assert!(point("x".into(), "gzip", &profile(50, 6, 100.0), &profile(50, 5, 100.0), true).is_none());
        // 006 quick: the pre-gzipped target at 100 µs per request gave no sample at all; the
        // other spent 6.3 ms per request in deflate over 66 samples. Nothing seen is a bound.
        let idle = profile(0, 0, 100.0);
        let busy = StepProfile { samples: 66, weight: 66, ..profile(66, 62, 6_666.0) };
        let p = point("x".into(), "deflate", &idle, &busy, true).unwrap();
        assert_eq!(p.finding, Finding::Supported, "{p:?}");
        assert!(p.subject_us <= 100.0, "{p:?}");
    }
}
