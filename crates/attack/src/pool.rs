//! The open model's workers: each event-loop thread paces its share of the schedule and hands
//! the hits to its own pool of workers through a bounded queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::pacer::{pacer, Dispatch, TimerFdClock, TokioClock};
use crate::runtimes::Runtimes;
use crate::schedule::Schedule;
use crate::worker::{Job, Shared, Worker};

/// Jobs waiting for a worker, at most; beyond this the pacer waits (their scheduled times stand,
/// so the wait shows in latency and lag, and memory stays bounded).
const JOB_QUEUE: usize = 16_384;
/// The open model. Each event-loop thread paces its share of the schedule (hits `k`, `k + N`,
/// `k + 2N` ... of N threads) and hands them to its own pool of workers, which grows (up to its
/// share of `max_workers`) whenever the queued jobs outnumber the idle workers. Returns whether
/// it was stopped before the schedule ran out.
pub(crate) async fn pace(
    shared: &Arc<Shared>,
    schedule: &Schedule,
    shard: crate::shard::Shard,
    workers: usize,
    max_workers: Option<usize>,
    runtimes: &Runtimes,
    stop: &CancellationToken,
) -> bool {
    let max_workers = max_workers.unwrap_or(crate::config::DEFAULT_MAX_WORKERS);
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
                Ok(mut clock) => pacer(&schedule, first, stride, &mut clock, &stop, &mut pool).await,
                // No timerfd (a sandbox that forbids it): tokio's coarser timer still keeps the
                // schedule, only with up to a millisecond of lag per send.
                Err(_) => {
                    let mut clock = TokioClock { start: pool.shared.start };
                    pacer(&schedule, first, stride, &mut clock, &stop, &mut pool).await
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
        // Grow the pool when the queued jobs outnumber the idle workers.
        if self.tx.len() >= self.idle.load(Ordering::Relaxed) && self.workers.len() < self.max {
            self.grow();
        }
        let job = Job { seq, scheduled: self.shared.start + due };
        tokio::select! {
            sent = self.tx.send(job) => sent.is_ok(),
            _ = self.stop.cancelled() => false,
        }
    }
}
