//! Coalesced pacing (`--pace-window`): exact at low rates, coalesced at high ones. Each wake-up of
//! a pacer costs system calls (arming the timer, the event loop's wait) whatever it sends; at
//! 100,000/s, with hits 10 µs apart, a pacer that wakes for each one spends its core on waking.
//! So wake-ups are kept at least a window apart: a hit due sooner than that after the last
//! wake-up waits for the window's end and leaves with the others due by then. Hits further apart
//! than the window are each woken for on time, so at low rates nothing changes; at high rates a
//! send is late by at most the window, and keeps its scheduled time, so the lag shows in latency.

use std::time::Duration;

use crate::pacer::PaceClock;

/// The widest window: what coalescing may add to a send's lag.
pub const MAX_PACE_WINDOW: Duration = Duration::from_micros(250);

/// Below this rate per pacer thread (hits 250 µs apart or more) every hit has its own wake-up.
pub const EXACT_BELOW_RATE: f64 = 4_000.0;

/// The window for a pacer thread whose share of the schedule peaks at `rate` per second, within
/// `max` (`--pace-window`): none below [`EXACT_BELOW_RATE`]; above it, about eight hits' gap, so
/// a wake-up sends about eight, within `max`.
pub fn window_for(rate: f64, max: Duration) -> Duration {
    if rate.is_nan() || rate < EXACT_BELOW_RATE {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(8.0 / rate).min(max)
}

/// A clock whose wake-ups are at least `window` apart (none when zero).
pub(crate) struct Coalesced<C> {
    pub(crate) clock: C,
    pub(crate) window: Duration,
    /// When the last sleep ended, from the start.
    woke: Option<Duration>,
}

impl<C> Coalesced<C> {
    pub(crate) fn new(clock: C, window: Duration) -> Coalesced<C> {
        Coalesced { clock, window, woke: None }
    }
}

impl<C: PaceClock> PaceClock for Coalesced<C> {
    fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        let at = match self.woke {
            Some(woke) if !self.window.is_zero() => at.max(woke + self.window),
            _ => at,
        };
        self.clock.sleep_until(at).await;
        self.woke = Some(self.clock.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pacer::pacer;
    use crate::pacer::tests::FakeClock;
    use crate::schedule::Schedule;
    use std::cell::Cell;
    use tokio_util::sync::CancellationToken;

    /// Paces `schedule` through a coalescing window on a virtual clock: (n, due, sent at) per
    /// hit, and the wake-ups.
    fn run(schedule: &Schedule, window: Duration) -> (Vec<(u64, Duration, Duration)>, usize) {
        let now = Cell::new(Duration::ZERO);
        let mut clock = Coalesced::new(FakeClock { now: &now, oversleep: Duration::ZERO, wakes: 0 }, window);
        let mut sent = Vec::new();
        let mut record = |n, due| {
            sent.push((n, due, now.get()));
            true
        };
        let stop = CancellationToken::new();
        let fut = pacer(schedule, 0, 1, &mut clock, &stop, &mut record);
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
        (sent, clock.clock.wakes)
    }

    #[test]
    fn the_window_is_none_at_low_rates_and_bounded_at_high_ones() {
        assert_eq!(window_for(2_000.0, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(3_999.0, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(f64::NAN, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(10_000.0, MAX_PACE_WINDOW), Duration::from_micros(250));
        assert_eq!(window_for(100_000.0, MAX_PACE_WINDOW), Duration::from_micros(80));
        assert_eq!(window_for(1_000_000.0, MAX_PACE_WINDOW), Duration::from_micros(8));
        assert_eq!(window_for(100_000.0, Duration::ZERO), Duration::ZERO, "--pace-window 0: exact");
    }

    #[test]
    fn low_rates_stay_exact() {
        // 2,000/s for 2 s with the window its rate gives (none), and with the widest window:
        // hits 500 µs apart are each sent at their due time either way.
        let schedule = Schedule::constant(2_000.0, Duration::from_secs(2));
        for window in [window_for(2_000.0, MAX_PACE_WINDOW), MAX_PACE_WINDOW] {
            let (sent, wakes) = run(&schedule, window);
            assert_eq!(sent.len(), 4_000);
            for (i, (n, due, at)) in sent.iter().enumerate() {
                assert_eq!((*n, *due), (i as u64, Duration::from_micros(500 * i as u64)));
                assert_eq!(at, due, "hit {i} with a {window:?} window");
            }
            assert_eq!(wakes, 3_999, "one wake-up per hit after the first");
        }
    }

    #[test]
    fn high_rates_coalesce_with_bounded_lag_and_exact_counts() {
        // 100,000/s for 1 s (a hit every 10 µs): an 80 µs window.
        let schedule = Schedule::constant(100_000.0, Duration::from_secs(1));
        let window = window_for(100_000.0, MAX_PACE_WINDOW);
        let (sent, wakes) = run(&schedule, window);
        assert_eq!(sent.len(), 100_000, "every hit, once");
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!(*n, i as u64, "in sequence");
            assert_eq!(*due, Duration::from_micros(10 * i as u64), "each keeps its scheduled time");
            assert!(at >= due && *at - *due <= window, "hit {i}: due {due:?}, sent {at:?}");
        }
        // About one wake-up per window, instead of one per hit.
        assert!((12_000..=12_600).contains(&wakes), "{wakes} wake-ups");
        let exact = run(&schedule, Duration::ZERO).1;
        assert_eq!(exact, 99_999);
    }

    #[test]
    fn a_rate_step_up_coalesces_only_where_hits_are_close() {
        // 1,000/s then 50,000/s, half a second each, with the window of the peak: the first half
        // is sent on time, the second within the window.
        let schedule = Schedule::rate_steps(&[1_000.0, 50_000.0], Duration::from_millis(500), None);
        let window = window_for(50_000.0, MAX_PACE_WINDOW);
        assert_eq!(window, Duration::from_micros(160));
        let (sent, _) = run(&schedule, window);
        assert_eq!(sent.len(), 500 + 25_000);
        let (slow, fast) = sent.split_at(500);
        assert!(slow.iter().all(|(_, due, at)| at == due));
        assert!(fast.iter().all(|(_, due, at)| at >= due && *at - *due <= window));
        assert!(fast.iter().any(|(_, due, at)| at > due), "the fast half is coalesced");
    }
}
