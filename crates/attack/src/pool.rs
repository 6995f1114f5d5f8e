//! The open model's workers: each event-loop thread paces its share of the schedule and hands
//! the hits to its own pool of workers through a bounded queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::AttackConfig;
use crate::pacer::{pacer, Dispatch, Ticked, TimerFdClock, TokioClock};
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
    let max_workers = config.max_workers.unwrap_or(crate::config::DEFAULT_MAX_WORKERS);
    let n = runtimes.handles.len().min(max_workers).max(1);
    let mut pacers = Vec::new();
    for k in 0..n {
        let share = |total: usize| total / n + usize::from(k < total % n);
        let (shared, schedule, stop) = (Arc::clone(shared), schedule.clone(), stop.clone());
        let (first_workers, max_local) = (share(workers.min(max_workers)).max(1), share(max_workers).max(1));
        pacers.push(runtimes.handle(k).spawn(async move {
            let (tx, rx) = async_channel::bounded::<Job>(JOB_QUEUE);
            let mut pool = Pool {
                shared,
                rx,
                tx,
                idle: Arc::new(AtomicUsize::new(0)),
                window: GrowthWindow::new(),
                workers: Vec::new(),
                max: max_local,
                slot: k,
                stride: n,
                stop: stop.clone(),
            };
            for _ in 0..first_workers {
                pool.grow();
            }
            // Thread k of n, worker I of N: hits I + N*k, I + N*(k + n) ... of the global schedule.
            let (first, stride) = (shard.index + shard.count * k as u64, shard.count * n as u64);
            let stopped = match TimerFdClock::new(pool.shared.start.into_std()) {
                Ok(clock) => pacer(&schedule, first, stride, &mut Ticked { clock, tick }, &stop, &mut pool).await,
                // No timerfd (a sandbox that forbids it): tokio's coarser timer still keeps the
                // schedule, only with up to a millisecond of lag per send.
                Err(_) => {
                    let clock = TokioClock { start: pool.shared.start };
                    pacer(&schedule, first, stride, &mut Ticked { clock, tick }, &stop, &mut pool).await
                }
            };
            pool.tx.close();
            for w in pool.workers {
                let _ = w.await;
            }
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
struct Pool {
    shared: Arc<Shared>,
    rx: async_channel::Receiver<Job>,
    tx: async_channel::Sender<Job>,
    idle: Arc<AtomicUsize>,
    window: GrowthWindow,
    workers: Vec<tokio::task::JoinHandle<()>>,
    max: usize,
    slot: usize,
    stride: usize,
    stop: CancellationToken,
}

impl Pool {
    fn grow(&mut self) {
        let slot = self.slot + self.stride * self.workers.len();
        let mut w = Worker::new(Arc::clone(&self.shared), slot);
        let (rx, idle) = (self.rx.clone(), Arc::clone(&self.idle));
        self.workers.push(tokio::spawn(async move {
            loop {
                idle.fetch_add(1, Ordering::Relaxed);
                let job = rx.recv().await;
                idle.fetch_sub(1, Ordering::Relaxed);
                match job {
                    Ok(job) => w.execute(job).await,
                    Err(_) => break,
                }
            }
        }));
    }
}

impl Dispatch for Pool {
    async fn dispatch(&mut self, seq: u64, due: Duration) -> bool {
        // Grow the pool when the queued jobs outnumber the idle workers and the thread has time
        // for more connections. Otherwise the hit waits: for the generator when the thread is
        // saturated, for the target when the pool is at its cap (one refused only by this
        // window's budget is the pool still growing).
        if self.tx.len() >= self.idle.load(Ordering::Relaxed) {
            let gauges = &self.shared.gauges;
            if self.window.saturated() {
                gauges.waits_for_generator.fetch_add(1, Ordering::Relaxed);
            } else if self.workers.len() >= self.max {
                gauges.waits_for_target.fetch_add(1, Ordering::Relaxed);
            } else if self.window.grown < GROW_PER_WINDOW {
                self.window.grown += 1;
                self.grow();
            }
        }
        let job = Job { seq, scheduled: self.shared.start + due };
        tokio::select! {
            sent = self.tx.send(job) => sent.is_ok(),
            _ = self.stop.cancelled() => false,
        }
    }
}

/// The thread's current growth window: how busy it was in the last one (CPU time over wall time,
/// read once per `BUSY_WINDOW`: reading the thread's CPU clock is a system call), and the
/// workers added in this one.
struct GrowthWindow {
    since: std::time::Instant,
    cpu: Option<Duration>,
    saturated: bool,
    grown: usize,
}

impl GrowthWindow {
    fn new() -> GrowthWindow {
        GrowthWindow { since: std::time::Instant::now(), cpu: thread_cpu(), saturated: false, grown: 0 }
    }

    fn saturated(&mut self) -> bool {
        let wall = self.since.elapsed();
        if wall >= BUSY_WINDOW {
            let cpu = thread_cpu();
            if let (Some(now), Some(before)) = (cpu, self.cpu) {
                self.saturated = now.saturating_sub(before).as_secs_f64() >= BUSY_LIMIT * wall.as_secs_f64();
            }
            (self.since, self.cpu, self.grown) = (std::time::Instant::now(), cpu, 0);
        }
        self.saturated
    }
}

/// The calling thread's CPU time (user and system).
fn thread_cpu() -> Option<Duration> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32))
}
