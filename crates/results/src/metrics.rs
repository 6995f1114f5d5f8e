//! Accumulated numbers of one or many runs. Everything here merges exactly (`merge`), so workers
//! and files can be summed in any order without losing precision.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::consumer::{Consumer, Entry};
use crate::record::{GeneratorCpu, Record, RunEnd, RunHeader};

/// A send counts as late when it left this long after its scheduled time: well above timer and
/// scheduling noise, so it means the generator (or `--max-workers`) could not keep the schedule.
pub const LATE_SEND_US: u64 = 5_000;
/// A run fell behind its schedule when more than this share of its sends left late.
pub const LATE_SHARE_LIMIT: f64 = 0.01;
/// Fewer late sends than this are a hiccup of the machine, whatever their share: in a short
/// step (40 sends at 20/s) one send 23 ms late is 2.5% of them and its p99, and says nothing of a
/// generator that cannot keep up, which falls behind on many.
pub(crate) const MIN_LATE_SENDS: u64 = 3;

/// Over [`LATE_SHARE_LIMIT`] of `of` and at least [`MIN_LATE_SENDS`].
pub(crate) fn too_many_late(late: u64, of: u64) -> bool {
    late >= MIN_LATE_SENDS && late as f64 > of as f64 * LATE_SHARE_LIMIT
}
/// Histogram range: 1 us .. 1 h, 3 significant digits.
const HIST_MAX_US: u64 = 3_600_000_000;
/// Per-second histograms keep 2 significant digits: a 10-minute run then needs about 10 MiB.
const SECOND_SIGFIG: u8 = 2;

fn histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, sigfig).expect("static histogram bounds")
}

/// Statistics of one wall-clock second (by scheduled send time).
#[derive(Clone, Debug)]
pub struct SecondStats {
    pub requests: u64,
    pub successes: u64,
    pub bytes_in: u64,
    pub status: BTreeMap<u16, u64>,
    pub latency: Histogram<u64>,
}

impl SecondStats {
    fn new() -> Self {
        SecondStats {
            requests: 0,
            successes: 0,
            bytes_in: 0,
            status: BTreeMap::new(),
            latency: histogram(SECOND_SIGFIG),
        }
    }

    fn merge(&mut self, other: &SecondStats) {
        self.requests += other.requests;
        self.successes += other.successes;
        self.bytes_in += other.bytes_in;
        for (k, v) in &other.status {
            *self.status.entry(*k).or_default() += v;
        }
        self.latency.add(&other.latency).expect("same histogram bounds");
    }
}

/// Metrics take records of any number of runs, each counted from its own start.
impl Consumer for Metrics {
    fn start(&mut self, header: &RunHeader) -> std::io::Result<()> {
        self.run_start_ns = header.start_unix_ns;
        self.run_end_ns = 0;
        self.run_late_us = header.late_send_us();
        self.pace_tick_us = self.pace_tick_us.max(header.pace_tick_us());
        self.runs.push(header.name.clone());
        let plan = header.plan();
        self.pace_window_us = self.pace_window_us.max(plan.pace_window_us);
        if self.replay.is_none() {
            self.replay = plan.replay.as_ref().map(ToString::to_string);
        }
        self.imported_runs += u64::from(plan.imported_from.is_some());
        self.closed_runs += u64::from(plan.closed());
        self.run_closed = plan.closed();
        Ok(())
    }

    fn record(&mut self, e: &Entry<'_>) -> std::io::Result<()> {
        self.add(self.run_start_ns, e.record, e.error);
        Ok(())
    }

    fn end(&mut self, end: &RunEnd) -> std::io::Result<()> {
        self.not_sent += end.not_sent;
        if let Some(r) = end.asked_rate {
            *self.asked_rate.get_or_insert(0.0) += r;
        }
        self.peak_in_flight = self.peak_in_flight.max(end.peak_in_flight);
        self.waits_for_target += end.waits_for_target;
        self.waits_for_generator += end.waits_for_generator;
        self.add_stalls(&end.stalls);
        self.slow_connects += end.slow_connects;
        self.connect_max_us = self.connect_max_us.max(end.connect_max_us);
        if let Some(o) = end.listen_overflows {
            *self.listen_overflows.get_or_insert(0) += o;
        }
        if let Some(c) = end.in_flight_cap {
            self.in_flight_cap = Some(self.in_flight_cap.map_or(c, |m| m.max(c)));
        }
        self.interrupted |= end.interrupted;
        self.incomplete += u64::from(!end.complete);
        if let Some(c) = &end.generator_cpu {
            self.generator_cpu.get_or_insert_with(GeneratorCpu::default).add(c);
        }
        if let Some(d) = end.decoded_bytes_in {
            *self.decoded_bytes_in.get_or_insert(0) += d;
            self.decoded_runs += 1;
        }
        Ok(())
    }
}

/// Totals, histograms and time bounds of a set of requests.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub requests: u64,
    pub successes: u64,
    /// Scheduled send to end of response, microseconds.
    pub latency: Histogram<u64>,
    /// Scheduled send to response head, microseconds (responses only).
    pub ttfb: Histogram<u64>,
    /// Scheduled send to actual send, microseconds.
    pub lag: Histogram<u64>,
    /// Actual send to end of response (latency less lag), microseconds: the target's time alone,
    /// whatever the generator did before the send.
    pub service: Histogram<u64>,
    pub latency_sum_us: u128,
    /// Exact extremes of the latency (the histogram keeps 3 significant digits: its min can be
    /// below every real latency).
    pub latency_min_us: u64,
    pub latency_max_us: u64,
    /// Response body bytes as received (content-coded, de-chunked).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Response bodies' decoded size, summed over the runs that decoded (`--compressed`).
    pub decoded_bytes_in: Option<u64>,
    pub decoded_runs: u64,
    pub status: BTreeMap<u16, u64>,
    /// Error text to count.
    pub errors: BTreeMap<String, u64>,
    pub late_sends: u64,
    /// The longest pacing tick of the runs (`--pace-tick`), us: a send is late past
    /// `LATE_SEND_US` beyond its tick ([`Metrics::late_threshold_us`]).
    pub pace_tick_us: u64,
    /// The widest coalescing window of the runs (high rates without a tick), us: it moves the
    /// late threshold as a tick does.
    pub pace_window_us: u64,
    /// What the first replayed run replayed (`access.log at 2x`).
    pub replay: Option<String>,
    /// The current run's late threshold.
    run_late_us: u64,
    pub connections: u64,
    /// Latest actual send (scheduled time plus lag), ns since the Unix epoch.
    pub latest_sent_ns: u64,
    /// Earliest and latest scheduled send, and latest end, in ns since the Unix epoch.
    pub earliest_ns: u64,
    pub latest_ns: u64,
    pub end_ns: u64,
    /// Per-second statistics keyed by Unix second; only kept when asked for (see `with_seconds`).
    pub seconds: Option<BTreeMap<u64, SecondStats>>,
    /// Run names seen, in order.
    pub runs: Vec<String>,
    /// Scheduled requests never sent (the generator could not send them by the schedule's end).
    pub not_sent: u64,
    /// The open model's asked rate, summed over runs that said it.
    pub asked_rate: Option<f64>,
    /// Most requests in flight at once, and the cap on them.
    pub peak_in_flight: u64,
    pub in_flight_cap: Option<u64>,
    /// Sends that waited for a connection the pool could not add: for the target (a thread's
    /// share of the cap in use), or for the generator's own thread (saturated).
    pub waits_for_target: u64,
    pub waits_for_generator: u64,
    /// The generator's own stalls (sends late while a worker was free), and the sends they
    /// delayed: the generator's doing, whatever the cap on requests in flight reached after.
    pub stalls: Vec<crate::Stall>,
    pub stalled_sends: u64,
    /// Connections that waited for a SYN retransmission to open, the longest open (µs), and the
    /// listen-queue overflows counted over the runs (`RunEnd`).
    pub slow_connects: u64,
    pub connect_max_us: u64,
    pub listen_overflows: Option<u64>,
    /// A run was stopped before its end (SIGINT, SIGTERM).
    pub interrupted: bool,
    /// What the generator's threads got of the CPU, over the runs that said.
    pub generator_cpu: Option<GeneratorCpu>,
    /// Runs that ended without their end marker (killed, truncated).
    pub incomplete: u64,
    /// Runs imported from vegeta (which records no schedule lag, TTFB or connections), and
    /// closed-model runs (which have no schedule to lag behind), among the runs taken.
    pub imported_runs: u64,
    pub closed_runs: u64,
    /// The longest silence between answers of a closed-model run (`quiet`).
    pub quiet: Option<crate::Quiet>,
    /// Start of the run being consumed (see the `Consumer` impl), ns since the Unix epoch.
    pub(crate) run_start_ns: u64,
    /// The run being consumed is a closed model, and its latest answer so far.
    pub(crate) run_closed: bool,
    pub(crate) run_end_ns: u64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: 0,
            successes: 0,
            latency: histogram(3),
            ttfb: histogram(3),
            lag: histogram(3),
            service: histogram(3),
            latency_sum_us: 0,
            latency_min_us: u64::MAX,
            latency_max_us: 0,
            bytes_in: 0,
            bytes_out: 0,
            decoded_bytes_in: None,
            decoded_runs: 0,
            status: BTreeMap::new(),
            errors: BTreeMap::new(),
            late_sends: 0,
            pace_tick_us: 0,
            pace_window_us: 0,
            replay: None,
            run_late_us: LATE_SEND_US,
            connections: 0,
            earliest_ns: u64::MAX,
            latest_sent_ns: 0,
            latest_ns: 0,
            end_ns: 0,
            seconds: None,
            runs: Vec::new(),
            not_sent: 0,
            asked_rate: None,
            peak_in_flight: 0,
            in_flight_cap: None,
            waits_for_target: 0,
            waits_for_generator: 0,
            stalls: Vec::new(),
            stalled_sends: 0,
            slow_connects: 0,
            connect_max_us: 0,
            listen_overflows: None,
            interrupted: false,
            generator_cpu: None,
            incomplete: 0,
            imported_runs: 0,
            closed_runs: 0,
            quiet: None,
            run_start_ns: 0,
            run_closed: false,
            run_end_ns: 0,
        }
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Also keep per-second statistics (for charts and `--every`).
    pub fn with_seconds() -> Self {
        Metrics { seconds: Some(BTreeMap::new()), ..Self::default() }
    }

    /// Adds one record of a run that started at `run_start_ns`; `error` is its error text.
    #[inline]
    pub fn add(&mut self, run_start_ns: u64, r: &Record, error: Option<&str>) {
        self.requests += 1;
        let ok = r.is_success();
        self.successes += u64::from(ok);
        self.latency.saturating_record(r.latency_us.max(1));
        if r.status != 0 {
            self.ttfb.saturating_record(r.ttfb_us.max(1));
        }
        self.lag.saturating_record(r.lag_us.max(1));
        self.service.saturating_record(r.latency_us.saturating_sub(r.lag_us).max(1));
        self.latency_sum_us += u128::from(r.latency_us);
        self.latency_min_us = self.latency_min_us.min(r.latency_us);
        self.latency_max_us = self.latency_max_us.max(r.latency_us);
        self.bytes_in += r.bytes_in;
        self.bytes_out += r.bytes_out;
        *self.status.entry(r.status).or_default() += 1;
        if let Some(e) = error {
            if let Some(n) = self.errors.get_mut(e) {
                *n += 1;
            } else {
                self.errors.insert(e.to_owned(), 1);
            }
        }
        self.late_sends += u64::from(r.lag_us >= self.run_late_us);
        self.connections += u64::from(r.new_conn);
        let at = run_start_ns.saturating_add(r.scheduled_us.saturating_mul(1000));
        self.earliest_ns = self.earliest_ns.min(at);
        self.latest_ns = self.latest_ns.max(at);
        self.latest_sent_ns = self.latest_sent_ns.max(at.saturating_add(r.lag_us.saturating_mul(1000)));
        let end = at.saturating_add(r.latency_us.saturating_mul(1000));
        self.end_ns = self.end_ns.max(end);
        if self.run_closed {
            self.note_answer(run_start_ns, end);
        }
        if let Some(seconds) = &mut self.seconds {
            let s = seconds.entry(at / 1_000_000_000).or_insert_with(SecondStats::new);
            s.requests += 1;
            s.successes += u64::from(ok);
            s.bytes_in += r.bytes_in;
            *s.status.entry(r.status).or_default() += 1;
            s.latency.saturating_record(r.latency_us.max(1));
        }
    }

    /// Adds everything of `other` (exactly: histograms merge bucket by bucket).
    pub fn merge(&mut self, other: &Metrics) {
        self.requests += other.requests;
        self.successes += other.successes;
        self.latency.add(&other.latency).expect("same histogram bounds");
        self.ttfb.add(&other.ttfb).expect("same histogram bounds");
        self.lag.add(&other.lag).expect("same histogram bounds");
        self.service.add(&other.service).expect("same histogram bounds");
        self.latency_sum_us += other.latency_sum_us;
        self.latency_min_us = self.latency_min_us.min(other.latency_min_us);
        self.latency_max_us = self.latency_max_us.max(other.latency_max_us);
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        for (k, v) in &other.status {
            *self.status.entry(*k).or_default() += v;
        }
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.late_sends += other.late_sends;
        self.pace_tick_us = self.pace_tick_us.max(other.pace_tick_us);
        self.pace_window_us = self.pace_window_us.max(other.pace_window_us);
        if self.replay.is_none() {
            self.replay.clone_from(&other.replay);
        }
        self.connections += other.connections;
        self.earliest_ns = self.earliest_ns.min(other.earliest_ns);
        self.latest_ns = self.latest_ns.max(other.latest_ns);
        self.latest_sent_ns = self.latest_sent_ns.max(other.latest_sent_ns);
        self.end_ns = self.end_ns.max(other.end_ns);
        if let Some(theirs) = &other.seconds {
            let mine = self.seconds.get_or_insert_with(BTreeMap::new);
            for (k, v) in theirs {
                match mine.get_mut(k) {
                    Some(s) => s.merge(v),
                    None => {
                        mine.insert(*k, v.clone());
                    }
                }
            }
        }
        self.runs.extend(other.runs.iter().cloned());
        self.not_sent += other.not_sent;
        if let Some(r) = other.asked_rate {
            *self.asked_rate.get_or_insert(0.0) += r;
        }
        self.peak_in_flight = self.peak_in_flight.max(other.peak_in_flight);
        self.in_flight_cap = self.in_flight_cap.max(other.in_flight_cap);
        self.waits_for_target += other.waits_for_target;
        self.waits_for_generator += other.waits_for_generator;
        self.add_stalls(&other.stalls);
        self.slow_connects += other.slow_connects;
        self.connect_max_us = self.connect_max_us.max(other.connect_max_us);
        if let Some(o) = other.listen_overflows {
            *self.listen_overflows.get_or_insert(0) += o;
        }
        self.interrupted |= other.interrupted;
        if let Some(c) = &other.generator_cpu {
            self.generator_cpu.get_or_insert_with(GeneratorCpu::default).add(c);
        }
        self.incomplete += other.incomplete;
        self.imported_runs += other.imported_runs;
        self.closed_runs += other.closed_runs;
        if other.quiet.is_some_and(|o| self.quiet.is_none_or(|q| o.length_us > q.length_us)) {
            self.quiet = other.quiet;
        }
        if let Some(d) = other.decoded_bytes_in {
            *self.decoded_bytes_in.get_or_insert(0) += d;
        }
        self.decoded_runs += other.decoded_runs;
    }

    /// A latency percentile in microseconds: from the histogram, kept within the exact min and
    /// max (a bucket's upper edge can lie above every real latency).
    pub fn latency_quantile_us(&self, q: f64) -> u64 {
        if self.latency.is_empty() {
            return 0;
        }
        self.latency.value_at_quantile(q).clamp(self.latency_min_us.min(self.latency_max_us), self.latency_max_us)
    }

    /// Bodies' decoded size, when every run taken decoded them.
    pub fn decoded_in(&self) -> Option<u64> {
        self.decoded_bytes_in.filter(|_| self.decoded_runs == self.runs.len() as u64)
    }

    /// Every run taken was imported from vegeta: lag, TTFB and connections are unknown.
    pub fn all_imported(&self) -> bool {
        !self.runs.is_empty() && self.imported_runs == self.runs.len() as u64
    }

    /// Every run taken was a closed model: there is no schedule lag to speak of.
    pub fn all_closed(&self) -> bool {
        !self.runs.is_empty() && self.closed_runs == self.runs.len() as u64
    }

    /// Requests per second actually sent: from the first scheduled send to the last actual
    /// one (a generator that fell behind sends more slowly than it scheduled).
    pub fn sent_rate(&self) -> f64 {
        let span = self.latest_sent_ns.saturating_sub(self.earliest_ns.min(self.latest_sent_ns));
        if self.requests < 2 || span == 0 {
            return self.rate();
        }
        (self.requests - 1) as f64 / (span as f64 / 1e9)
    }

    /// How late a send left to count as late: `LATE_SEND_US` past the longest pacing tick and
    /// coalescing window.
    pub fn late_threshold_us(&self) -> u64 {
        LATE_SEND_US + self.pace_tick_us + self.pace_window_us
    }

    /// Share of sends that left late (the schedule was not kept), 0..1.
    pub fn late_share(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.late_sends as f64 / self.requests as f64
        }
    }

    /// Sends fell behind the schedule: over 1% late (and at least [`MIN_LATE_SENDS`]), or some
    /// not sent.
    pub fn behind(&self) -> bool {
        too_many_late(self.late_sends, self.requests) || self.not_sent > 0
    }

    /// Takes a run's stalls (the sends they delayed counted once).
    pub fn add_stalls(&mut self, stalls: &[crate::Stall]) {
        if stalls.is_empty() {
            return;
        }
        self.stalled_sends += stalls.iter().map(|s| s.sends).sum::<u64>();
        let all = self.stalls.iter().chain(stalls).copied().collect();
        self.stalls = crate::merge_stalls(all);
    }

    /// The generator's own stalls of 20 ms or more (`GENERATOR_LAG_P99_US`: shorter ones are a
    /// busy machine's noise, as for lag) delayed over [`LATE_SHARE_LIMIT`] of the sends.
    pub fn stalled(&self) -> bool {
        let long: u64 =
            self.stalls.iter().filter(|s| s.length_us >= crate::GENERATOR_LAG_P99_US).map(|s| s.sends).sum();
        too_many_late(long, self.requests + self.not_sent)
    }

    /// Sends waited mostly for connections the target kept busy, not for the generator's
    /// thread.
    pub fn waited_for_target(&self) -> bool {
        self.waits_for_target > self.waits_for_generator
    }

    /// Scheduled span of the sends (vegeta's "attack" duration), ns.
    pub fn attack_ns(&self) -> u64 {
        self.latest_ns.saturating_sub(self.earliest_ns.min(self.latest_ns))
    }

    /// From the last send to the last response (vegeta's "wait"), ns.
    pub fn wait_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.latest_ns)
    }

    /// Requests per second of attack time (0 for fewer than two requests).
    pub fn rate(&self) -> f64 {
        let secs = self.attack_ns() as f64 / 1e9;
        if self.requests < 2 || secs <= 0.0 {
            return 0.0;
        }
        self.requests as f64 / secs
    }

    /// Successful responses per second of attack plus wait time.
    pub fn throughput(&self) -> f64 {
        let secs = (self.attack_ns() + self.wait_ns()) as f64 / 1e9;
        if secs <= 0.0 {
            return 0.0;
        }
        self.successes as f64 / secs
    }

    /// Share of successes, 0..1.
    pub fn success_ratio(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        self.successes as f64 / self.requests as f64
    }

    /// Mean latency in microseconds (fractional).
    pub fn mean_latency_us(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        self.latency_sum_us as f64 / self.requests as f64
    }
}

#[cfg(test)]
mod tests;
