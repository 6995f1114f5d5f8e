//! Uncertainty within a run: a step's requests cut into windows of its schedule (one second,
//! shorter for a run under 10 s: at least 10 windows, none under 100 ms), and a block bootstrap
//! over those windows (`stats::bootstrap`). A run of thousands of requests over many seconds says
//! how much its own numbers move; resampling whole seconds (not single requests) keeps what
//! happens together together (a GC pause, a queue that builds), so the interval is not
//! falsely narrow.
//!
//! Each window keeps its counts and a sparse histogram of latencies in buckets 1% wide, so a
//! resample costs a few additions per window whatever the rate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Requests are kept by slices of the schedule this long.
const SLICE_US: u64 = 100_000;
/// Latency buckets grow by this factor: 1% of resolution.
const GROWTH: f64 = 1.01;

/// A stretch of a run's schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    /// Its length, seconds.
    pub secs: f64,
    pub requests: u64,
    pub successes: u64,
    /// (bucket, count), buckets ascending.
    pub latency: Vec<(u32, u64)>,
}

/// A run's requests by tenth of a second of its schedule, joined into windows on the way out.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Windows {
    seconds: BTreeMap<u64, BTreeMap<u32, u64>>,
    counts: BTreeMap<u64, (u64, u64)>,
}

pub(crate) fn bucket(latency_us: u64) -> u32 {
    ((latency_us.max(1) as f64).ln() / GROWTH.ln()).round() as u32
}

pub(crate) fn value_us(bucket: u32) -> f64 {
    GROWTH.powi(bucket as i32)
}

impl Windows {
    /// A request scheduled at `scheduled_us` into the run.
    pub(crate) fn add(&mut self, scheduled_us: u64, latency_us: u64, success: bool) {
        let s = scheduled_us / SLICE_US;
        *self.seconds.entry(s).or_default().entry(bucket(latency_us)).or_default() += 1;
        let c = self.counts.entry(s).or_default();
        c.0 += 1;
        c.1 += u64::from(success);
    }

    /// The windows, in order: slices joined into seconds, or into a tenth of the run when it is
    /// shorter than 10 s (so a 2 s run still has 10 windows to resample).
    pub(crate) fn windows(&self) -> Vec<Window> {
        let (Some(first), Some(last)) = (self.seconds.keys().next(), self.seconds.keys().next_back()) else {
            return Vec::new();
        };
        let span = last - first + 1;
        let per = (span / 10).clamp(1, 1_000_000 / SLICE_US);
        let mut out: BTreeMap<u64, Window> = BTreeMap::new();
        for (s, h) in &self.seconds {
            let w = out.entry((s - first) / per).or_default();
            let (requests, successes) = self.counts[s];
            w.requests += requests;
            w.successes += successes;
            let mut merged: BTreeMap<u32, u64> = w.latency.iter().copied().collect();
            for (b, n) in h {
                *merged.entry(*b).or_default() += n;
            }
            w.latency = merged.into_iter().collect();
        }
        let secs = (per * SLICE_US) as f64 / 1e6;
        out.into_values().map(|w| Window { secs, ..w }).collect()
    }
}

/// How a statistic's uncertainty was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    use rand::{Rng, SeedableRng};

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
}
