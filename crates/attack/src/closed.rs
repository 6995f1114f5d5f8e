//! The closed model: `connections x streams` workers, each sending its next request as soon as
//! the last one is answered, until a count, a deadline or `stop`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::runtimes::Runtimes;
use crate::shard::Shard;
use crate::worker::{Job, Shared, Worker};

/// Runs this shard's share of the workers on `runtimes` (connection `c` on its loop) and
/// returns when every one has ended: at its share of `requests`, at `duration` after the start,
/// or at `stop`, each request bounded by its timeout.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    (connections, streams): (usize, usize),
    requests: Option<u64>,
    duration: Option<Duration>,
    shard: Shard,
    runtimes: &Runtimes,
    stop: &CancellationToken,
) {
    let mut workers = JoinSet::new();
    let next = Arc::new(AtomicU64::new(0));
    let deadline = duration.map(|d| shared.start + d);
    let requests = requests.map(|r| shard.share_of(r));
    for c in 0..shard.share_of(connections as u64) as usize {
        for _ in 0..streams {
            let mut w = Worker::new(Arc::clone(shared), c);
            let (next, stop, limit) = (Arc::clone(&next), stop.clone(), requests);
            workers.spawn_on(
                async move {
                    loop {
                        let now = Instant::now();
                        if stop.is_cancelled() || deadline.is_some_and(|d| now >= d) {
                            break;
                        }
                        let seq = next.fetch_add(1, Ordering::Relaxed);
                        if limit.is_some_and(|l| seq >= l) {
                            break;
                        }
                        w.execute(Job { seq: shard.global_seq(seq), scheduled: now, request: None }).await;
                    }
                },
                runtimes.handle(c),
            );
        }
    }
    // Every worker ends by itself: wait for them all. A drain counted from the end of sending
    // cut a run longer than the timeout short, silently.
    while workers.join_next().await.is_some() {}
}
