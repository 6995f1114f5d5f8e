//! The replay's pacer: the reader thread's requests, each sent at its due time by the first
//! event loop's pool of workers (one pacer: a log's order is kept as written).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::reader::{read, Hit};
use super::{ReplaySpec, SharedStats};
use crate::config::AttackConfig;
use crate::open::coalesce::Coalesced;
use crate::open::pacer::{PaceClock, TimerFdClock, TokioClock};
use crate::open::pool::Pool;
use crate::runtimes::Runtimes;
use crate::worker::{Job, Shared};

/// Requests read ahead of their time, at most (in batches).
const READ_AHEAD: usize = 4_096;

/// Replays `spec`; returns whether it was stopped before the log's end.
pub(crate) async fn replay(
    shared: &Arc<Shared>,
    spec: &ReplaySpec,
    config: &AttackConfig,
    runtimes: &Runtimes,
    stats: &SharedStats,
    stop: &CancellationToken,
) -> bool {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Hit>>(READ_AHEAD / super::reader::BATCH);
    let headers = config.targets.first().map(|t| t.headers.clone()).unwrap_or_default();
    let reading = {
        let (spec, stats, stop) = (spec.clone(), Arc::clone(stats), stop.clone());
        let shard = config.shard;
        std::thread::Builder::new()
            .name("loadlab-replay".into())
            .spawn(move || read(&spec, shard, &headers, &tx, &stats, &stop))
    };
    if let Err(e) = &reading {
        stats.lock().unwrap_or_else(|e| e.into_inner()).failed = Some(format!("cannot start the reader: {e}"));
        return true;
    }
    let max = config.in_flight_cap();
    let (shared, stop2, window) = (Arc::clone(shared), stop.clone(), config.pace_window);
    let pacing = runtimes.handle(0).spawn(async move {
        let mut pool = Pool::start(shared, (0, 1), config_workers(max), max, late_after(window), stop2.clone());
        let start = pool.shared().start;
        let stopped = match TimerFdClock::new(start.into_std()) {
            Ok(clock) => send_all(&mut rx, &mut Coalesced::new(clock, window), &mut pool, &stop2).await,
            Err(_) => send_all(&mut rx, &mut TokioClock { start }, &mut pool, &stop2).await,
        };
        // The reader may be blocked on a full queue: closing it lets the thread end.
        rx.close();
        pool.finish().await;
        stopped
    });
    let stopped = pacing.await.unwrap_or(true);
    if let Ok(t) = reading {
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    stopped || stats.lock().unwrap_or_else(|e| e.into_inner()).failed.is_some()
}

/// A send is late past the late threshold and the coalescing window (which it waits for).
fn late_after(window: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_micros(results::LATE_SEND_US) + window
}

fn config_workers(max: usize) -> usize {
    crate::config::DEFAULT_WORKERS.min(max).max(1)
}

async fn send_all(
    rx: &mut tokio::sync::mpsc::Receiver<Vec<Hit>>,
    clock: &mut impl PaceClock,
    pool: &mut Pool,
    stop: &CancellationToken,
) -> bool {
    while let Some(batch) = rx.recv().await {
        for hit in batch {
            if !send_one(hit, clock, pool, stop).await {
                return true;
            }
        }
    }
    stop.is_cancelled()
}

/// Sends `hit` at its time; false when stopped.
async fn send_one(hit: Hit, clock: &mut impl PaceClock, pool: &mut Pool, stop: &CancellationToken) -> bool {
    while clock.elapsed() < hit.due {
        if stop.is_cancelled() {
            return false;
        }
        clock.sleep_until(hit.due).await;
    }
    if stop.is_cancelled() {
        return false;
    }
    let job = Job { seq: hit.seq, scheduled: pool.shared().start + hit.due, request: Some((hit.request, hit.label)) };
    pool.send(job).await
}
