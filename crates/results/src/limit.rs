//! Who set the pace of a run that fell behind its schedule: the generator or the target. One
//! rule, read by `report`, the lab's verdicts and the progress line, so that no two of them can
//! call one run differently.

use crate::metrics::Metrics;

/// A generator that falls behind with room under its cap counts as the limit only when its
/// 99th percentile send left more than this late (or over 1% of the schedule was never sent):
/// a few sends 5 ms late while the pool grows at the start are noise; a generator that cannot
/// keep up falls behind by far more.
pub const GENERATOR_LAG_P99_US: u64 = 20_000;

/// Who was the limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// The schedule was kept (within noise), or there was none (a closed model).
    Kept,
    /// Sends waited for connections the target kept busy: the cap on requests in flight was
    /// reached (`cap`), or most waits were for a busy connection.
    Target { cap: Option<u64> },
    /// The generator fell behind with connections free, or stalled (`Metrics::stalls`): rate
    /// sent and rate asked.
    Generator { sent: f64, asked: f64 },
}

impl Metrics {
    /// Who was the limit of these runs.
    pub fn limit(&self) -> Limit {
        let Some(asked) = self.asked_rate else { return Limit::Kept };
        if !self.behind() {
            return Limit::Kept;
        }
        // Sends the generator held while a worker was free are its own, whatever happened after:
        // the burst of overdue sends after a stall fills the cap, which is not the target's doing.
        if self.stalled() {
            return Limit::Generator { sent: self.sent_rate(), asked };
        }
        let capped = self.in_flight_cap.is_some_and(|c| self.peak_in_flight >= c);
        if capped || self.waited_for_target() {
            return Limit::Target { cap: self.in_flight_cap.filter(|_| capped) };
        }
        let scheduled = self.requests + self.not_sent;
        let unsent = self.not_sent as f64 > scheduled as f64 * 0.01;
        let far = self.lag.value_at_quantile(0.99) > GENERATOR_LAG_P99_US;
        if far || unsent || self.requests == 0 {
            let sent = if self.requests == 0 { 0.0 } else { self.sent_rate() };
            return Limit::Generator { sent, asked };
        }
        Limit::Kept
    }

    /// The generator was the limit: (rate sent, rate asked).
    pub fn generator_limited(&self) -> Option<(f64, f64)> {
        match self.limit() {
            Limit::Generator { sent, asked } => Some((sent, asked)),
            _ => None,
        }
    }
}

impl Limit {
    /// The same question while a run goes, from its latest moments (no percentiles yet): over
    /// 1% of `sends` late, with every one of `cap` workers busy, is the target's doing; with
    /// workers free, the generator's.
    pub fn while_running(late: u64, sends: u64, in_flight: u64, cap: Option<u64>, sent: f64, asked: f64) -> Limit {
        let behind = crate::metrics::too_many_late(late, sends);
        match cap {
            _ if !behind => Limit::Kept,
            Some(cap) if in_flight >= cap => Limit::Target { cap: Some(cap) },
            _ => Limit::Generator { sent, asked },
        }
    }
}
