//! What the runs so far say, kept as their records arrive: small fixed-size totals and
//! histograms per run, and the chart series downsampled (per-second statistics for the latest
//! five minutes only), so memory stays bounded however long a run lasts.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use hdrhistogram::Histogram;
use report::chart::ChartBuilder;
use results::Gauges;
use results::{Consumer, Entry, RunEnd, RunHeader};
use serde::Serialize;
use serde_json::{json, Value};

/// Upper bounds (seconds) of the Prometheus histograms' buckets: three or four a decade from
/// 0.5 ms to 60 s, fine enough to interpolate a p99.
pub(crate) const BUCKETS: [f64; 28] = [
    0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75,
    1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 20.0, 30.0, 60.0,
];

/// Seconds of per-second statistics kept for the charts: each holds a histogram of about 26 KB,
/// so at most about 8 MB.
const WINDOW_S: u64 = 300;
/// Distinct error texts kept per run; the rest are counted as one.
const MAX_ERROR_TEXTS: usize = 50;

/// Exact counts per bucket, with the exact sum and count.
#[derive(Clone, Debug, Default)]
pub(crate) struct Buckets {
    pub counts: [u64; BUCKETS.len()],
    pub sum_us: u128,
    pub count: u64,
}

impl Buckets {
    fn add(&mut self, us: u64) {
        let s = us as f64 / 1e6;
        let i = BUCKETS.partition_point(|b| *b < s);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
        self.sum_us += u128::from(us);
        self.count += 1;
    }
}

/// One run (an attack, a lab step) as seen so far.
pub(crate) struct RunState {
    pub name: String,
    /// `I/N` when the run is one shard of a sharded attack.
    pub shard: Option<String>,
    pub targets: Vec<String>,
    /// Requests by (target index, status); status 0 when no response came.
    pub by_target_status: BTreeMap<(u32, u16), u64>,
    pub latency: Buckets,
    pub lag: Buckets,
    latency_hdr: Histogram<u64>,
    lag_hdr: Histogram<u64>,
    pub requests: u64,
    pub successes: u64,
    pub connections: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    errors: BTreeMap<String, u64>,
    pub asked_rate: Option<f64>,
    pub gauges: Option<Arc<Gauges>>,
    first_record: Option<Instant>,
    last_record: Option<Instant>,
    pub end: Option<RunEnd>,
}

impl RunState {
    pub(crate) fn in_flight(&self) -> u64 {
        match (&self.gauges, &self.end) {
            (Some(g), None) => g.in_flight.load(Ordering::Relaxed),
            _ => 0,
        }
    }

    pub(crate) fn not_sent(&self) -> u64 {
        match (&self.end, &self.gauges) {
            (Some(e), _) => e.not_sent,
            (None, Some(g)) => g.not_sent.load(Ordering::Relaxed),
            _ => 0,
        }
    }

    fn view(&self) -> Value {
        let q = |h: &Histogram<u64>, p: f64| if h.is_empty() { 0.0 } else { h.value_at_quantile(p) as f64 / 1000.0 };
        let mut status: BTreeMap<u16, u64> = BTreeMap::new();
        for ((_, s), n) in &self.by_target_status {
            *status.entry(*s).or_default() += n;
        }
        // Requests per second from the first record: to now while running, to the last once done.
        let until = if self.end.is_some() { self.last_record } else { Some(Instant::now()) };
        let secs = match (self.first_record, until) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        json!({
            "name": self.name,
            "done": self.end.is_some(),
            "requests": self.requests,
            "successes": self.successes,
            "success": if self.requests == 0 { 0.0 } else { self.successes as f64 / self.requests as f64 },
            "rate": if secs > 0.0 { self.requests as f64 / secs } else { 0.0 },
            "asked_rate": self.asked_rate,
            "in_flight": self.in_flight(),
            "not_sent": self.not_sent(),
            "connections": self.connections,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "latency_ms": { "p50": q(&self.latency_hdr, 0.5), "p90": q(&self.latency_hdr, 0.9), "p99": q(&self.latency_hdr, 0.99), "max": if self.latency_hdr.is_empty() { 0.0 } else { self.latency_hdr.max() as f64 / 1000.0 } },
            "lag_ms": { "p50": q(&self.lag_hdr, 0.5), "p99": q(&self.lag_hdr, 0.99) },
            "status": status,
            "errors": self.errors,
        })
    }
}

/// A lab step as the dashboard lists it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct StepView {
    pub name: String,
    /// waiting, running or done.
    pub state: String,
    pub verdict: Option<String>,
}

pub(crate) struct State {
    pub runs: Vec<RunState>,
    charts: ChartBuilder,
    steps: Vec<StepView>,
}

/// The live numbers of an attack or a lab, shared by its consumers and the server.
pub struct Live {
    title: String,
    started: Instant,
    state: Mutex<State>,
    /// Files offered for download (`--collect`).
    pub shelf: crate::shelf::Shelf,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").field("title", &self.title).finish_non_exhaustive()
    }
}

impl Live {
    pub fn new(title: impl Into<String>) -> Arc<Live> {
        let title = title.into();
        Arc::new(Live {
            state: Mutex::new(State {
                runs: Vec::new(),
                charts: ChartBuilder::windowed(title.clone(), WINDOW_S),
                steps: Vec::new(),
            }),
            title,
            shelf: crate::shelf::Shelf::default(),
            started: Instant::now(),
        })
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A consumer for the next run; `gauges` are its attack's (requests in flight, not sent).
    pub fn consumer(self: &Arc<Self>, gauges: Option<Arc<Gauges>>) -> LiveConsumer {
        LiveConsumer { live: Arc::clone(self), gauges }
    }

    /// A lab's steps, in the order they will run.
    pub fn set_steps(&self, names: impl IntoIterator<Item = String>) {
        self.lock().steps =
            names.into_iter().map(|name| StepView { name, state: "waiting".into(), verdict: None }).collect();
    }

    /// A step (or a capacity probe, added at its end) has finished, with what it found.
    pub fn step_done(&self, name: &str, verdict: impl Into<String>) {
        let mut st = self.lock();
        let view = StepView { name: name.to_owned(), state: "done".into(), verdict: Some(verdict.into()) };
        match st.steps.iter_mut().find(|s| s.name == name) {
            Some(s) => *s = view,
            None => st.steps.push(view),
        }
    }

    /// Everything the dashboard shows, as JSON.
    pub fn snapshot(&self) -> Value {
        let st = self.lock();
        json!({
            "title": self.title,
            "elapsed_s": self.started.elapsed().as_secs_f64(),
            "runs": st.runs.iter().map(RunState::view).collect::<Vec<_>>(),
            "steps": st.steps,
            "charts": st.charts.data(),
        })
    }
}

/// Feeds one run's records to a [`Live`].
pub struct LiveConsumer {
    live: Arc<Live>,
    gauges: Option<Arc<Gauges>>,
}

impl Consumer for LiveConsumer {
    fn start(&mut self, header: &RunHeader) -> std::io::Result<()> {
        let mut st = self.live.lock();
        let name = if header.name.is_empty() { format!("run {}", st.runs.len() + 1) } else { header.name.clone() };
        let plan = header.plan();
        let asked_rate = plan.rate;
        st.charts.start_run(header, &name);
        if let Some(s) = st.steps.iter_mut().find(|s| s.name == name) {
            s.state = "running".into();
        }
        st.runs.push(RunState {
            name,
            shard: plan.shard,
            targets: header.targets.clone(),
            by_target_status: BTreeMap::new(),
            latency: Buckets::default(),
            lag: Buckets::default(),
            latency_hdr: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds"),
            lag_hdr: Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("static bounds"),
            requests: 0,
            successes: 0,
            connections: 0,
            bytes_in: 0,
            bytes_out: 0,
            errors: BTreeMap::new(),
            asked_rate,
            gauges: self.gauges.clone(),
            first_record: None,
            last_record: None,
            end: None,
        });
        Ok(())
    }

    fn record(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        let mut st = self.live.lock();
        let State { runs, charts, .. } = &mut *st;
        let Some(run) = runs.last_mut() else { return Ok(()) };
        let r = e.record;
        let now = Instant::now();
        run.first_record.get_or_insert(now);
        run.last_record = Some(now);
        run.requests += 1;
        run.successes += u64::from(r.is_success());
        run.connections += u64::from(r.new_conn);
        run.bytes_in += r.bytes_in;
        run.bytes_out += r.bytes_out;
        *run.by_target_status.entry((r.target, r.status)).or_default() += 1;
        run.latency.add(r.latency_us);
        run.lag.add(r.lag_us);
        let _ = run.latency_hdr.record(r.latency_us.max(1));
        let _ = run.lag_hdr.record(r.lag_us.max(1));
        if let Some(text) = e.error {
            let key = if run.errors.len() < MAX_ERROR_TEXTS || run.errors.contains_key(text) {
                text.to_owned()
            } else {
                "(other errors)".to_owned()
            };
            *run.errors.entry(key).or_default() += 1;
        }
        charts.add(r, e.error);
        Ok(())
    }

    fn end(&mut self, end: &RunEnd) -> std::io::Result<()> {
        let mut st = self.live.lock();
        if let Some(run) = st.runs.last_mut() {
            if run.asked_rate.is_none() {
                run.asked_rate = end.asked_rate;
            }
            run.end = Some(end.clone());
        }
        Ok(())
    }
}
