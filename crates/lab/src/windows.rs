//! Uncertainty within a run: a step's requests cut into one-second windows of its schedule, and
//! a block bootstrap over those windows. A run of thousands of requests over many seconds says
//! how much its own numbers move; resampling whole seconds (not single requests) keeps what
//! happens together together (a GC pause, a queue that builds), so the interval is not
//! falsely narrow.
//!
//! Each window keeps its counts and a sparse histogram of latencies in buckets 1% wide, so a
//! resample costs a few additions per window whatever the rate.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::verdict::Metric;

/// Latency buckets grow by this factor: 1% of resolution.
const GROWTH: f64 = 1.01;
/// Resamples per interval.
pub const RESAMPLES: usize = 500;
/// Resamples are drawn from a fixed seed: the same files give the same intervals.
const SEED: u64 = 0x10ad_1ab0;

/// One second of a run's schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    pub requests: u64,
    pub successes: u64,
    /// (bucket, count), buckets ascending.
    pub latency: Vec<(u32, u64)>,
}

/// A run's windows, by second of its schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Windows {
    seconds: BTreeMap<u64, BTreeMap<u32, u64>>,
    counts: BTreeMap<u64, (u64, u64)>,
}

fn bucket(latency_us: u64) -> u32 {
    ((latency_us.max(1) as f64).ln() / GROWTH.ln()).round() as u32
}

fn value_us(bucket: u32) -> f64 {
    GROWTH.powi(bucket as i32)
}

impl Windows {
    /// A request scheduled at `scheduled_us` into the run.
    pub fn add(&mut self, scheduled_us: u64, latency_us: u64, success: bool) {
        let s = scheduled_us / 1_000_000;
        *self.seconds.entry(s).or_default().entry(bucket(latency_us)).or_default() += 1;
        let c = self.counts.entry(s).or_default();
        c.0 += 1;
        c.1 += u64::from(success);
    }

    /// The windows, in order.
    pub fn windows(&self) -> Vec<Window> {
        self.seconds
            .iter()
            .map(|(s, h)| {
                let (requests, successes) = self.counts[s];
                Window { requests, successes, latency: h.iter().map(|(b, n)| (*b, *n)).collect() }
            })
            .collect()
    }
}

/// A metric of a set of windows, as [`Metric::of`] gives it of a step: latencies in ms, shares
/// 0..1, rates per second of window. `None` for what windows cannot tell (max) or an empty set.
pub fn metric(m: Metric, windows: &[&Window]) -> Option<f64> {
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
                return value_us(lo + i as u32) / 1000.0;
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
            let sum: f64 = windows.iter().flat_map(|w| &w.latency).map(|(b, n)| value_us(*b) * *n as f64).sum();
            sum / requests as f64 / 1000.0
        }
        Metric::Success => successes as f64 / requests as f64,
        Metric::Errors => 1.0 - successes as f64 / requests as f64,
        Metric::Rps => requests as f64 / windows.len() as f64,
        Metric::Throughput => successes as f64 / windows.len() as f64,
        Metric::Max => return None,
    })
}

/// `RESAMPLES` values of `stat` over block-bootstrap resamples of `windows` (each resample as
/// many windows as the run has, drawn with replacement); `salt` varies the draws between uses.
pub fn resample(windows: &[Window], salt: u64, stat: impl Fn(&[&Window]) -> Option<f64>) -> Vec<f64> {
    if windows.is_empty() {
        return Vec::new();
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED ^ salt);
    let mut out = Vec::with_capacity(RESAMPLES);
    let mut pick: Vec<&Window> = Vec::with_capacity(windows.len());
    for _ in 0..RESAMPLES {
        pick.clear();
        for _ in 0..windows.len() {
            pick.push(&windows[rng.random_range(0..windows.len())]);
        }
        if let Some(v) = stat(&pick).filter(|v| v.is_finite()) {
            out.push(v);
        }
    }
    out
}

/// The `q` quantile of values (sorted in place).
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let i = ((values.len() - 1) as f64 * q).round() as usize;
    values[i]
}

/// The 95% percentile-bootstrap interval of `m` within a run's windows (None for max, or too
/// few windows to resample: fewer than 3).
pub fn interval(m: Metric, windows: &[Window]) -> Option<(f64, f64)> {
    if windows.len() < 3 || m == Metric::Max {
        return None;
    }
    let mut values = resample(windows, m as u64, |w| metric(m, w));
    (values.len() >= RESAMPLES / 2).then(|| (quantile(&mut values, 0.025), quantile(&mut values, 0.975)))
}

/// How a statistic's uncertainty was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Across repeats (3 or more): Student's t, or Welch's test, on logarithms.
    Repeats,
    /// Within runs: a block bootstrap over one-second windows (fewer than 3 repeats).
    WithinRun,
}

impl Basis {
    pub fn text(self) -> &'static str {
        match self {
            Basis::Repeats => "across repeats (Welch's t on logarithms)",
            Basis::WithinRun => "within runs (block bootstrap over 1 s windows)",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` seconds at `rate` a second, latencies drawn around `median_ms` (log-normal, sd 0.3).
    pub(crate) fn run(n: u64, rate: u64, median_ms: f64, seed: u64) -> Vec<Window> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut w = Windows::default();
        for s in 0..n {
            for i in 0..rate {
                // Box-Muller: a standard normal from two uniforms.
                let (u1, u2): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let lat = median_ms * 1000.0 * (0.3 * z).exp();
                w.add(s * 1_000_000 + i * 1_000_000 / rate, lat as u64, true);
            }
        }
        w.windows()
    }

    #[test]
    fn windows_give_back_the_runs_numbers() {
        let mut w = Windows::default();
        for i in 0..1000u64 {
            // 1 ms .. 1000 ms, one of each, over 4 s; every tenth fails.
            w.add(i * 4000, (i + 1) * 1000, i % 10 != 0);
        }
        let ws = w.windows();
        assert_eq!(ws.len(), 4);
        let all: Vec<&Window> = ws.iter().collect();
        let close = |a: f64, b: f64| (a - b).abs() / b < 0.011;
        assert!(close(metric(Metric::P50, &all).unwrap(), 500.0), "{:?}", metric(Metric::P50, &all));
        assert!(close(metric(Metric::P99, &all).unwrap(), 990.0));
        assert!(close(metric(Metric::Mean, &all).unwrap(), 500.5));
        assert_eq!(metric(Metric::Success, &all), Some(0.9));
        assert_eq!(metric(Metric::Rps, &all), Some(250.0));
        assert_eq!(metric(Metric::Max, &all), None);
    }

    #[test]
    fn a_steady_run_has_a_narrow_interval_around_its_value_that_never_leaves_the_range() {
        let ws = run(30, 200, 10.0, 1);
        let (lo, hi) = interval(Metric::P50, &ws).unwrap();
        assert!(lo > 9.5 && hi < 10.5 && lo < hi, "{lo} {hi}");
        let (lo, hi) = interval(Metric::Success, &ws).unwrap();
        assert_eq!((lo, hi), (1.0, 1.0));
        assert!(interval(Metric::P99, &ws[..2]).is_none(), "two windows cannot be resampled");
        // Deterministic: the same windows give the same interval.
        assert_eq!(interval(Metric::P99, &ws), interval(Metric::P99, &ws));
    }
}
