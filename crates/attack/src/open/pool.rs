//! The open model's workers: each event-loop thread paces its share of the schedule and hands
//! the hits to its own pool of workers, the worker idle last first (`handoff`), through a
//! bounded backlog when none is idle.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::AttackConfig;
use crate::cpu::thread_cpu;
use crate::open::coalesce::{window_for, Coalesced};
use crate::open::handoff::{Handoff, Refused};
use crate::open::pacer::{pacer, Dispatch, Ticked, TimerFdClock, TokioClock};
use crate::runtimes::Runtimes;
use crate::schedule::Schedule;
use crate::worker::{Job, Shared, Worker};

/// Jobs waiting for a worker, at most; beyond this the pacer waits (their scheduled times stand,
/// so the wait shows in latency and lag, and memory stays bounded).
const JOB_QUEUE: usize = 16_384;
/// A thread this busy (CPU time over wall time, over the last `BUSY_WINDOW`) is itself the
/// limit: its workers wait for the event loop, not for the server, and another connection would
/// only add work. Growing whenever jobs queued fed itself when the thread was the limit: each
/// batch of overdue hits added workers, opening their connections slowed the thread, which made
/// the next batch bigger (60,000/s against nginx on one core: 1,024 connections and p99 82-94 ms;
/// with these two rules 74-202 connections, p99 1.5-8 ms, and 90,000/s held).
const BUSY_LIMIT: f64 = 0.9;
const BUSY_WINDOW: Duration = Duration::from_millis(10);
/// Workers a thread adds per `BUSY_WINDOW` at most (6,400 a second): fast enough for a slow
/// server's needs, slow enough that a saturated thread is seen before it opens hundreds.
const GROW_PER_WINDOW: usize = 64;
/// A queue the busy workers will drain within this (at the service time of the last window) needs
/// no new connection: a burst of overdue hits after a stall of the thread (a kernel thread taking
/// the core for a few milliseconds) otherwise opened up to 64 connections per window at the
/// moment both ends were catching up, and the setup cost stretched a 4 ms stall into 30 ms of
/// late sends (45,000/s against nginx: 330 connections opened where 74 served the rest).
const DRAIN_WITHIN: Duration = Duration::from_millis(1);
/// The open model's pacer threads out of `threads`, and the coalescing window each one uses:
/// its share of the schedule's peak rate decides it (none under a `--pace-tick`, which already
/// spaces the wake-ups).
pub(crate) fn pacers(config: &AttackConfig, schedule: &Schedule, threads: usize) -> (usize, Duration) {
    let max_workers = config.in_flight_cap();
    let n = threads.min(max_workers).max(1);
    let share = schedule.peak_rate() / (config.shard.count as f64 * n as f64);
    let window = if config.pace_tick.is_zero() { window_for(share, config.pace_window) } else { Duration::ZERO };
    (n, window)
}

/// The open model. Each event-loop thread paces its share of the schedule (hits `k`, `k + N`,
/// `k + 2N` ... of N threads) and hands them to its own pool of workers, which grows (up to its
/// share of `max_workers`) whenever the queued jobs outnumber the idle workers, at most
/// `GROW_PER_WINDOW` per window and never while the thread is saturated. Returns whether it was
/// stopped before the schedule ran out.
pub(crate) async fn pace(
    shared: &Arc<Shared>,
    schedule: &Schedule,
    config: &AttackConfig,
    runtimes: &Runtimes,
    stop: &CancellationToken,
) -> bool {
    let (shard, workers, tick) = (config.shard, config.workers, config.pace_tick);
    let max_workers = config.in_flight_cap();
    let (n, window) = pacers(config, schedule, runtimes.handles.len());
    let mut pacers = Vec::new();
    for k in 0..n {
        let share = |total: usize| total / n + usize::from(k < total % n);
        let (shared, schedule, stop) = (Arc::clone(shared), schedule.clone(), stop.clone());
        let (first_workers, max_local) = (share(workers.min(max_workers)).max(1), share(max_workers).max(1));
        pacers.push(runtimes.handle(k).spawn(async move {
            let late = Duration::from_micros(results::LATE_SEND_US) + tick + window;
            let mut pool = Pool::start(shared, (k, n), first_workers, max_local, late, stop.clone());
            // Thread k of n, worker I of N: hits I + N*k, I + N*(k + n) ... of the global schedule.
            let (first, stride) = (shard.index + shard.count * k as u64, shard.count * n as u64);
            let stopped = match TimerFdClock::new(pool.shared.start.into_std()) {
                Ok(clock) => {
                    let clock = Coalesced::new(clock, window);
                    pacer(&schedule, first, stride, &mut Ticked { clock, tick }, &stop, &mut pool).await
                }
                // No timerfd (a sandbox that forbids it): tokio's coarser timer still keeps the
                // schedule, only with up to a millisecond of lag per send.
                Err(_) => {
                    let clock = TokioClock { start: pool.shared.start };
                    pacer(&schedule, first, stride, &mut Ticked { clock, tick }, &stop, &mut pool).await
                }
            };
            pool.finish().await;
            stopped
        }));
    }
    let mut stopped = false;
    for p in pacers {
        stopped |= p.await.unwrap_or(true);
    }
    stopped
}

/// One thread's workers in the open model, fed by its pacer through a bounded queue.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    handoff: Arc<Handoff>,
    idle: Arc<AtomicUsize>,
    /// The workers' exchanges: how long they take, for the drain estimate.
    service: Arc<ServiceMeter>,
    window: GrowthWindow,
    workers: Vec<tokio::task::JoinHandle<()>>,
    max: usize,
    slot: usize,
    stride: usize,
    stop: CancellationToken,
    /// Cancelled when no more jobs will come: a worker still connecting ahead gives up.
    ending: CancellationToken,
    /// A hit handed over later than this after it was due (and after the queue last let the
    /// pacer go) is late by the generator's own doing.
    late: Duration,
    /// When the queue last let a blocked pacer go: until then its lateness was the target's
    /// (every worker busy, the queue full).
    free_since: tokio::time::Instant,
    /// The stall being seen, if any.
    stall: Option<results::Stall>,
}

impl Pool {
    /// Thread `slot` of `stride` threads' pool, with `first` workers started, at most `max`; a
    /// hit handed over `late` after it was due, with the queue open, is a stall of the generator.
    pub(crate) fn start(
        shared: Arc<Shared>,
        (slot, stride): (usize, usize),
        first: usize,
        max: usize,
        late: Duration,
        stop: CancellationToken,
    ) -> Pool {
        let free_since = shared.start;
        let mut pool = Pool {
            shared,
            handoff: Handoff::new(JOB_QUEUE),
            idle: Arc::new(AtomicUsize::new(0)),
            service: Arc::new(ServiceMeter::default()),
            window: GrowthWindow::new(),
            workers: Vec::new(),
            max,
            slot,
            stride,
            stop,
            ending: CancellationToken::new(),
            late,
            free_since,
            stall: None,
        };
        for _ in 0..first {
            pool.grow();
        }
        pool
    }

    /// No more jobs: waits for the workers to finish theirs.
    pub(crate) async fn finish(mut self) {
        self.close_stall();
        self.ending.cancel();
        self.handoff.close();
        for w in self.workers {
            let _ = w.await;
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn grow(&mut self) {
        let slot = self.slot + self.stride * self.workers.len();
        let mut w = Worker::new(Arc::clone(&self.shared), slot);
        let (handoff, idle, service) = (Arc::clone(&self.handoff), Arc::clone(&self.idle), Arc::clone(&self.service));
        let ending = self.ending.clone();
        // A worker still connecting counts as idle: the hits queued meanwhile are its to take,
        // or any other's that frees first, and need no further worker.
        idle.fetch_add(1, Ordering::Relaxed);
        self.workers.push(tokio::spawn(async move {
            // Unless the run ends first (a target whose SYNs go unanswered).
            tokio::select! {
                _ = w.connect_ahead() => {}
                _ = ending.cancelled() => {}
            }
            idle.fetch_sub(1, Ordering::Relaxed);
            loop {
                idle.fetch_add(1, Ordering::Relaxed);
                let job = handoff.recv().await;
                idle.fetch_sub(1, Ordering::Relaxed);
                match job {
                    Some(job) => service.add(w.execute(job).await),
                    None => break,
                }
            }
        }));
    }
}

impl Dispatch for Pool {
    async fn dispatch(&mut self, seq: u64, due: Duration) -> bool {
        let job = Job { seq, scheduled: self.shared.start + due, request: None };
        self.send(job).await
    }
}

impl Pool {
    /// Hands `job` to a worker (growing the pool when it may); false when stopped.
    pub(crate) async fn send(&mut self, job: Job) -> bool {
        self.judge_lateness(&job);
        // Grow the pool when the queued jobs outnumber the idle workers and the thread has time
        // for more connections. Otherwise the hit waits: for the generator when the thread is
        // saturated, for the target when the pool is at its cap (one refused only by this
        // window's budget is the pool still growing).
        let queued = self.handoff.backlog();
        let idle = self.idle.load(Ordering::Relaxed);
        if queued >= idle {
            self.window.roll(std::time::Instant::now(), thread_cpu, &self.service);
            if self.window.drains(queued + 1, self.workers.len()) {
                return self.queue(job).await;
            }
            // A worker for every job without one, this hit's and those queued before it: one
            // per hit would leave a queue that formed (a hit the drain estimate held back) as
            // deep for as long as no worker frees, every later hit late by as much.
            let mut held = Growth::Grow;
            for _ in idle..=queued {
                held = self.window.decide(self.workers.len() >= self.max);
                if held != Growth::Grow {
                    break;
                }
                self.grow();
            }
            let gauges = &self.shared.gauges;
            match held {
                Growth::WaitForGenerator => _ = gauges.waits_for_generator.fetch_add(1, Ordering::Relaxed),
                Growth::WaitForTarget => _ = gauges.waits_for_target.fetch_add(1, Ordering::Relaxed),
                Growth::Grow | Growth::BudgetSpent => {}
            }
        }
        self.queue(job).await
    }

    async fn queue(&mut self, job: Job) -> bool {
        let job = match self.handoff.try_send(job) {
            Ok(()) => return true,
            Err(Refused::Closed) => return false,
            Err(Refused::Full(job)) => job,
        };
        // Every worker busy and the backlog full: the pacer waits for the target, and the hits
        // due meanwhile are late by the target's doing.
        let sent = tokio::select! {
            sent = self.handoff.send(job) => sent,
            _ = self.stop.cancelled() => false,
        };
        self.free_since = tokio::time::Instant::now();
        sent
    }

    /// A hit handed over later than `late` after it was due, while the pacer was free to hand
    /// it over (the queue had room), is the generator's: the process was stopped, its core
    /// taken, its pacer starved. Consecutive ones make one stall, closed by a hit on time.
    fn judge_lateness(&mut self, job: &Job) {
        let now = tokio::time::Instant::now();
        let behind = now.saturating_duration_since(job.scheduled.max(self.free_since));
        if behind <= self.late {
            self.close_stall();
            return;
        }
        let at_us = job.scheduled.saturating_duration_since(self.shared.start).as_micros() as u64;
        let behind_us = behind.as_micros() as u64;
        let stall = self.stall.get_or_insert(results::Stall { at_us, length_us: 0, sends: 0 });
        stall.length_us = stall.length_us.max(behind_us);
        stall.sends += 1;
    }

    fn close_stall(&mut self) {
        if let Some(s) = self.stall.take() {
            self.shared.gauges.stalls.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        }
    }
}

/// The thread's current growth window: how busy it was in the last one (CPU time over wall time,
/// read once per `BUSY_WINDOW`: reading the thread's CPU clock is a system call), the workers'
/// mean exchange in it, and the workers added in this one.
struct GrowthWindow {
    since: std::time::Instant,
    cpu: Option<Duration>,
    saturated: bool,
    grown: usize,
    /// The workers' mean exchange in the last window; none when none ended in it.
    service: Option<Duration>,
}

/// The workers' exchanges since it was last taken: their count and total time.
#[derive(Default)]
struct ServiceMeter {
    count: AtomicUsize,
    total_ns: std::sync::atomic::AtomicU64,
}

impl ServiceMeter {
    fn add(&self, took: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_ns.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The mean since the last call, when there was an exchange.
    fn take_mean(&self) -> Option<Duration> {
        let n = self.count.swap(0, Ordering::Relaxed);
        let total = self.total_ns.swap(0, Ordering::Relaxed);
        (n > 0).then(|| Duration::from_nanos(total / n as u64))
    }
}

/// What a hit that found no idle worker does.
#[derive(Debug, PartialEq)]
enum Growth {
    Grow,
    /// The thread was saturated in the last window: another connection would only add work.
    WaitForGenerator,
    /// The thread's share of the cap is in use.
    WaitForTarget,
    /// This window's growth budget is spent: the pool is still growing.
    BudgetSpent,
}

impl GrowthWindow {
    fn new() -> GrowthWindow {
        GrowthWindow { since: std::time::Instant::now(), cpu: thread_cpu(), saturated: false, grown: 0, service: None }
    }

    /// Starts a new window at `now` when the last has passed: how busy the thread was (`cpu`
    /// reads its CPU time, called only then) and how long the exchanges took.
    fn roll(&mut self, now: std::time::Instant, cpu: impl FnOnce() -> Option<Duration>, service: &ServiceMeter) {
        let wall = now.saturating_duration_since(self.since);
        if wall >= BUSY_WINDOW {
            let cpu = cpu();
            if let (Some(used), Some(before)) = (cpu, self.cpu) {
                self.saturated = used.saturating_sub(before).as_secs_f64() >= BUSY_LIMIT * wall.as_secs_f64();
            }
            (self.since, self.cpu, self.grown) = (now, cpu, 0);
            // No exchange ended in the window: a frozen server, whose last mean says nothing.
            self.service = service.take_mean();
        }
    }

    /// Whether `workers` busy workers take the `queued` jobs within [`DRAIN_WITHIN`] at the last
    /// window's service time. Not knowing it (no exchange has ended yet), they do not.
    fn drains(&self, queued: usize, workers: usize) -> bool {
        match self.service {
            Some(s) if workers > 0 => s.saturating_mul(queued as u32) / workers as u32 <= DRAIN_WITHIN,
            _ => false,
        }
    }

    /// Whether to add a worker (after [`GrowthWindow::roll`]).
    fn decide(&mut self, at_cap: bool) -> Growth {
        if self.saturated {
            Growth::WaitForGenerator
        } else if at_cap {
            Growth::WaitForTarget
        } else if self.grown < GROW_PER_WINDOW {
            self.grown += 1;
            Growth::Grow
        } else {
            Growth::BudgetSpent
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A window that started at `t0` with `cpu0` of thread CPU time.
    fn window(t0: Instant, cpu0: Duration) -> GrowthWindow {
        GrowthWindow { since: t0, cpu: Some(cpu0), saturated: false, grown: 0, service: None }
    }

    impl GrowthWindow {
        /// Rolls the window at `now` (no exchange measured) and decides.
        fn at(&mut self, at_cap: bool, now: Instant, cpu: impl FnOnce() -> Option<Duration>) -> Growth {
            self.roll(now, cpu, &ServiceMeter::default());
            self.decide(at_cap)
        }
    }

    #[test]
    fn a_window_grows_its_budget_then_waits_for_the_next() {
        let t0 = Instant::now();
        let mut w = window(t0, Duration::ZERO);
        let no_read = || -> Option<Duration> { panic!("the CPU clock is read once per window") };
        for _ in 0..GROW_PER_WINDOW {
            assert_eq!(w.at(false, t0 + Duration::from_millis(1), no_read), Growth::Grow);
        }
        assert_eq!(w.at(false, t0 + Duration::from_millis(2), no_read), Growth::BudgetSpent);
        // The next window, 20% busy: a fresh budget.
        let next = t0 + BUSY_WINDOW;
        assert_eq!(w.at(false, next, || Some(BUSY_WINDOW / 5)), Growth::Grow);
        assert_eq!(w.at(true, next, no_read), Growth::WaitForTarget);
    }

    #[test]
    fn a_queue_the_busy_workers_drain_soon_needs_no_new_connection() {
        let t0 = Instant::now();
        let mut w = window(t0, Duration::ZERO);
        // Before any exchange has ended, nothing is known: the pool grows.
        assert!(!w.drains(10, 74));
        // 100 µs exchanges: 74 workers take 700 queued jobs in 946 µs; 20 take them in 3.5 ms.
        let meter = ServiceMeter::default();
        for _ in 0..10 {
            meter.add(Duration::from_micros(100));
        }
        w.roll(t0 + BUSY_WINDOW, || Some(Duration::ZERO), &meter);
        assert!(w.drains(700, 74));
        assert!(!w.drains(700, 20));
        // A window in which no exchange ended (a frozen server): not known, so the pool grows.
        w.roll(t0 + 2 * BUSY_WINDOW, || Some(Duration::ZERO), &meter);
        assert!(!w.drains(1, 74));
        // A slow server's 100 ms exchanges want growth.
        meter.add(Duration::from_millis(100));
        w.roll(t0 + 3 * BUSY_WINDOW, || Some(Duration::ZERO), &meter);
        assert!(!w.drains(1, 74));
        assert!(!w.drains(1, 0), "no worker drains nothing");
    }

    #[test]
    fn a_saturated_thread_adds_no_worker_until_it_has_time_again() {
        let t0 = Instant::now();
        let mut w = window(t0, Duration::ZERO);
        // 95% of the window on the CPU: saturated, whatever the cap.
        let busy = BUSY_WINDOW * 95 / 100;
        assert_eq!(w.at(false, t0 + BUSY_WINDOW, || Some(busy)), Growth::WaitForGenerator);
        assert_eq!(w.at(true, t0 + BUSY_WINDOW, || None), Growth::WaitForGenerator);
        // The next window 50% busy: it grows again.
        let t1 = t0 + 2 * BUSY_WINDOW;
        assert_eq!(w.at(false, t1, || Some(busy + BUSY_WINDOW / 2)), Growth::Grow);
        // No CPU clock (a sandbox): the last judgement stands, and growth goes on by the budget.
        assert_eq!(w.at(false, t1 + BUSY_WINDOW, || None), Growth::Grow);
    }
}
