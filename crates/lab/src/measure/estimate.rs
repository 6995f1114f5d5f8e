//! Statistics over repeats: a repeat is one measurement, so a step run 3 times has 3 values.
//! With fewer than 3 repeats the spread between them says nothing, and the uncertainty comes
//! from within the runs instead (`windows`: a block bootstrap over one-second windows); every
//! summary and comparison says which it used (`Basis`).
//!
//! - Per step: the median, and a 95% confidence interval from Student's t (few repeats, unknown
//!   variance), on the logarithms when every value is positive: an interval for the geometric
//!   mean, which never leaves the physical range (a latency's interval is never below 0, where
//!   the plain t interval of 4.3 ms over two repeats reached -3.9 ms). Values with a zero in
//!   them (error shares) take the plain interval, cut at 0; shares are cut at 1.
//! - A/B: Welch's t-test on the logarithms of the values (unequal variances, few repeats; the log
//!   makes the effect a ratio, as latencies and rates compare by ratio): the ratio of geometric
//!   means with its 95% interval, and the two-sided p-value. The difference is significant when
//!   the interval excludes 1 (p < 0.05); otherwise "no significant difference", as benchstat
//!   prints `~`. Values that are not all positive (an error count of 0) are compared on their
//!   differences instead, and the ratio is that of the means.

use serde::{Deserialize, Serialize};

use ::stats::bootstrap;
use ::stats::describe::{mean, median};
use ::stats::welch::{interval, welch};

use crate::measure::metric::Metric;
pub(crate) use crate::measure::windows::Basis;
use crate::measure::windows::{self, Window};

/// The repeats needed to measure run-to-run variation.
pub(crate) const MIN_REPEATS: usize = 3;

/// One step's values over its repeats.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Estimate {
    pub n: usize,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub median: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub mean: f64,
    /// 95% interval: across repeats, of the geometric mean when every value is positive; within
    /// runs, of the metric over their pooled windows. Never below 0.
    #[serde(deserialize_with = "results::nan::nan_pair_is_null")]
    pub ci: Option<(f64, f64)>,
    pub basis: Basis,
}

pub(crate) fn summarize(values: &[f64]) -> Estimate {
    let n = values.len();
    let mean = if n == 0 { f64::NAN } else { mean(values) };
    Estimate { n, median: median(values), mean, ci: interval(values), basis: Basis::Repeats }
}

/// A metric of a set of windows, as [`Metric::of`] gives it of a step: latencies in ms, shares
/// 0..1, rates per second of window. `None` for what windows cannot tell (max, CPU) or an empty set.
pub(crate) fn window_metric(m: Metric, windows: &[&Window]) -> Option<f64> {
    let requests: u64 = windows.iter().map(|w| w.requests).sum();
    let successes: u64 = windows.iter().map(|w| w.successes).sum();
    if requests == 0 {
        return None;
    }
    let quantile = |q: f64| {
        // Dense over the buckets in use: a resample merges many windows, and a BTreeMap per
        // merge was most of the bootstrap's time.
        let lo = windows.iter().filter_map(|w| w.latency.first()).map(|(b, _)| *b).min().unwrap_or(0);
        let hi = windows.iter().filter_map(|w| w.latency.last()).map(|(b, _)| *b).max().unwrap_or(0);
        let mut merged = vec![0u64; (hi - lo) as usize + 1];
        for w in windows {
            for (b, n) in &w.latency {
                merged[(b - lo) as usize] += n;
            }
        }
        let rank = (q * requests as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in merged.into_iter().enumerate() {
            seen += n;
            if seen >= rank {
                return windows::value_us(lo + i as u32) / 1000.0;
            }
        }
        f64::NAN
    };
    Some(match m {
        Metric::P50 => quantile(0.5),
        Metric::P90 => quantile(0.9),
        Metric::P95 => quantile(0.95),
        Metric::P99 => quantile(0.99),
        Metric::P999 => quantile(0.999),
        Metric::Mean => {
            let sum: f64 =
                windows.iter().flat_map(|w| &w.latency).map(|(b, n)| windows::value_us(*b) * *n as f64).sum();
            sum / requests as f64 / 1000.0
        }
        Metric::Success => successes as f64 / requests as f64,
        Metric::Errors => 1.0 - successes as f64 / requests as f64,
        Metric::Rps => requests as f64 / windows.iter().map(|w| w.secs).sum::<f64>(),
        Metric::Throughput => successes as f64 / windows.iter().map(|w| w.secs).sum::<f64>(),
        Metric::Max | Metric::TargetCpu | Metric::GeneratorCpu => return None,
    })
}

/// The 95% percentile-bootstrap interval of `m` within a run's windows (None for max, or too
/// few windows to resample: fewer than 3).
pub(crate) fn window_interval(m: Metric, windows: &[Window]) -> Option<(f64, f64)> {
    if windows.len() < 3 || m == Metric::Max {
        return None;
    }
    let mut values = bootstrap::resample(windows, m as u64, |w| window_metric(m, w));
    (values.len() >= bootstrap::RESAMPLES / 2).then(|| bootstrap::interval(&mut values))
}

/// The median of `values` (one per repeat) with the interval of `metric` within the runs'
/// pooled windows: for fewer than [`MIN_REPEATS`] repeats.
pub(crate) fn summarize_within(metric: Metric, values: &[f64], windows: &[Window]) -> Estimate {
    let n = values.len();
    let ci = window_interval(metric, windows).map(|(lo, hi)| (lo.max(0.0), hi.max(0.0)));
    let mean = if n == 0 { f64::NAN } else { mean(values) };
    Estimate { n, median: median(values), mean, ci, basis: Basis::WithinRun }
}

/// [`summarize`] for a share (0..1): the interval is cut at 1 as well.
pub(crate) fn summarize_share(values: &[f64]) -> Estimate {
    let mut s = summarize(values);
    s.ci = s.ci.map(|(lo, hi)| (lo.min(1.0), hi.min(1.0)));
    s
}

/// A compared with B.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    /// A / B: the ratio of geometric means (of means when values are not all positive).
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub ratio: f64,
    /// 95% interval of the ratio; `None` when a side has a single repeat.
    #[serde(deserialize_with = "results::nan::nan_pair_is_null")]
    pub ci: Option<(f64, f64)>,
    /// Two-sided p-value of Welch's test; `None` when it cannot be computed.
    pub p: Option<f64>,
    /// The interval excludes 1 (and, as `ab::judge` holds it, the change is beyond what a rerun
    /// moves: `stats::floors::run_to_run`).
    pub significant: bool,
    pub basis: Basis,
    /// Why a visible difference is not called significant, when that is the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Welch's t-test of `a` against `b` (see the module's docs).
pub(crate) fn compare(a: &[f64], b: &[f64]) -> Comparison {
    let w = welch(a, b);
    let note = w.ci.is_none().then(|| "one repeat a side: nothing measured of the spread".to_owned());
    Comparison { ratio: w.ratio, ci: w.ci, p: w.p, significant: w.significant(), basis: Basis::Repeats, note }
}

/// `metric` of A's windows against B's (each side the pooled windows of its runs): `ratio` (the
/// sides' own values, exact; the windows' 1% buckets would move it), its 95% percentile-bootstrap
/// interval (A and B resampled independently, centred on `ratio`), and the two-sided bootstrap
/// p-value. Significant when the interval excludes 1: what one run cannot tell (a rerun's move)
/// is `ab`'s to judge.
pub(crate) fn compare_within(metric: Metric, a: &[Window], b: &[Window], ratio: f64) -> Comparison {
    let all = |w: &[Window]| window_metric(metric, &w.iter().collect::<Vec<_>>());
    let none = |ratio: f64, note: &str| Comparison {
        ratio,
        ci: None,
        p: None,
        significant: false,
        basis: Basis::WithinRun,
        note: Some(note.into()),
    };
    let (Some(va), Some(vb)) = (all(a), all(b)) else {
        return none(f64::NAN, "nothing measured on one side");
    };
    if va <= 0.0 || vb <= 0.0 || !(ratio.is_finite() && ratio > 0.0) {
        return none(ratio, "a value of 0: no ratio");
    }
    // The windows' ratio moved onto the exact one: the interval keeps its width in ratio terms.
    let scale = ratio / (va / vb);
    if a.len() < 3 || b.len() < 3 {
        return none(ratio, "runs too short to resample (fewer than 3 seconds)");
    }
    let ra = bootstrap::resample(a, metric as u64, |w| window_metric(metric, w));
    let rb = bootstrap::resample(b, (metric as u64) << 8, |w| window_metric(metric, w));
    let mut ratios: Vec<f64> = ra.iter().zip(&rb).filter(|(_, b)| **b > 0.0).map(|(a, b)| scale * a / b).collect();
    if ratios.len() < bootstrap::RESAMPLES / 2 {
        return none(ratio, "too few resamples with a value");
    }
    let p = bootstrap::p_of_ratios(&ratios);
    let ci = bootstrap::interval(&mut ratios);
    let excludes = ci.0 > 1.0 || ci.1 < 1.0;
    Comparison { ratio, ci: Some(ci), p: Some(p), significant: excludes, basis: Basis::WithinRun, note: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_comparisons_carry_what_they_rest_on() {
        // The numbers are stats::welch's (tested there against SciPy); here what a step adds.
        let s = summarize(&[10.0, 12.0, 11.0, 13.0, 14.0]);
        assert_eq!((s.n, s.median, s.basis), (5, 12.0, Basis::Repeats));
        assert_eq!(s.ci, interval(&[10.0, 12.0, 11.0, 13.0, 14.0]));
        assert_eq!(summarize(&[5.0]).ci, None);
        let (_, hi) = summarize_share(&[1.0, 0.9, 1.0]).ci.unwrap();
        assert_eq!(hi, 1.0);
        let c = compare(&[38071.96, 37512.4, 38390.1], &[36702.41, 36119.8, 36950.2]);
        assert!(c.significant && c.note.is_none() && c.p.unwrap() < 0.05, "{c:?}");
        let one = compare(&[1.0], &[2.0]);
        assert!(!one.significant && one.ci.is_none() && one.note.is_some());
    }
}

#[cfg(test)]
mod within_tests {
    use super::*;
    use crate::measure::ab::{judge, Sample};
    use crate::measure::windows::tests::run;

    /// One run a side, judged as a comparison judges it: each side's value from its windows.
    fn compare_within(m: Metric, a: &[Window], b: &[Window]) -> Comparison {
        let value = |w: &[Window]| window_metric(m, &w.iter().collect::<Vec<_>>()).unwrap_or(f64::NAN);
        let requests = |w: &[Window]| w.iter().map(|w| w.requests).sum();
        let (va, vb) = ([value(a)], [value(b)]);
        judge(
            m,
            Sample { values: &va, windows: a, requests: requests(a) },
            Sample { values: &vb, windows: b, requests: requests(b) },
            None,
        )
    }

    #[test]
    fn runs_from_one_distribution_read_as_no_change_and_a_20_percent_shift_is_found() {
        // 200 pairs of one-repeat runs (20 s at 50/s, log-normal latencies around 10 ms).
        let (mut excluded, mut called, mut found) = (0, 0, 0);
        for i in 0..200u64 {
            let a = run(20, 50, 10.0, 2 * i);
            let b = run(20, 50, 10.0, 2 * i + 1);
            let c = compare_within(Metric::P50, &a, &b);
            assert_eq!(c.basis, Basis::WithinRun);
            let (lo, hi) = c.ci.unwrap();
            excluded += usize::from(lo > 1.0 || hi < 1.0);
            called += usize::from(c.significant);
            let shifted = run(20, 50, 12.0, 2 * i + 1);
            found += usize::from(compare_within(Metric::P50, &shifted, &a).significant);
        }
        // The interval alone excludes 1 at about its nominal 5% (calibration); the verdict, with
        // the run-to-run floor on top, almost never calls a difference that is not there.
        assert!(excluded <= 20, "the 95% interval excluded 1 in {excluded} of 200 same-distribution pairs");
        assert!(called <= 10, "{called} of 200 same-distribution pairs called different");
        assert!(found >= 190, "a 20% shift found in only {found} of 200");
    }

    #[test]
    fn one_repeat_decides_a_large_effect_but_not_a_small_one() {
        let fast = run(10, 100, 10.0, 7);
        let slow = run(10, 100, 170.0, 8);
        let c = compare_within(Metric::P50, &slow, &fast);
        assert!(c.significant && c.ratio > 15.0 && c.note.is_none(), "{c:?}");
        // 1% apart with 5,000 requests a side: the interval may exclude 1, but one run cannot
        // tell that from a rerun's variation.
        let a = run(50, 100, 10.0, 9);
        let b: Vec<Window> = a
            .iter()
            .map(|w| Window { latency: w.latency.iter().map(|(b, n)| (b + 1, *n)).collect(), ..w.clone() })
            .collect();
        let c = compare_within(Metric::P50, &b, &a);
        assert!((c.ratio - 1.01).abs() < 0.005, "{c:?}");
        assert!(!c.significant, "{c:?}");
        assert!(c.note.as_deref().is_some_and(|n| n.starts_with("two labs of one build differ")), "{c:?}");
        // A zero on one side has no ratio.
        let failing: Vec<Window> = a.iter().map(|w| Window { successes: 0, ..w.clone() }).collect();
        assert!(!compare_within(Metric::Throughput, &failing, &a).significant);
    }
}

#[cfg(test)]
mod tie_tests {
    use super::*;
    use crate::measure::windows::tests::run;

    #[test]
    fn a_metric_equal_in_every_resample_has_p_1() {
        let a = run(10, 50, 10.0, 3);
        let c = compare_within(Metric::Success, &a, &a, 1.0);
        assert_eq!((c.ratio, c.p, c.significant), (1.0, Some(1.0), false), "{c:?}");
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use crate::measure::windows::tests::run;

    #[test]
    fn windows_give_back_the_runs_numbers() {
        let mut w = crate::measure::windows::Windows::default();
        for i in 0..1000u64 {
            // 1 ms .. 1000 ms, one of each, over 4 s; every tenth fails.
            w.add(i * 4000, (i + 1) * 1000, i % 10 != 0);
        }
        // A 4 s run: ten windows of 400 ms, so it can be resampled.
        let ws = w.windows();
        assert_eq!(ws.len(), 10);
        assert!(ws.iter().all(|w| (w.secs - 0.4).abs() < 1e-9 && w.requests == 100), "{ws:?}");
        // A 30 s run: windows of a second.
        let long = run(30, 20, 10.0, 5);
        assert!(long.len() == 30 && long.iter().all(|w| w.secs == 1.0 && w.requests == 20));
        let all: Vec<&Window> = ws.iter().collect();
        let close = |a: f64, b: f64| (a - b).abs() / b < 0.011;
        assert!(close(window_metric(Metric::P50, &all).unwrap(), 500.0), "{:?}", window_metric(Metric::P50, &all));
        assert!(close(window_metric(Metric::P99, &all).unwrap(), 990.0));
        assert!(close(window_metric(Metric::Mean, &all).unwrap(), 500.5));
        assert_eq!(window_metric(Metric::Success, &all), Some(0.9));
        assert!(close(window_metric(Metric::Rps, &all).unwrap(), 250.0));
        assert_eq!(window_metric(Metric::Max, &all), None);
    }

    #[test]
    fn a_steady_run_has_a_narrow_interval_around_its_value_that_never_leaves_the_range() {
        let ws = run(30, 200, 10.0, 1);
        let (lo, hi) = window_interval(Metric::P50, &ws).unwrap();
        assert!(lo > 9.5 && hi < 10.5 && lo < hi, "{lo} {hi}");
        let (lo, hi) = window_interval(Metric::Success, &ws).unwrap();
        assert_eq!((lo, hi), (1.0, 1.0));
        assert!(window_interval(Metric::P99, &ws[..2]).is_none(), "two windows cannot be resampled");
        // Deterministic: the same windows give the same interval.
        assert_eq!(window_interval(Metric::P99, &ws), window_interval(Metric::P99, &ws));
    }
}
