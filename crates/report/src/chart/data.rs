//! What the charts show, computed from records in one pass with bounded memory: per run, latency
//! points downsampled into min/max buckets (outliers are always kept), per-second percentiles,
//! statuses and throughput, and the run's HDR percentile curve.

use std::collections::BTreeMap;

use results::{Consumer, Entry, Metrics, Record, RunEnd, RunHeader};
use serde::Serialize;

/// Latency buckets kept per run and class (ok, error); each keeps its min and max point.
pub const BUCKETS: usize = 1024;
/// Finest bucket width: 1 ms.
const MIN_WIDTH_US: u64 = 1_000;

/// A point: seconds since the run's start, latency in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point(pub f64, pub f64);

/// Min/max buckets over time that double their width when they run out: memory is bounded,
/// and the extreme points of every bucket (so every outlier) survive.
#[derive(Clone, Debug)]
pub struct MinMax {
    width_us: u64,
    buckets: Vec<Option<(Point, Point)>>,
    cap: usize,
}

impl MinMax {
    pub fn new(cap: usize) -> MinMax {
        MinMax { width_us: MIN_WIDTH_US, buckets: Vec::new(), cap: cap.max(2) }
    }

    pub fn add(&mut self, t_us: u64, value: f64) {
        let mut i = (t_us / self.width_us) as usize;
        while i >= self.cap {
            self.halve();
            i = (t_us / self.width_us) as usize;
        }
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, None);
        }
        let p = Point(t_us as f64 / 1e6, value);
        let slot = &mut self.buckets[i];
        *slot = Some(match *slot {
            None => (p, p),
            Some((lo, hi)) => (if value < lo.1 { p } else { lo }, if value > hi.1 { p } else { hi }),
        });
    }

    /// Merges neighbouring buckets, doubling the width.
    fn halve(&mut self) {
        self.width_us *= 2;
        let merged = self
            .buckets
            .chunks(2)
            .map(|pair| {
                pair.iter().flatten().copied().reduce(|(alo, ahi), (blo, bhi)| {
                    (if blo.1 < alo.1 { blo } else { alo }, if bhi.1 > ahi.1 { bhi } else { ahi })
                })
            })
            .collect();
        self.buckets = merged;
    }

    /// The kept points in time order.
    pub fn points(&self) -> Vec<Point> {
        let mut out = Vec::new();
        for (lo, hi) in self.buckets.iter().flatten() {
            let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
            out.push(*a);
            if a != b {
                out.push(*b);
            }
        }
        out
    }
}

/// One second of a run. Requests and their latency percentiles count by send time (what was
/// sent in that second, and how long it took); responses (successes, statuses) by completion
/// time (what came back in that second: a 1 s origin shows none in second 0).
#[derive(Clone, Debug, Serialize)]
pub struct Second {
    /// Seconds since the run's start.
    pub t: u64,
    /// Sent in this second.
    pub requests: u64,
    /// Successful responses completed in this second.
    pub successes: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Responses (and failures) completed in this second, by status.
    pub status: BTreeMap<u16, u64>,
}

/// Everything drawn for one run.
#[derive(Clone, Debug, Serialize)]
pub struct RunSeries {
    pub name: String,
    pub requests: u64,
    pub ok: Vec<Point>,
    pub errors: Vec<Point>,
    pub seconds: Vec<Second>,
    /// (percentile 0..100, latency ms), for the HDR chart.
    pub hdr: Vec<(f64, f64)>,
}

/// The data of a whole plot.
#[derive(Clone, Debug, Serialize)]
pub struct ChartData {
    pub title: String,
    pub runs: Vec<RunSeries>,
}

/// Builds [`ChartData`] from runs fed record by record.
pub struct ChartBuilder {
    title: String,
    runs: Vec<RunBuilder>,
    /// Keep per-second statistics for only this many latest seconds (a live view of a long run).
    window_s: Option<u64>,
    /// What unnamed runs are called: the source's name, then `name#2`, `name#3` ...
    source: String,
    runs_of_source: usize,
}

struct RunBuilder {
    name: String,
    first_us: Option<u64>,
    ok: MinMax,
    errors: MinMax,
    metrics: Metrics,
    /// By completion second: successes and statuses.
    completed: BTreeMap<u64, (u64, BTreeMap<u16, u64>)>,
}

impl ChartBuilder {
    pub fn new(title: impl Into<String>) -> ChartBuilder {
        ChartBuilder { title: title.into(), runs: Vec::new(), window_s: None, source: String::new(), runs_of_source: 0 }
    }

    /// A builder that keeps per-second statistics (each holds a histogram) for the latest
    /// `seconds` only, so its memory stays bounded however long the run; the points stay
    /// downsampled over the whole run.
    pub fn windowed(title: impl Into<String>, seconds: u64) -> ChartBuilder {
        ChartBuilder { window_s: Some(seconds), ..ChartBuilder::new(title) }
    }

    /// Names the source of the runs that follow (a file name, a step), for runs without a name.
    pub fn source(&mut self, name: impl Into<String>) {
        self.source = name.into();
        self.runs_of_source = 0;
    }

    /// Starts a run; `fallback_name` is used when the run has no name.
    pub fn start_run(&mut self, header: &RunHeader, fallback_name: &str) {
        let name = if header.name.is_empty() { fallback_name.to_owned() } else { header.name.clone() };
        self.runs.push(RunBuilder {
            name,
            first_us: None,
            ok: MinMax::new(BUCKETS),
            errors: MinMax::new(BUCKETS),
            metrics: Metrics::with_seconds(),
            completed: BTreeMap::new(),
        });
    }

    /// Adds a record of the current run.
    pub fn add(&mut self, r: &Record, error: Option<&str>) {
        let Some(run) = self.runs.last_mut() else { return };
        // Times count from the run's first scheduled send (a run imported from vegeta has a
        // slack before it).
        let first = *run.first_us.get_or_insert(r.scheduled_us);
        let t = r.scheduled_us.saturating_sub(first);
        let ms = r.latency_us as f64 / 1000.0;
        if r.is_success() {
            run.ok.add(t, ms);
        } else {
            run.errors.add(t, ms);
        }
        // Seconds count from the first send too (origin 0), not from wall-clock seconds.
        run.metrics.add(0, &Record { scheduled_us: t, ..*r }, error);
        let done = run.completed.entry((t + r.latency_us) / 1_000_000).or_default();
        done.0 += u64::from(r.is_success());
        *done.1.entry(r.status).or_default() += 1;
        if let Some(window) = self.window_s {
            let oldest = (t / 1_000_000).saturating_sub(window);
            if let Some(seconds) = run.metrics.seconds.as_mut() {
                while seconds.first_key_value().is_some_and(|(k, _)| *k < oldest) {
                    seconds.pop_first();
                }
            }
            while run.completed.first_key_value().is_some_and(|(k, _)| *k < oldest) {
                run.completed.pop_first();
            }
        }
    }

    pub fn finish(self) -> ChartData {
        self.data()
    }

    /// The data so far (the builder goes on taking records).
    pub fn data(&self) -> ChartData {
        let runs = self
            .runs
            .iter()
            .filter(|r| r.metrics.requests > 0)
            .map(|r| {
                let q = |h: &hdrhistogram::Histogram<u64>, p: f64| h.value_at_quantile(p) as f64 / 1000.0;
                let sent = r.metrics.seconds.clone().unwrap_or_default();
                let mut ts: Vec<u64> = sent.keys().chain(r.completed.keys()).copied().collect();
                ts.sort_unstable();
                ts.dedup();
                let seconds = ts
                    .into_iter()
                    .map(|t| {
                        let s = sent.get(&t);
                        let done = r.completed.get(&t);
                        Second {
                            t,
                            requests: s.map_or(0, |s| s.requests),
                            successes: done.map_or(0, |d| d.0),
                            p50_ms: s.map_or(f64::NAN, |s| q(&s.latency, 0.5)),
                            p99_ms: s.map_or(f64::NAN, |s| q(&s.latency, 0.99)),
                            status: done.map(|d| d.1.clone()).unwrap_or_default(),
                        }
                    })
                    .collect();
                RunSeries {
                    name: r.name.clone(),
                    requests: r.metrics.requests,
                    ok: r.ok.points(),
                    errors: r.errors.points(),
                    seconds,
                    hdr: hdr_curve(&r.metrics.latency),
                }
            })
            .collect();
        ChartData { title: self.title.clone(), runs }
    }
}

impl Consumer for ChartBuilder {
    fn start(&mut self, header: &RunHeader) -> std::io::Result<()> {
        self.runs_of_source += 1;
        let fallback = if self.runs_of_source == 1 {
            self.source.clone()
        } else {
            format!("{}#{}", self.source, self.runs_of_source)
        };
        self.start_run(header, &fallback);
        Ok(())
    }
    fn record(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        self.add(e.record, e.error);
        Ok(())
    }
    fn end(&mut self, _: &RunEnd) -> std::io::Result<()> {
        Ok(())
    }
}

/// Latency at percentiles spaced evenly on the log 1/(1-p) axis, as far as the count resolves.
pub(crate) fn hdr_curve(h: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    if h.is_empty() {
        return out;
    }
    let n = h.len() as f64;
    for k in 0..=120 {
        let tail = 10f64.powf(-(k as f64) / 20.0);
        if 1.0 / tail > n * 2.0 {
            break;
        }
        let p = 1.0 - tail;
        out.push((p * 100.0, h.value_at_quantile(p) as f64 / 1000.0));
    }
    out.push((100.0, h.max() as f64 / 1000.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsampling_keeps_outliers_and_bounds_points() {
        let mut mm = MinMax::new(256);
        let n = 1_000_000u64;
        for i in 0..n {
            // 1 ms to 2 ms of noise, one 5 s spike and one 0.01 ms dip.
            let v = match i {
                777_777 => 5000.0,
                123_456 => 0.01,
                _ => 1.0 + ((i * 7919) % 1000) as f64 / 1000.0,
            };
            mm.add(i * 100, v);
        }
        let pts = mm.points();
        assert!(pts.len() <= 2 * 256, "{}", pts.len());
        assert!(pts.len() > 256, "{}", pts.len());
        assert!(pts.iter().any(|p| p.1 == 5000.0 && (p.0 - 77.7777).abs() < 1e-9));
        assert!(pts.iter().any(|p| p.1 == 0.01));
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
    }

    #[test]
    fn short_runs_keep_every_point() {
        let mut mm = MinMax::new(1024);
        for i in 0..100u64 {
            mm.add(i * 10_000, i as f64);
        }
        assert_eq!(mm.points().len(), 100);
    }

    #[test]
    fn chart_data_per_run_and_second() {
        let mut b = ChartBuilder::new("t");
        let header = RunHeader { start_unix_ns: 1_000_000_000_000, ..Default::default() };
        b.start_run(&header, "a.llr");
        for i in 0..300u64 {
            let status = if i % 100 == 0 { 500 } else { 200 };
            let r = Record {
                seq: i,
                scheduled_us: 5_000_000 + i * 10_000,
                latency_us: 1000 + i,
                status,
                ..Default::default()
            };
            b.add(&r, if status == 500 { Some("500 Internal Server Error") } else { None });
        }
        let d = b.finish();
        assert_eq!(d.runs.len(), 1);
        let run = &d.runs[0];
        assert_eq!(run.name, "a.llr");
        assert_eq!(run.requests, 300);
        assert_eq!(run.errors.len(), 3);
        assert_eq!(run.ok.len(), 297);
        assert_eq!(run.ok[0].0, 0.01, "time counts from the first send");
        assert_eq!(run.seconds.len(), 3);
        assert_eq!(run.seconds[0].t, 0);
        assert_eq!(run.seconds[0].status[&500], 1);
        assert_eq!(run.seconds[1].successes, 99);
        assert_eq!(run.hdr.first().unwrap().0, 0.0);
        assert_eq!(run.hdr.last().unwrap().0, 100.0);
    }

    #[test]
    fn responses_count_in_the_second_they_complete() {
        // A 1 s origin: requests sent in second 0 are answered in second 1.
        let mut b = ChartBuilder::new("t");
        b.start_run(&RunHeader::default(), "slow");
        for i in 0..10u64 {
            b.add(
                &Record { seq: i, scheduled_us: i * 100_000, latency_us: 1_000_000, status: 200, ..Default::default() },
                None,
            );
        }
        let d = b.finish();
        let s = &d.runs[0].seconds;
        assert_eq!((s[0].t, s[0].requests, s[0].successes), (0, 10, 0));
        assert!(s[0].status.is_empty(), "no response in second 0: {:?}", s[0].status);
        assert_eq!((s[1].t, s[1].requests, s[1].successes, s[1].status.get(&200)), (1, 0, 10, Some(&10)));
    }
}
