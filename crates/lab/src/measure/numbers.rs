//! The numbers of one step, taken from its records as they happen: everything vegeta's report
//! has, latency of successful requests beside all requests (so failing fast never looks like
//! answering fast), and whether the generator kept its schedule.

use hdrhistogram::Histogram;
use results::{Consumer, Entry, Metrics, RunHeader};
use serde::{Deserialize, Serialize};

/// The generator's threads waited on a run queue for a CPU more than this share of their time:
/// the machine, not the target, set the pace of what it read. Measured on a 2-core machine:
/// an idle machine gives 0-2% at 2,000/s; a busy loop on each core gives 30-60%.
pub(crate) const STARVED_WAIT_SHARE: f64 = 0.10;

/// Takes a step's records after its warm-up.
pub(crate) struct StepConsumer {
    warmup_us: u64,
    pub counted: Metrics,
    /// Latency of successful requests only.
    pub ok_latency: Histogram<u64>,
    /// Records sent during the warm-up (kept in the file, not counted).
    pub warmup_requests: u64,
    /// Connections opened during the warm-up (a step's connections are mostly opened then).
    pub warmup_connections: u64,
    /// The counted requests by second of the schedule, for intervals within the run.
    pub windows: crate::measure::windows::Windows,
    /// The target's time alone (latency less lag) of the counted requests, by tenth of a second
    /// of the schedule, in 1% buckets: what a stalled generator's step is judged by is what the
    /// target did before the stall (a sparse histogram a slice: bounded however long the step).
    service_by_slice: std::collections::BTreeMap<u64, std::collections::BTreeMap<u32, u64>>,
}

/// The slices `StepConsumer::service_by_slice` keeps: a tenth of a second of the schedule.
const SLICE_US: u64 = 100_000;

impl StepConsumer {
    pub(crate) fn new(warmup: std::time::Duration) -> StepConsumer {
        StepConsumer {
            warmup_us: warmup.as_micros() as u64,
            counted: Metrics::new(),
            ok_latency: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds"),
            warmup_requests: 0,
            warmup_connections: 0,
            windows: Default::default(),
            service_by_slice: Default::default(),
        }
    }

    /// The step's numbers, its asked rate as the run recorded it (an open model's, a replay's;
    /// none for a closed model).
    pub(crate) fn numbers(&self) -> Numbers {
        let mut n = Numbers::of(&self.counted, &self.ok_latency);
        n.connections += self.warmup_connections;
        n.service_before_stall = self.service_before_stall();
        n
    }

    /// The target's time alone on the requests sent before the generator's first stall (of
    /// [`results::GENERATOR_LAG_P99_US`] or more), less those in flight when it began (their
    /// answers were read late): after a stall, its catch-up burst queues at the target, and that
    /// queue is the generator's doing. None without such a stall, or with too little before it.
    fn service_before_stall(&self) -> Option<Latencies> {
        let stall = self
            .counted
            .stalls
            .iter()
            .filter(|s| s.length_us >= results::GENERATOR_LAG_P99_US)
            .min_by_key(|s| s.at_us)?;
        // Whole slices that ended before it began.
        let mut before: std::collections::BTreeMap<u32, u64> = Default::default();
        for (_, buckets) in self.service_by_slice.range(..stall.at_us / SLICE_US) {
            for (b, n) in buckets {
                *before.entry(*b).or_default() += n;
            }
        }
        // The slowest, as many as were ever in flight, may have been answered into the stall.
        let mut drop = self.counted.peak_in_flight.max(1);
        while drop > 0 {
            let Some(mut slowest) = before.last_entry() else { break };
            let take = drop.min(*slowest.get());
            *slowest.get_mut() -= take;
            drop -= take;
            if *slowest.get() == 0 {
                slowest.remove();
            }
        }
        let total: u64 = before.values().sum();
        if total == 0 {
            return None;
        }
        let ms = |b: u32| crate::measure::windows::value_us(b) / 1000.0;
        let at = |q: f64| {
            let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
            let mut seen = 0;
            before
                .iter()
                .find(|(_, n)| {
                    seen += **n;
                    seen >= rank
                })
                .map_or(f64::NAN, |(b, _)| ms(*b))
        };
        Some(Latencies {
            mean: before.iter().map(|(b, n)| ms(*b) * *n as f64).sum::<f64>() / total as f64,
            p50: at(0.50),
            p90: at(0.90),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max: at(1.0),
        })
    }
}

impl Consumer for StepConsumer {
    fn start(&mut self, header: &RunHeader) -> std::io::Result<()> {
        self.counted.start(header)
    }

    fn record(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        if e.record.scheduled_us < self.warmup_us {
            self.counted.note_uncounted(e.record);
            self.warmup_requests += 1;
            self.warmup_connections += u64::from(e.record.new_conn);
            return Ok(());
        }
        let ok = e.record.is_success();
        if ok {
            self.ok_latency.saturating_record(e.record.latency_us.max(1));
        }
        self.windows.add(e.record.scheduled_us - self.warmup_us, e.record.latency_us, ok);
        let service = crate::measure::windows::bucket(e.record.latency_us.saturating_sub(e.record.lag_us));
        *self.service_by_slice.entry(e.record.scheduled_us / SLICE_US).or_default().entry(service).or_default() += 1;
        self.counted.record(e)
    }

    fn end(&mut self, end: &results::RunEnd) -> std::io::Result<()> {
        // Only the stalls that delayed counted sends: one in the warm-up is over by then.
        let mut end = end.clone();
        end.stalls.retain(|s| s.end_us() > self.warmup_us);
        // Likewise a closed model's silence: one over before the warm-up ended is not counted.
        if self.counted.quiet.is_some_and(|q| q.at_us + q.length_us <= self.warmup_us) {
            self.counted.quiet = None;
        }
        self.counted.end(&end)
    }
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Latencies {
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub mean: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub p50: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub p90: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub p95: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub p99: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub p999: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub max: f64,
}

impl Latencies {
    /// The latencies of the fastest `n - drop` of a histogram's `n` values: each quantile read
    /// lower, at q·(n - drop)/n. None when nothing is left.
    fn of_fastest(h: &Histogram<u64>, drop: u64) -> Option<Latencies> {
        let n = h.len();
        if drop >= n {
            return None;
        }
        let keep = (n - drop) as f64 / n as f64;
        let q = |p: f64| h.value_at_quantile(p * keep) as f64 / 1000.0;
        Some(Latencies {
            mean: f64::NAN,
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: q(1.0),
        })
    }

    /// A lower bound of the target's time on a histogram of service times, after stalls of the
    /// generator (the longest `late_ms`) that may have left `drop` answers unread: each
    /// quantile the higher of two bounds, the fastest `n - drop` (none read late), and every
    /// value less `late_ms` (an answer waits for a stalled reader at most the stall). The
    /// first alone says little of a target with hundreds in flight: a 25 ms stall in front of a
    /// target past its knee dropped 247 of 604 answers, and its p99 of 1.2 s with them.
    fn at_least(h: &Histogram<u64>, drop: u64, late_ms: f64) -> Option<Latencies> {
        let fastest = Latencies::of_fastest(h, drop);
        if drop == 0 || h.is_empty() {
            return fastest;
        }
        let all = Latencies::of(h);
        let less = |v: f64| (v - late_ms).max(0.0);
        let f = fastest.unwrap_or(Latencies { mean: f64::NAN, ..Default::default() });
        Some(Latencies {
            mean: f64::NAN,
            p50: f.p50.max(less(all.p50)),
            p90: f.p90.max(less(all.p90)),
            p95: f.p95.max(less(all.p95)),
            p99: f.p99.max(less(all.p99)),
            p999: f.p999.max(less(all.p999)),
            max: f.max.max(less(all.max)),
        })
    }

    fn of(h: &Histogram<u64>) -> Latencies {
        if h.is_empty() {
            return Latencies::default();
        }
        let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
        Latencies {
            mean: h.mean() / 1000.0,
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: h.max() as f64 / 1000.0,
        }
    }
}

/// What a step measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Numbers {
    pub requests: u64,
    pub successes: u64,
    /// Successes / requests, 0..1.
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub success: f64,
    /// Requests per second sent (vegeta's rate).
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub rate: f64,
    /// Successful responses per second of sending (the rate times the success share). vegeta's
    /// throughput divides by the sending and the wait for the last responses: a 2 s `--quick`
    /// step of 1 s requests then read two thirds of its rate at 100% success.
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub throughput: f64,
    /// The open model's asked rate.
    pub asked_rate: Option<f64>,
    /// All requests, failures included.
    pub latency: Latencies,
    /// Successful requests only.
    pub ok_latency: Latencies,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub ttfb_p50: f64,
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub lag_p99: f64,
    pub late_sends: u64,
    pub connections: u64,
    pub bytes_in: u64,
    pub errors: Vec<(String, u64)>,
    pub status: Vec<(u16, u64)>,
    /// The generator fell behind its schedule: the step says nothing about the target.
    pub generator_limited: bool,
    /// Requests per second actually sent (from the first scheduled send to the last actual one).
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub sent_rate: f64,
    /// Scheduled requests the generator never sent.
    pub not_sent: u64,
    /// Share of the generator's thread time spent waiting for a CPU, and the machine's idle
    /// share, during the step (Linux).
    pub cpu_wait: Option<f64>,
    pub machine_idle: Option<f64>,
    /// The generator's own stalls in the counted part (sends late while a worker was free).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<results::Stall>,
    /// A closed model's stall its raw percentiles hide (`results::HiddenStall`), said for a
    /// reader, and the latencies corrected for the requests it kept from being sent: what a
    /// verdict on the step's latency reads ([`Numbers::judged_latency`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden_stall: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_latency: Option<Latencies>,
    /// Connections that waited for the target to accept them (a SYN retransmitted), said for a
    /// reader (`results::Metrics::accept_waits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_waits: Option<String>,
    /// From each request's actual send to its end (latency less the generator's lag): what the
    /// target took, whatever the generator did before the send (which the counting rule of the
    /// `verdict` module reads).
    /// A generator that stalls also reads late the answers in flight: those requests (at most
    /// the peak in flight per stall) are left out, the slowest first. Its mean is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_latency: Option<Latencies>,
    /// After a generator's stall: the target's time alone before it (`StepConsumer`), which
    /// the target is judged by instead of `service_latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_before_stall: Option<Latencies>,
}

/// Requests whose answers a stalled generator may have read late: per stall of 20 ms or more,
/// as many as were ever in flight.
fn stalled_in_flight(m: &Metrics) -> u64 {
    let stalls = m.stalls.iter().filter(|s| s.length_us >= results::GENERATOR_LAG_P99_US).count() as u64;
    stalls.saturating_mul(m.peak_in_flight.max(1))
}

/// The generator's longest stall of 20 ms or more, in ms (0 without one).
fn longest_stall_ms(m: &Metrics) -> f64 {
    let longest = results::longest_stall(&m.stalls).map_or(0, |s| s.length_us);
    if longest >= results::GENERATOR_LAG_P99_US {
        longest as f64 / 1000.0
    } else {
        0.0
    }
}

impl Numbers {
    pub fn of(m: &Metrics, ok: &Histogram<u64>) -> Numbers {
        Numbers {
            requests: m.requests,
            successes: m.successes,
            success: m.success_ratio(),
            rate: m.rate(),
            throughput: m.rate() * m.success_ratio(),
            asked_rate: m.asked_rate,
            latency: Latencies::of(&m.latency),
            ok_latency: Latencies::of(ok),
            ttfb_p50: m.ttfb.value_at_quantile(0.5) as f64 / 1000.0,
            lag_p99: m.lag.value_at_quantile(0.99) as f64 / 1000.0,
            late_sends: m.late_sends,
            connections: m.connections,
            bytes_in: m.bytes_in,
            errors: m.errors.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            status: m.status.iter().map(|(k, v)| (*k, *v)).collect(),
            // The one rule of who was the limit (results::Limit), as `report` says it.
            generator_limited: m.generator_limited().is_some(),
            sent_rate: if m.requests == 0 { 0.0 } else { m.sent_rate() },
            not_sent: m.not_sent,
            cpu_wait: m.generator_cpu.map(|c| c.wait_share()),
            machine_idle: m.generator_cpu.and_then(|c| c.machine_idle),
            stalls: m.stalls.clone(),
            hidden_stall: m.hidden_stall().map(|s| s.text()),
            corrected_latency: m.hidden_stall().map(|s| Latencies::of(&s.corrected)),
            accept_waits: m.accept_waits(),
            service_latency: Latencies::at_least(&m.service, stalled_in_flight(m), longest_stall_ms(m)),
            service_before_stall: None,
        }
    }

    /// The latencies a verdict reads: corrected where a closed model hid a stall, else as
    /// measured.
    pub fn judged_latency(&self) -> &Latencies {
        self.corrected_latency.as_ref().unwrap_or(&self.latency)
    }

    /// The error most requests failed with, for a reader: `connection refused (26 of 26
    /// requests)`; None without errors.
    pub fn top_error(&self) -> Option<String> {
        let (what, n) = self.errors.iter().max_by_key(|(_, n)| *n)?;
        Some(format!("{what} ({n} of {} requests)", self.requests))
    }

    /// The generator's threads waited for a CPU beyond [`STARVED_WAIT_SHARE`].
    pub fn starved(&self) -> bool {
        self.cpu_wait.is_some_and(|w| w > STARVED_WAIT_SHARE)
    }

    /// What the machine did to the generator, for a reader: `its threads waited for a CPU 38%
    /// of the time; the machine was 2% idle`.
    pub fn busy_text(&self) -> String {
        let wait = self
            .cpu_wait
            .map_or(String::new(), |w| format!("its threads waited for a CPU {:.0}% of the time", w * 100.0));
        match self.machine_idle {
            Some(i) => format!("{wait}; the machine was {:.0}% idle", i * 100.0),
            None => wait,
        }
    }

    /// Why the generator limited this step, or None: `sent 404.0/s of 1000.0/s asked`.
    pub fn generator_text(&self) -> Option<String> {
        if !self.generator_limited {
            return None;
        }
        let mut s = match results::longest_stall(&self.stalls) {
            Some(st) if st.length_us >= 100_000 => format!("the generator stalled {}; ", st.text()),
            _ => String::new(),
        };
        s += &format!("sent {:.1}/s of {:.1}/s asked", self.sent_rate, self.asked_rate.unwrap_or(0.0));
        if self.not_sent > 0 {
            s += &format!(", {} never sent", self.not_sent);
        }
        if self.late_sends > 0 && self.requests > 0 {
            s += &format!(
                ", {:.0}% of sends late (p99 {:.1}ms behind the schedule)",
                100.0 * self.late_sends as f64 / self.requests as f64,
                self.lag_p99
            );
        }
        if self.starved() {
            s += &format!(" ({})", self.busy_text());
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::Record;

    #[test]
    fn a_short_stall_takes_its_length_off_the_targets_time_not_the_slowest_answers() {
        // 604 answers of a target past its knee, 10 ms to 1.2 s, 247 in flight at the peak; the
        // generator stalled 25 ms once. Dropping the 247 slowest leaves a p99 near 710 ms; no
        // answer was read more than 25 ms late, so the p99 is at least 1.2 s less 25 ms.
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for i in 0..604u64 {
            h.record(10_000 + i * 1_990_000 / 1000).unwrap();
        }
        let all = Latencies::of(&h);
        let fastest = Latencies::of_fastest(&h, 247).unwrap();
        let bound = Latencies::at_least(&h, 247, 25.0).unwrap();
        assert!(fastest.p99 < 0.6 * all.p99, "{fastest:?} {all:?}");
        assert!((bound.p99 - (all.p99 - 25.0)).abs() < 1.0, "{bound:?} {all:?}");
        // A stall longer than the answers: the fastest bound is the higher one.
        let long = Latencies::at_least(&h, 247, 5_000.0).unwrap();
        assert_eq!(long.p99, fastest.p99);
        // No stall: the histogram as it is.
        assert_eq!(Latencies::at_least(&h, 0, 0.0).unwrap().p99, all.p99);
    }

    #[test]
    fn warmup_is_not_counted_and_failures_stay_out_of_success_latency() {
        let mut c = StepConsumer::new(std::time::Duration::from_secs(1));
        c.start(&RunHeader { start_unix_ns: 1, ..Default::default() }).unwrap();
        let rec = |at_ms: u64, lat_ms: u64, status: u16, lag_ms: u64| Record {
            scheduled_us: at_ms * 1000,
            latency_us: lat_ms * 1000,
            status,
            lag_us: lag_ms * 1000,
            ..Default::default()
        };
        for r in [rec(500, 900, 200, 0), rec(1000, 100, 200, 0), rec(1500, 2, 0, 0), rec(1600, 120, 200, 30)] {
            let error = (r.status == 0).then_some("connect: connection refused");
            c.record(&Entry { record: &r, target: None, error }).unwrap();
        }
        // The attack's end: room under its cap of 10 in flight.
        let end = results::RunEnd {
            asked_rate: Some(3.0),
            peak_in_flight: 2,
            in_flight_cap: Some(10),
            complete: true,
            ..Default::default()
        };
        let mut capped = StepConsumer::new(std::time::Duration::from_secs(1));
        c.end(&end).unwrap();
        let n = c.numbers();
        assert_eq!((n.requests, n.successes, c.warmup_requests), (3, 2, 1));
        // The failure answered in 2 ms: all-request p50 is pulled down, success p50 is not.
        assert!(n.latency.p50 < 101.0 && n.ok_latency.p50 >= 99.0, "{n:?}");
        assert!((n.ok_latency.max - 120.0).abs() < 0.2);
        // One send of three 30 ms late is a hiccup of the machine (results::MIN_LATE_SENDS).
        assert!(!n.generator_limited);
        // Three of five 30 ms late with workers free: the generator fell behind.
        for at_ms in [1700, 1800] {
            c.counted.add(1, &rec(at_ms, 120, 200, 30), None);
        }
        assert!(c.counted.generator_limited().is_some());
        let mut closed = c.counted.clone();
        closed.asked_rate = None;
        assert!(closed.generator_limited().is_none(), "a closed model has no schedule to fall behind");
        // The same lateness with every worker busy is the target's: it counts against it.
        capped.counted = c.counted.clone();
        capped.end(&results::RunEnd { peak_in_flight: 10, ..end }).unwrap();
        assert!(!capped.numbers().generator_limited);
    }

    #[test]
    fn after_a_stall_the_target_is_judged_by_what_it_did_before_it() {
        // 2 ms answers for 2 s; the generator stops 1.5 s; its catch-up burst, sent on time once
        // it runs again, queues at the target: 300 requests of up to 600 ms.
        let mut c = StepConsumer::new(std::time::Duration::ZERO);
        c.start(&RunHeader { start_unix_ns: 1, ..Default::default() }).unwrap();
        let mut feed = |at_ms: u64, service_ms: u64, lag_ms: u64| {
            let r = Record {
                scheduled_us: at_ms * 1000,
                latency_us: (service_ms + lag_ms) * 1000,
                lag_us: lag_ms * 1000,
                status: 200,
                ..Default::default()
            };
            c.record(&Entry { record: &r, target: None, error: None }).unwrap();
        };
        for i in 0..400 {
            feed(i * 5, 2, 0);
        }
        for i in 0..300 {
            feed(2000 + i * 5, 2 + 2 * i, 1500 - i * 5);
        }
        for i in 0..200 {
            feed(3500 + i * 5, 600 - 3 * i, 0);
        }
        let stall = results::Stall { at_us: 2_000_000, length_us: 1_500_000, sends: 300 };
        let end = results::RunEnd {
            asked_rate: Some(200.0),
            peak_in_flight: 4,
            stalls: vec![stall],
            complete: true,
            ..Default::default()
        };
        c.end(&end).unwrap();
        let n = c.numbers();
        let before = n.service_before_stall.clone().expect("the target before the stall");
        assert!(before.p99 < 2.1 && before.max < 2.1, "{before:?}");
        let slo = [crate::measure::verdict::Clause::parse("p99", "< 100ms").unwrap()];
        assert!(n.service_latency.as_ref().unwrap().p99 > 100.0, "the burst's queue is in the service time");
        assert!(crate::measure::verdict::Clause::broken_at_target(&slo, &n).is_empty(), "not the target's");
        // A target already slow before the stall is the target's.
        let slow = Numbers { service_before_stall: Some(Latencies { p99: 600.0, ..before.clone() }), ..n.clone() };
        assert_eq!(crate::measure::verdict::Clause::broken_at_target(&slo, &slow).len(), 1);
        // A target past its knee, seconds behind, after the busy machine held the generator
        // 25 ms in its first slice (nothing before it): the queue is not a 25 ms burst's.
        let held = results::Stall { at_us: 20_000, length_us: 25_000, sends: 10 };
        let behind = Latencies { p99: 1200.0, ..before.clone() };
        let knee = Numbers {
            stalls: vec![held],
            service_before_stall: None,
            service_latency: Some(behind),
            lag_p99: 7.6,
            cpu_wait: Some(0.13),
            ..n.clone()
        };
        assert_eq!(crate::measure::verdict::Clause::broken_at_target(&slo, &knee).len(), 1);
        assert_eq!(crate::measure::verdict::uncounted(&slo, &knee), None, "the target's, busy machine or not");
        // 240 ms at the target after that stall could be its burst's queue.
        let near = Numbers { service_latency: Some(Latencies { p99: 240.0, ..before }), ..knee };
        assert!(crate::measure::verdict::Clause::broken_at_target(&slo, &near).is_empty());
    }
}
