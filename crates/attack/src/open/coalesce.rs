//! Coalesced pacing (`--pace-window`): exact while the thread has time to spare, coalesced when
//! it is nearly saturated. Not the default: see docs/DECISIONS.md for the ceiling runs. Each wake-up of a pacer costs system calls (arming the timer, the
//! event loop's wait) whatever it sends; at 30,000/s, with hits 33 µs apart, a pacer that wakes
//! for each one spent 95% of its core (against nginx on another core), half of it on waking.
//! So once the thread is busy, wake-ups are kept at least a window apart: a hit due sooner than
//! that after the last wake-up waits for the window's end and leaves with the others due by
//! then. Hits further apart than the window are each woken for on time, so at low rates nothing
//! changes; at high rates a send is late by at most the window, and keeps its scheduled time, so
//! the lag shows in latency.
//!
//! The pacer measures itself: every [`MEASURE_EVERY`] it reads its thread's CPU time, engages
//! the window when the thread was busy [`ENGAGE_AT`] of the wall time or more, and lets it go
//! below [`RELEASE_BELOW`].

use std::time::Duration;

use crate::open::pacer::PaceClock;

/// The widest window the bench uses: what coalescing may add to a send's lag.
pub const MAX_PACE_WINDOW: Duration = Duration::from_micros(250);

/// Hits a coalesced wake-up sends, about: three wake-ups in four saved, for half the lag that
/// eight gave (which cut the CPU little more: most of a send's cost is the kernel's TCP path,
/// and the burstier runs opened more connections). A window that cannot hold this many (below
/// 16,000/s per thread with 250 µs) is not worth its lag: at 5,000/s it cut 7% of the CPU, at
/// 10,000/s a third, and both missed the 1 ms lag p99 that exact pacing held.
pub(crate) const HITS_PER_WAKE: f64 = 4.0;

/// How often the pacer reads its thread's CPU time (a system call).
pub(crate) const MEASURE_EVERY: Duration = Duration::from_millis(10);
/// Busy share of the thread (CPU time over wall time) from which the window applies: near
/// saturation, where exact pacing is about to fall behind. Below it exact pacing keeps the
/// lowest lag (at 20,000-30,000/s a window engaged from half busy doubled the lag p99, 0.1 to
/// 0.25-0.65 ms, for half the CPU), which is worth more than a core the generator does not need.
pub(crate) const ENGAGE_AT: f64 = 0.85;
/// Busy share under which a coalescing thread goes back to exact pacing: coalescing takes a
/// third to a half off the CPU, so a lower bound keeps it from flapping where it engaged.
pub(crate) const RELEASE_BELOW: f64 = 0.5;

/// The window for a pacer thread whose share of the schedule peaks at `rate` per second:
/// [`HITS_PER_WAKE`] hits' gap when that is within `max` (`--pace-window`), else none.
pub(crate) fn window_for(rate: f64, max: Duration) -> Duration {
    let window = HITS_PER_WAKE / rate;
    if window.is_nan() || window <= 0.0 || window > max.as_secs_f64() {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(window)
}

/// How busy the pacer's thread is: its CPU time so far.
pub(crate) trait BusyMeter {
    fn cpu(&mut self) -> Option<Duration>;
}

/// The calling thread's CPU clock.
pub(crate) struct ThreadCpu;

impl BusyMeter for ThreadCpu {
    fn cpu(&mut self) -> Option<Duration> {
        crate::cpu::thread_cpu()
    }
}

/// A clock whose wake-ups are at least `window` apart while its thread is busy (never when the
/// window is zero).
pub(crate) struct Coalesced<C, M = ThreadCpu> {
    pub(crate) clock: C,
    pub(crate) window: Duration,
    meter: M,
    /// Whether the window applies now.
    engaged: bool,
    /// The last measurement: (elapsed, thread CPU time).
    measured: Option<(Duration, Duration)>,
    /// When the last sleep ended, from the start.
    woke: Option<Duration>,
}

impl<C> Coalesced<C> {
    pub(crate) fn new(clock: C, window: Duration) -> Coalesced<C> {
        Coalesced::with_meter(clock, window, ThreadCpu)
    }
}

impl<C, M> Coalesced<C, M> {
    pub(crate) fn with_meter(clock: C, window: Duration, meter: M) -> Coalesced<C, M> {
        Coalesced { clock, window, meter, engaged: false, measured: None, woke: None }
    }
}

impl<C: PaceClock, M: BusyMeter> Coalesced<C, M> {
    /// Every [`MEASURE_EVERY`], engages or releases the window by how busy the thread was.
    fn measure(&mut self, now: Duration) {
        match self.measured {
            Some((at, _)) if now < at + MEASURE_EVERY => {}
            last => {
                let Some(cpu) = self.meter.cpu() else { return };
                if let Some((at, before)) = last {
                    let busy = cpu.saturating_sub(before).as_secs_f64() / (now - at).as_secs_f64();
                    self.engaged = if self.engaged { busy >= RELEASE_BELOW } else { busy >= ENGAGE_AT };
                }
                self.measured = Some((now, cpu));
            }
        }
    }
}

impl<C: PaceClock, M: BusyMeter> PaceClock for Coalesced<C, M> {
    fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        if self.window.is_zero() {
            return self.clock.sleep_until(at).await;
        }
        self.measure(self.clock.elapsed());
        let at = match self.woke {
            Some(woke) if self.engaged => at.max(woke + self.window),
            _ => at,
        };
        self.clock.sleep_until(at).await;
        self.woke = Some(self.clock.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::pacer::pacer;
    use crate::open::pacer::tests::FakeClock;
    use crate::schedule::Schedule;
    use std::cell::Cell;
    use tokio_util::sync::CancellationToken;

    /// A thread busy `share` of the (virtual) time since the last reading.
    struct FakeMeter<'a> {
        now: &'a Cell<Duration>,
        share: &'a Cell<f64>,
        cpu: Duration,
        last: Duration,
    }

    impl BusyMeter for FakeMeter<'_> {
        fn cpu(&mut self) -> Option<Duration> {
            let now = self.now.get();
            self.cpu += (now - self.last).mul_f64(self.share.get());
            self.last = now;
            Some(self.cpu)
        }
    }

    /// Paces `schedule` through a coalescing window on a virtual clock, the thread busy
    /// `busy(t)` of the time at `t`: (n, due, sent at) per hit, and the wake-ups.
    fn run(
        schedule: &Schedule,
        window: Duration,
        busy: impl Fn(Duration) -> f64,
    ) -> (Vec<(u64, Duration, Duration)>, usize) {
        let (now, share) = (Cell::new(Duration::ZERO), Cell::new(busy(Duration::ZERO)));
        let meter = FakeMeter { now: &now, share: &share, cpu: Duration::ZERO, last: Duration::ZERO };
        let fake = FakeClock { now: &now, oversleep: Duration::ZERO, wakes: 0 };
        let mut clock = Coalesced::with_meter(fake, window, meter);
        let mut sent = Vec::new();
        let mut record = |n, due| {
            sent.push((n, due, now.get()));
            share.set(busy(now.get()));
            true
        };
        let stop = CancellationToken::new();
        let fut = pacer(schedule, 0, 1, &mut clock, &stop, &mut record);
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
        (sent, clock.clock.wakes)
    }

    fn on_time(sent: &[(u64, Duration, Duration)]) -> bool {
        sent.iter().all(|(_, due, at)| at == due)
    }

    fn within(sent: &[(u64, Duration, Duration)], window: Duration) -> bool {
        sent.iter().all(|(_, due, at)| at >= due && *at - *due <= window)
    }

    #[test]
    fn the_window_is_none_at_low_rates_and_bounded_at_high_ones() {
        assert_eq!(window_for(2_000.0, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(15_900.0, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(f64::NAN, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(0.0, MAX_PACE_WINDOW), Duration::ZERO);
        assert_eq!(window_for(16_000.0, MAX_PACE_WINDOW), Duration::from_micros(250));
        assert_eq!(window_for(10_000.0, Duration::from_millis(1)), Duration::from_micros(400));
        assert_eq!(window_for(100_000.0, MAX_PACE_WINDOW), Duration::from_micros(40));
        assert_eq!(window_for(1_000_000.0, MAX_PACE_WINDOW), Duration::from_micros(4));
        assert_eq!(window_for(100_000.0, Duration::ZERO), Duration::ZERO, "--pace-window 0: exact");
    }

    #[test]
    fn low_rates_stay_exact_even_on_a_busy_thread() {
        // 2,000/s for 2 s with the widest window on a thread 90% busy: hits 500 µs apart are
        // each sent at their due time.
        let schedule = Schedule::constant(2_000.0, Duration::from_secs(2));
        let (sent, wakes) = run(&schedule, MAX_PACE_WINDOW, |_| 0.9);
        assert_eq!(sent.len(), 4_000);
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!((*n, *due), (i as u64, Duration::from_micros(500 * i as u64)));
            assert_eq!(at, due, "hit {i}");
        }
        assert_eq!(wakes, 3_999, "one wake-up per hit after the first");
    }

    #[test]
    fn high_rates_on_a_busy_thread_coalesce_with_bounded_lag_and_exact_counts() {
        // 100,000/s for 1 s (a hit every 10 µs) on a thread 90% busy: a 40 µs window, engaged
        // from the first measurement (10 ms in) on.
        let schedule = Schedule::constant(100_000.0, Duration::from_secs(1));
        let window = window_for(100_000.0, MAX_PACE_WINDOW);
        let (sent, wakes) = run(&schedule, window, |_| 0.9);
        assert_eq!(sent.len(), 100_000, "every hit, once");
        for (i, (n, due, _)) in sent.iter().enumerate() {
            assert_eq!(*n, i as u64, "in sequence");
            assert_eq!(*due, Duration::from_micros(10 * i as u64), "each keeps its scheduled time");
        }
        assert!(within(&sent, window));
        let (first, rest) = sent.split_at(1_000);
        assert!(on_time(first), "exact until the thread has been measured");
        assert!(!on_time(rest), "coalesced after");
        // 1,000 exact wake-ups, then about one per window (990 ms / 40 µs) instead of per hit.
        assert!((25_000..=26_500).contains(&wakes), "{wakes} wake-ups");
    }

    #[test]
    fn a_thread_with_time_to_spare_stays_exact_at_high_rates() {
        let schedule = Schedule::constant(100_000.0, Duration::from_secs(1));
        let (sent, wakes) = run(&schedule, window_for(100_000.0, MAX_PACE_WINDOW), |_| 0.8);
        assert_eq!(sent.len(), 100_000);
        assert!(on_time(&sent));
        assert_eq!(wakes, 99_999);
    }

    #[test]
    fn the_window_engages_when_busy_and_lets_go_only_when_idle() {
        // 50,000/s for 1.5 s: the thread is 90% busy for 0.5 s (engages), 60% for 0.5 s (still
        // coalescing: coalescing itself lowered it), then 40% (back to exact).
        let schedule = Schedule::constant(50_000.0, Duration::from_millis(1_500));
        let window = window_for(50_000.0, MAX_PACE_WINDOW);
        assert_eq!(window, Duration::from_micros(80));
        let busy = |t: Duration| match t.as_millis() {
            0..500 => 0.9,
            500..1_000 => 0.6,
            _ => 0.4,
        };
        let (sent, _) = run(&schedule, window, busy);
        assert_eq!(sent.len(), 75_000);
        assert!(within(&sent, window));
        let phase = |from_ms: u64, to_ms: u64| &sent[(from_ms * 50) as usize..(to_ms * 50) as usize];
        assert!(on_time(phase(0, 10)), "exact before the first measurement");
        assert!(!on_time(phase(20, 500)) && !on_time(phase(500, 1_000)), "coalesced while busy");
        assert!(on_time(phase(1_030, 1_500)), "exact once the thread is idle again");
    }

    #[test]
    fn a_rate_step_up_coalesces_only_where_hits_are_close() {
        // 1,000/s then 50,000/s, half a second each, with the window of the peak on a busy
        // thread: the first half is sent on time, the second within the window.
        let schedule = Schedule::rate_steps(&[1_000.0, 50_000.0], Duration::from_millis(500), None);
        let window = window_for(50_000.0, MAX_PACE_WINDOW);
        let (sent, _) = run(&schedule, window, |_| 0.9);
        assert_eq!(sent.len(), 500 + 25_000);
        let (slow, fast) = sent.split_at(500);
        assert!(on_time(slow));
        assert!(within(fast, window));
        assert!(!on_time(fast), "the fast half is coalesced");
    }

    #[test]
    fn no_window_never_reads_the_cpu_clock() {
        struct Panics;
        impl BusyMeter for Panics {
            fn cpu(&mut self) -> Option<Duration> {
                panic!("read the CPU clock with no window")
            }
        }
        let now = Cell::new(Duration::ZERO);
        let fake = FakeClock { now: &now, oversleep: Duration::ZERO, wakes: 0 };
        let mut clock = Coalesced::with_meter(fake, Duration::ZERO, Panics);
        let schedule = Schedule::constant(100_000.0, Duration::from_millis(100));
        let stop = CancellationToken::new();
        let mut count = 0;
        let mut record = |_, _| {
            count += 1;
            true
        };
        let fut = pacer(&schedule, 0, 1, &mut clock, &stop, &mut record);
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
        assert_eq!(count, 10_000);
    }
}
