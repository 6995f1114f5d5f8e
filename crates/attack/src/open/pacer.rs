//! The open model's pacer: a pure loop over the schedule and a clock, and the clocks it runs on.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::schedule::Schedule;

/// Where the pacer hands its hits: something that takes hit `n`, due at `due` after the start,
/// and says whether to go on.
pub(crate) trait Dispatch {
    async fn dispatch(&mut self, n: u64, due: Duration) -> bool;
}

/// Test dispatchers are plain closures.
#[cfg(test)]
impl<F: FnMut(u64, Duration) -> bool> Dispatch for F {
    async fn dispatch(&mut self, n: u64, due: Duration) -> bool {
        self(n, due)
    }
}

/// Time as the pacer sees it: elapsed since the start, and a way to wait.
pub(crate) trait PaceClock {
    fn elapsed(&self) -> Duration;
    /// Waits until `at` after the start, or less (the pacer re-checks and waits again).
    async fn sleep_until(&mut self, at: Duration);
}

/// tokio's timer: millisecond ticks, rounded up. The fallback where timerfd is missing, and the
/// clock the tests pause and advance.
pub(crate) struct TokioClock {
    pub(crate) start: tokio::time::Instant,
}

impl PaceClock for TokioClock {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        tokio::time::sleep_until(self.start + at).await;
    }
}

/// A timerfd watched by the thread's own event loop: wakes within tens of microseconds, where
/// tokio's timer wheel has millisecond ticks and rounds up (which made every send 0.5-1.5 ms late
/// and added that to every latency), and costs no hand-off between threads (a separate pacer
/// thread cost two wake-ups per request at 2000/s).
pub(crate) struct TimerFdClock {
    start: std::time::Instant,
    fd: tokio::io::unix::AsyncFd<TimerFd>,
}

struct TimerFd(nix::sys::timerfd::TimerFd);

impl std::os::fd::AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd;
        self.0.as_fd().as_raw_fd()
    }
}

impl TimerFdClock {
    pub(crate) fn new(start: std::time::Instant) -> std::io::Result<TimerFdClock> {
        use nix::sys::timerfd::{ClockId, TimerFlags};
        let fd = nix::sys::timerfd::TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        // `AsyncFd::new` is deprecated for types that may close their fd while registered; ours
        // owns it for the AsyncFd's whole life, which is the condition `register` asks for.
        #[allow(deprecated)]
        let fd = tokio::io::unix::AsyncFd::new(TimerFd(fd))?;
        Ok(TimerFdClock { start, fd })
    }
}

impl PaceClock for TimerFdClock {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        use nix::sys::time::TimeSpec;
        use nix::sys::timerfd::{Expiration, TimerSetTimeFlags};
        let wait = at.saturating_sub(self.start.elapsed()).min(Duration::from_millis(50));
        if wait.is_zero() {
            return;
        }
        let timer = &self.fd.get_ref().0;
        if timer.set(Expiration::OneShot(TimeSpec::from_duration(wait)), TimerSetTimeFlags::empty()).is_err() {
            // Cannot happen with a valid relative time; fall back to the coarse timer.
            tokio::time::sleep(wait).await;
            return;
        }
        // No read(2) of the expiry count: re-arming with timerfd_settime resets it, and tokio
        // watches the fd edge-triggered, so clearing the cached readiness is enough. (One system
        // call less per wake-up.)
        loop {
            let Ok(mut guard) = self.fd.readable().await else { return };
            guard.clear_ready();
            if self.start.elapsed() >= at {
                return;
            }
            // Woken early (readiness left from before this sleep): re-arm for the rest.
            let rest = at.saturating_sub(self.start.elapsed());
            if rest.is_zero()
                || timer.set(Expiration::OneShot(TimeSpec::from_duration(rest)), TimerSetTimeFlags::empty()).is_err()
            {
                return;
            }
        }
    }
}

/// A clock that wakes only at whole ticks from the start (`--pace-tick`), so that the hits due
/// within a tick go out together at its end, as h2load's `--rps` (10 ms) and oha's (tokio's 1 ms
/// wheel) do. At 2,000/s over h2c a 10 ms tick cut the CPU per request from 86 to 26 ms per 1000,
/// h2load's figure. Each hit keeps its scheduled time, so the added lag shows in latency. A zero
/// tick is `clock` itself.
pub(crate) struct Ticked<C> {
    pub(crate) clock: C,
    pub(crate) tick: Duration,
}

impl<C: PaceClock> PaceClock for Ticked<C> {
    fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        let tick = self.tick.as_nanos();
        let at = if tick == 0 { at } else { Duration::from_nanos((at.as_nanos().div_ceil(tick) * tick) as u64) };
        self.clock.sleep_until(at).await;
    }
}

/// Follows `schedule` for the hits `first`, `first + stride`, ...: hands each to `dispatch` with
/// its due time (from the start), in batches of whatever is due at each wake-up, then sleeps
/// until the next is due. A late wake-up sends the overdue hits at once with their original times,
/// so the schedule never drifts. Returns true when stopped early (by `stop`, or by `dispatch`
/// returning false).
pub(crate) async fn pacer(
    schedule: &Schedule,
    first: u64,
    stride: u64,
    clock: &mut impl PaceClock,
    stop: &CancellationToken,
    dispatch: &mut impl Dispatch,
) -> bool {
    let total = schedule.total_hits();
    let mut n = first;
    loop {
        if stop.is_cancelled() {
            return true;
        }
        let due = schedule.due_by(clock.elapsed());
        while n < due {
            if !dispatch.dispatch(n, schedule.due(n).expect("n < total")).await {
                return true;
            }
            n += stride;
        }
        let Some(next) = schedule.due(n) else { return n < total };
        clock.sleep_until(next).await;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    /// A virtual clock: sleeping jumps to the wake-up time, plus a fixed oversleep; it counts
    /// its wake-ups (the coalescing tests use it too).
    pub(crate) struct FakeClock<'a> {
        pub(crate) now: &'a Cell<Duration>,
        pub(crate) oversleep: Duration,
        pub(crate) wakes: usize,
    }

    impl PaceClock for FakeClock<'_> {
        fn elapsed(&self) -> Duration {
            self.now.get()
        }
        async fn sleep_until(&mut self, at: Duration) {
            self.wakes += 1;
            self.now.set(self.now.get().max(at + self.oversleep));
        }
    }

    /// Runs the pacer on a virtual clock; `stall` makes dispatching hit N take that long.
    /// Returns (n, due, sent at) per hit.
    fn run_pacer(
        schedule: &Schedule,
        oversleep: Duration,
        stall: Option<(u64, Duration)>,
        first: u64,
        stride: u64,
    ) -> Vec<(u64, Duration, Duration)> {
        let now = Cell::new(Duration::ZERO);
        let mut clock = FakeClock { now: &now, oversleep, wakes: 0 };
        let mut sent = Vec::new();
        let stop = CancellationToken::new();
        let mut record = |n, due| {
            sent.push((n, due, now.get()));
            if let Some((at, pause)) = stall {
                if n == at {
                    now.set(now.get() + pause);
                }
            }
            true
        };
        let fut = pacer(schedule, first, stride, &mut clock, &stop, &mut record);
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
        sent
    }

    #[test]
    fn pacer_sends_exactly_the_schedule_on_time() {
        let sent = run_pacer(&Schedule::constant(500.0, Duration::from_secs(4)), Duration::ZERO, None, 0, 1);
        assert_eq!(sent.len(), 2000);
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!(*n, i as u64);
            assert_eq!(*due, Duration::from_millis(2 * i as u64));
            assert_eq!(at, due, "hit {i} sent off schedule");
        }
    }

    #[test]
    fn threads_share_the_schedule_by_stride() {
        let schedule = Schedule::constant(500.0, Duration::from_secs(1));
        let a = run_pacer(&schedule, Duration::ZERO, None, 0, 2);
        let b = run_pacer(&schedule, Duration::ZERO, None, 1, 2);
        assert_eq!(a.len() + b.len(), 500);
        let mut all: Vec<u64> = a.iter().chain(&b).map(|s| s.0).collect();
        all.sort_unstable();
        assert!(all.iter().enumerate().all(|(i, n)| *n == i as u64));
        assert!(b.iter().all(|(n, due, at)| *due == Duration::from_millis(2 * n) && at == due));
    }

    #[test]
    fn pacer_batches_what_is_due_when_it_wakes_late() {
        // 10,000/s, and every sleep overshoots by 1 ms: hits go out in batches of about 10, each
        // still stamped with its own due time.
        let sent =
            run_pacer(&Schedule::constant(10_000.0, Duration::from_secs(1)), Duration::from_millis(1), None, 0, 1);
        assert_eq!(sent.len(), 10_000);
        let wakes = sent.windows(2).filter(|w| w[1].2 != w[0].2).count() + 1;
        assert!((900..=1000).contains(&wakes), "{wakes} wake-ups");
        assert!(sent.iter().enumerate().all(|(i, s)| s.1 == Duration::from_micros(100 * i as u64)));
        assert!(sent.iter().all(|s| s.2 >= s.1 && s.2 - s.1 <= Duration::from_micros(1100)));
    }

    #[test]
    fn a_pace_tick_sends_each_ticks_hits_together_at_its_end() {
        // 1000/s for 1 s (a hit every 1 ms, the first at 0), ticks of 10 ms: a wake-up at 0 and
        // at each tick's end; every hit leaves at the first tick end at or after its due time.
        let now = Cell::new(Duration::ZERO);
        let mut clock = Ticked {
            clock: FakeClock { now: &now, oversleep: Duration::ZERO, wakes: 0 },
            tick: Duration::from_millis(10),
        };
        let mut sent = Vec::new();
        let mut record = |n, due| {
            sent.push((n, due, now.get()));
            true
        };
        let schedule = Schedule::constant(1000.0, Duration::from_secs(1));
        let stop = CancellationToken::new();
        let fut = pacer(&schedule, 0, 1, &mut clock, &stop, &mut record);
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
        assert_eq!(sent.len(), 1000);
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!((*n, *due), (i as u64, Duration::from_millis(i as u64)), "due times stand");
            assert_eq!(*at, Duration::from_millis((i as u64).div_ceil(10) * 10), "hit {i}");
        }
        let wakes = sent.windows(2).filter(|w| w[1].2 != w[0].2).count() + 1;
        assert_eq!(wakes, 101);
    }

    #[test]
    fn pacer_catches_up_after_a_stall_keeping_scheduled_times() {
        // 1000/s for 1 s; dispatching hit 100 stalls for 300 ms.
        let stall = Some((100, Duration::from_millis(300)));
        let sent = run_pacer(&Schedule::constant(1000.0, Duration::from_secs(1)), Duration::ZERO, stall, 0, 1);
        assert_eq!(sent.len(), 1000);
        assert_eq!(sent[101].1, Duration::from_millis(101));
        assert_eq!(sent[101].2, Duration::from_millis(400));
        // The overdue hits went out in one burst at 400 ms, then the pacer was back on schedule.
        assert_eq!(sent[400].2, Duration::from_millis(400));
        assert_eq!(sent[401].2, Duration::from_millis(401));
    }

    #[test]
    fn pacer_follows_a_ramp() {
        let schedule = Schedule::ramp(100.0, 1000.0, Duration::from_secs(2), Duration::from_secs(3));
        let sent = run_pacer(&schedule, Duration::ZERO, None, 0, 1);
        assert_eq!(sent.len(), 1100 + 1000);
        let in_window = |from: f64, to: f64| sent.iter().filter(|s| (from..to).contains(&s.2.as_secs_f64())).count();
        // Around t = 0.5 s the rate is 325/s; in the hold it is 1000/s.
        let early = in_window(0.4, 0.6);
        assert!((64..=66).contains(&early), "{early}");
        assert_eq!(in_window(2.0, 2.5), 500);
    }

    #[test]
    fn pacer_stops_when_told_or_when_dispatch_fails() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let schedule = Schedule::constant(100.0, Duration::from_secs(10));
        let stop = CancellationToken::new();
        let now = Cell::new(Duration::ZERO);
        let mut count = 0;
        let stopped = rt.block_on(pacer(
            &schedule,
            0,
            1,
            &mut FakeClock { now: &now, oversleep: Duration::ZERO, wakes: 0 },
            &stop,
            &mut |n, _| {
                count += 1;
                if n == 24 {
                    stop.cancel();
                }
                true
            },
        ));
        assert!(stopped);
        assert_eq!(count, 25);
        let now = Cell::new(Duration::ZERO);
        let mut clock = FakeClock { now: &now, oversleep: Duration::ZERO, wakes: 0 };
        let stopped = rt.block_on(pacer(&schedule, 0, 1, &mut clock, &CancellationToken::new(), &mut |n, _| n < 5));
        assert!(stopped);
    }

    /// Records when (on tokio's clock) each hit was dispatched; dispatching hit `stall.0` takes
    /// `stall.1` of (paused, auto-advancing) time, as a full job queue would.
    struct Recorder {
        start: tokio::time::Instant,
        sent: Vec<(u64, Duration, Duration)>,
        stall: Option<(u64, Duration)>,
    }

    impl Dispatch for Recorder {
        async fn dispatch(&mut self, n: u64, due: Duration) -> bool {
            self.sent.push((n, due, self.start.elapsed()));
            if let Some((at, pause)) = self.stall {
                if n == at {
                    tokio::time::sleep(pause).await;
                }
            }
            true
        }
    }

    async fn run_on_tokio_clock(schedule: &Schedule, stall: Option<(u64, Duration)>) -> Vec<(u64, Duration, Duration)> {
        let start = tokio::time::Instant::now();
        let mut clock = TokioClock { start };
        let mut recorder = Recorder { start, sent: Vec::new(), stall };
        let stopped = pacer(schedule, 0, 1, &mut clock, &CancellationToken::new(), &mut recorder).await;
        assert!(!stopped);
        recorder.sent
    }

    #[tokio::test(start_paused = true)]
    async fn paused_clock_500_per_second_for_4s_is_2000_sends_on_time() {
        let start = tokio::time::Instant::now();
        let sent = run_on_tokio_clock(&Schedule::constant(500.0, Duration::from_secs(4)), None).await;
        assert_eq!(sent.len(), 2000);
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!((*n, *due), (i as u64, Duration::from_millis(2 * i as u64)));
            assert_eq!(at, due, "hit {i} sent off schedule");
        }
        // The run took the schedule's length of (virtual) time: no drift.
        assert_eq!(start.elapsed(), Duration::from_millis(3998));
    }

    #[tokio::test(start_paused = true)]
    async fn paused_clock_ramp_and_steps_follow_the_rate() {
        // 100 -> 1000/s over 2 s, then 1 s at 1000/s: 1100 + 1000 hits.
        let ramp = Schedule::ramp(100.0, 1000.0, Duration::from_secs(2), Duration::from_secs(3));
        let sent = run_on_tokio_clock(&ramp, None).await;
        assert_eq!(sent.len(), 2100);
        // tokio's timer rounds up to the millisecond: never early, at most 1 ms late.
        assert!(sent.iter().all(|(_, due, at)| at >= due && *at - *due <= Duration::from_millis(1)));
        let per_tenth = |from: f64| sent.iter().filter(|s| (from..from + 0.1).contains(&s.1.as_secs_f64())).count();
        // The rate at t is 100 + 450 t per second: ~32 in [0.5, 0.6), ~77 in [1.5, 1.6), 100 in the hold.
        assert!((31..=34).contains(&per_tenth(0.5)), "{}", per_tenth(0.5));
        assert!((76..=79).contains(&per_tenth(1.5)), "{}", per_tenth(1.5));
        assert_eq!(per_tenth(2.5), 100);

        let steps = Schedule::rate_steps(&[400.0, 800.0], Duration::from_secs(1), None);
        let sent = run_on_tokio_clock(&steps, None).await;
        assert_eq!(sent.len(), 1200);
        assert_eq!(sent.iter().filter(|s| s.1 < Duration::from_secs(1)).count(), 400);
    }

    #[tokio::test(start_paused = true)]
    async fn paused_clock_stall_is_caught_up_with_the_original_times() {
        // 1000/s for 1 s; dispatching hit 100 blocks for 300 ms.
        let sent = run_on_tokio_clock(
            &Schedule::constant(1000.0, Duration::from_secs(1)),
            Some((100, Duration::from_millis(300))),
        )
        .await;
        assert_eq!(sent.len(), 1000);
        // Hits 101..=400 were overdue: sent in one burst at 400 ms, each with its own due time,
        // and then back on schedule.
        assert!(sent[101..=400].iter().all(|s| s.2 == Duration::from_millis(400)));
        assert_eq!(sent[101].1, Duration::from_millis(101));
        assert_eq!(sent[401].2, Duration::from_millis(401));
        assert!(sent.iter().enumerate().all(|(i, s)| s.1 == Duration::from_millis(i as u64)));
    }

    #[test]
    fn timerfd_clock_wakes_on_time() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut clock = TimerFdClock::new(std::time::Instant::now()).unwrap();
            for ms in [3u64, 7, 20] {
                let at = Duration::from_millis(ms);
                clock.sleep_until(at).await;
                let now = clock.elapsed();
                // Never early; late only by scheduling noise (generous bound for busy machines).
                assert!(now >= at && now < at + Duration::from_millis(30), "{now:?} for {at:?}");
            }
        });
    }
}
