//! What a closed model's percentiles hide. A closed model sends a connection's next request only
//! when its last one is answered, so a server that stops for a second delays one request per
//! connection and the rest are simply never sent: p99 stays at 92 µs while nothing was answered
//! for a second (the coordinated omission wrk2 was written against). The run's longest silence
//! between answers shows it, and the requests the run's rate would have sent in that silence,
//! each waiting for the rest of it, give the percentiles they would have had: HdrHistogram's
//! correction for an expected interval (`recordValueWithExpectedInterval`), taken from the
//! silence rather than from the slow answers, so that it holds when those fell in a warm-up.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

/// A silence between answers counts as a stall past this, and past [`QUIET_INTERVALS`] times
/// a connection's usual interval (its median latency): shorter ones are a slow answer.
pub const QUIET_MIN_US: u64 = 200_000;
pub const QUIET_INTERVALS: u64 = 50;

/// The longest time no answer arrived in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quiet {
    /// When it began, from the run's start (microseconds).
    pub at_us: u64,
    pub length_us: u64,
}

/// A closed model's stall, for a reader.
#[derive(Clone, Debug, PartialEq)]
pub struct HiddenStall {
    pub quiet: Quiet,
    /// Requests that would have been sent (and waited) at the run's rate.
    pub would_have_waited: u64,
    /// Latency with the requests the silence kept from being sent.
    pub corrected: Histogram<u64>,
}

impl HiddenStall {
    /// `no answers for 1.0 s at 3.0 s: a closed model's percentiles hide a stall; at the rate
    /// before it, about 185000 requests would have waited`.
    pub fn text(&self) -> String {
        format!(
            "no answers for {:.1} s at {:.1} s: a closed model's percentiles hide a stall; at the run's rate, about {} \
             requests would have waited",
            self.quiet.length_us as f64 / 1e6,
            self.quiet.at_us as f64 / 1e6,
            self.would_have_waited
        )
    }
}

impl Metrics {
    /// Connections that waited for the target to accept them, for a reader: `312 connections
    /// waited 1.0 s for the target to accept: its listen queue overflowed (474 times)`; None when
    /// none did.
    pub fn accept_waits(&self) -> Option<String> {
        if self.slow_connects == 0 {
            return None;
        }
        let why = match self.listen_overflows {
            Some(n) if n > 0 => format!(": its listen queue overflowed ({n} times, the kernel's ListenOverflows)"),
            _ => " (a SYN retransmitted: a full accept queue, or packets lost)".to_owned(),
        };
        // The waits are the attack's, warm-up included: when no counted request took as long,
        // none of them held one, and the latency says nothing of them.
        let held = if self.latency_max_us >= self.connect_max_us {
            "; their requests' latency includes it"
        } else {
            "; no counted request waited for it (the waits were in the warm-up, or held no request counted)"
        };
        Some(format!(
            "{} connection{} waited up to {:.1} s for the target to accept{why}{held}",
            self.slow_connects,
            if self.slow_connects == 1 { "" } else { "s" },
            self.connect_max_us as f64 / 1e6
        ))
    }

    /// Every run was a closed model and its answers stopped for far longer than their usual
    /// interval: what that hid, with the corrected latencies.
    pub fn hidden_stall(&self) -> Option<HiddenStall> {
        let quiet = self.quiet?;
        if !self.all_closed() || self.latency.is_empty() {
            return None;
        }
        let interval = self.latency.value_at_quantile(0.5).max(1);
        if quiet.length_us < QUIET_MIN_US.max(QUIET_INTERVALS * interval) {
            return None;
        }
        let waited = (self.rate() * quiet.length_us as f64 / 1e6).round() as u64;
        let mut corrected = self.latency.clone();
        // The k-th of them would have been sent k / rate into the silence, and waited the rest.
        for k in 0..waited {
            corrected.saturating_record((quiet.length_us - quiet.length_us * k / waited).max(1));
        }
        Some(HiddenStall { quiet, would_have_waited: waited, corrected })
    }

    /// Notes the answer of a record not otherwise counted (a lab's warm-up): a silence that
    /// began in it and went on past it is still one.
    pub fn note_uncounted(&mut self, r: &crate::Record) {
        if self.run_closed {
            let end =
                self.run_start_ns.saturating_add((r.scheduled_us.saturating_add(r.latency_us)).saturating_mul(1000));
            self.note_answer(self.run_start_ns, end);
        }
    }

    /// Notes an answer at `end_ns`, `run_start_ns` being its run's start: the longest silence
    /// before one is kept (answers of a run arrive about in order; one a little out of order is
    /// no silence).
    #[inline]
    pub(crate) fn note_answer(&mut self, run_start_ns: u64, end_ns: u64) {
        let last = self.run_end_ns;
        if last != 0 && end_ns > last {
            let gap_us = (end_ns - last) / 1000;
            if gap_us >= QUIET_MIN_US && self.quiet.is_none_or(|q| gap_us > q.length_us) {
                self.quiet = Some(Quiet { at_us: last.saturating_sub(run_start_ns) / 1000, length_us: gap_us });
            }
        }
        self.run_end_ns = self.run_end_ns.max(end_ns);
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn accept_waits_say_whether_a_counted_request_held_one() {
        let mut m = Metrics::new();
        (m.slow_connects, m.connect_max_us, m.listen_overflows) = (3, 1_000_000, Some(0));
        m.latency_max_us = 3_600;
        let w = m.accept_waits().unwrap();
        assert!(w.starts_with("3 connections waited up to 1.0 s") && w.contains("no counted request waited"), "{w}");
        m.latency_max_us = 1_200_000;
        assert!(m.accept_waits().unwrap().ends_with("their requests' latency includes it"));
        assert_eq!(Metrics::new().accept_waits(), None);
    }
    use crate::consumer::Consumer;
    use crate::record::{Record, RunHeader};
    use crate::{Metrics, RunPlan};

    /// A closed model on 10 connections, 100 µs answers (100,000/s), whose server stops for 1 s
    /// at 3 s: one request per connection waits 1 s, and none is sent meanwhile.
    fn run(closed: bool) -> Metrics {
        let mut m = Metrics::new();
        let plan = RunPlan { open: !closed, ..Default::default() };
        m.start(&RunHeader { start_unix_ns: 1_000_000_000, run_plan: Some(plan), ..Default::default() }).unwrap();
        let mut seq = 0;
        let mut add = |m: &mut Metrics, at_us: u64, latency_us: u64| {
            m.add(
                1_000_000_000,
                &Record { seq, scheduled_us: at_us, latency_us, status: 200, ..Default::default() },
                None,
            );
            seq += 1;
        };
        for t in (0..3_000_000).step_by(10) {
            add(&mut m, t, 100);
        }
        for _ in 0..10 {
            add(&mut m, 3_000_000, 1_000_100);
        }
        for t in (4_000_100..6_000_000).step_by(10) {
            add(&mut m, t, 100);
        }
        m
    }

    #[test]
    fn a_closed_models_stall_is_said_with_the_percentiles_it_hid() {
        let m = run(true);
        // The raw percentiles see nothing: ten slow answers among 500,000.
        assert!(m.latency.value_at_quantile(0.99) <= 101);
        let s = m.hidden_stall().expect("a hidden stall");
        assert_eq!(s.quiet.at_us / 1000, 3_000, "{s:?}");
        assert_eq!(s.quiet.length_us / 1000, 1_000, "{s:?}");
        // 1 s at the run's 100,000/s (over 6 s of sends: about 83,000/s).
        assert!((80_000..=100_000).contains(&s.would_have_waited), "{}", s.would_have_waited);
        assert!(
            s.text().starts_with("no answers for 1.0 s at 3.0 s: a closed model's percentiles hide a stall"),
            "{}",
            s.text()
        );
        // Corrected: the 100,000 requests that would have waited fill the tail, near 1 s down to 0.
        let p99 = s.corrected.value_at_quantile(0.99);
        assert!(p99 > 500_000, "corrected p99 {p99} us");
        // An open model's latencies already count from the schedule: nothing to correct.
        assert!(run(false).hidden_stall().is_none());
    }
}
