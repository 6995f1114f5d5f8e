//! The progress bar of an attack on a terminal: elapsed time, rate and p99 over the last second,
//! requests in flight, errors, and a bar with the time left. A consumer of the attack's records
//! (the attack calls `flush` about once a second) reading the attack's live gauges; the libraries
//! draw nothing.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use attack::Gauges;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use results::{Consumer, Entry, RunHeader};

/// How much of the attack is done, for the bar.
#[derive(Clone, Copy, Debug)]
pub enum Extent {
    /// Bounded by time.
    Time(Duration),
    /// Bounded by a request count.
    Requests(u64),
}

pub struct Progress {
    bar: ProgressBar,
    extent: Extent,
    gauges: Arc<Gauges>,
    started: Instant,
    last_draw: Instant,
    /// Requests and latencies since the last draw.
    count: u64,
    latency: Histogram<u64>,
    done: u64,
    errors: u64,
    /// Sends late (past the run's threshold) since the last draw.
    late: u64,
    late_us: u64,
    /// The cap on requests in flight (open model), to tell a slow target from a slow generator.
    cap: Option<u64>,
}

impl Progress {
    pub fn new(extent: Extent, gauges: Arc<Gauges>, cap: Option<u64>) -> Progress {
        let len = match extent {
            Extent::Time(d) => d.as_millis() as u64,
            Extent::Requests(n) => n,
        };
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        // The message leads (elapsed, rate ...) so a narrow terminal cuts the bar, not the numbers.
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:20}] ETA {eta}").expect("static template").progress_chars("=> "),
        );
        Progress {
            bar,
            extent,
            gauges,
            started: Instant::now(),
            last_draw: Instant::now(),
            count: 0,
            latency: Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("static bounds"),
            done: 0,
            errors: 0,
            late: 0,
            late_us: results::LATE_SEND_US,
            cap,
        }
    }
}

impl Consumer for Progress {
    fn start(&mut self, header: &RunHeader) -> std::io::Result<()> {
        self.late_us = header.late_send_us();
        self.started = Instant::now();
        self.last_draw = self.started;
        Ok(())
    }

    fn record(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        self.count += 1;
        self.done += 1;
        self.errors += u64::from(e.error.is_some());
        self.late += u64::from(e.record.lag_us >= self.late_us);
        self.latency.saturating_record(e.record.latency_us.max(1));
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let secs = self.last_draw.elapsed().as_secs_f64().max(1e-3);
        let p99 = Duration::from_micros(self.latency.value_at_quantile(0.99));
        let elapsed = self.started.elapsed();
        let in_flight = self.gauges.in_flight.load(Ordering::Relaxed);
        // Sends falling behind: say whose limit it is (the rule `report` and the lab use, read
        // from the latest moments).
        let sent = self.count as f64 / secs;
        let note = match results::Limit::while_running(self.late, self.count, in_flight, self.cap, sent, 0.0) {
            results::Limit::Target { cap: Some(cap) } => format!("  all {cap} workers busy: the target is the limit"),
            results::Limit::Generator { .. } => {
                "  the generator is the limit: sends are late with workers free".to_owned()
            }
            _ => String::new(),
        };
        self.bar.set_message(format!(
            "{:.1}s  {:>9.1} req/s  in flight {:>5}  p99 {:>10}  errors {:<8}{note}",
            elapsed.as_secs_f64(),
            self.count as f64 / secs,
            in_flight,
            format!("{p99:.1?}"),
            self.errors
        ));
        self.bar.set_position(match self.extent {
            Extent::Time(_) => elapsed.as_millis() as u64,
            Extent::Requests(_) => self.done,
        });
        self.count = 0;
        self.late = 0;
        self.latency.reset();
        self.last_draw = Instant::now();
        Ok(())
    }

    fn end(&mut self, _: &results::RunEnd) -> std::io::Result<()> {
        self.bar.abandon();
        eprintln!();
        Ok(())
    }
}
