//! How the open model's pacer hands a hit to a worker: to the worker that went idle last.
//!
//! A shared queue that every idle worker waits on wakes them in the order they began to wait, so
//! hits go round every connection the pool ever opened, and how many that is depends on chance
//! (a slow first second opens more). The connections a request rides then set its cost: against
//! a Go service at 400 req/s, labs whose warm-up had opened 6 connections used 670-697 µs of the
//! service's CPU a request and 117-130 µs of loadlab's, labs with 10 used 754-770 and 171-176,
//! the lab with 13 used 827 and 238 (12 labs of one build, docs/DECISIONS.md, "Where the spread
//! comes from"): fewer requests per connection mean more wake-ups, timers and acknowledgements
//! of their own for both ends. Handed last-idle-first, the hits ride the fewest connections the
//! load needs, however many were opened, as a connection pool's idle list is used.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, Notify};

use crate::worker::Job;

/// The hand-off between one pacer and its pool's workers.
pub(crate) struct Handoff {
    state: Mutex<State>,
    /// Told when the backlog shrinks or the hand-off closes: a pacer waiting for room retries.
    room: Notify,
    capacity: usize,
}

struct State {
    /// Hits no idle worker was there for, oldest first.
    backlog: VecDeque<Job>,
    /// Idle workers, the last to go idle on top.
    idle: Vec<oneshot::Sender<Job>>,
    closed: bool,
}

/// Why a hit was not handed over.
pub(crate) enum Refused {
    /// Every worker busy and the backlog at its capacity: the job is given back.
    Full(Job),
    Closed,
}

impl std::fmt::Debug for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Full(job) => write!(f, "full (hit {})", job.seq),
            Refused::Closed => f.write_str("closed"),
        }
    }
}

impl Handoff {
    /// A hand-off whose backlog holds at most `capacity` hits.
    pub(crate) fn new(capacity: usize) -> Arc<Handoff> {
        Arc::new(Handoff {
            state: Mutex::new(State { backlog: VecDeque::new(), idle: Vec::new(), closed: false }),
            room: Notify::new(),
            capacity,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hits waiting for a worker.
    pub(crate) fn backlog(&self) -> usize {
        self.lock().backlog.len()
    }

    /// Hands `job` to the worker that went idle last, or to the backlog.
    pub(crate) fn try_send(&self, mut job: Job) -> Result<(), Refused> {
        let mut s = self.lock();
        if s.closed {
            return Err(Refused::Closed);
        }
        while let Some(worker) = s.idle.pop() {
            match worker.send(job) {
                Ok(()) => return Ok(()),
                // That worker was stopped while idle: the next one.
                Err(back) => job = back,
            }
        }
        if s.backlog.len() >= self.capacity {
            return Err(Refused::Full(job));
        }
        s.backlog.push_back(job);
        Ok(())
    }

    /// Hands `job` over, waiting for room in the backlog; false when the hand-off closed first.
    pub(crate) async fn send(&self, mut job: Job) -> bool {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.try_send(job) {
                Ok(()) => return true,
                Err(Refused::Closed) => return false,
                Err(Refused::Full(back)) => job = back,
            }
            room.await;
        }
    }

    /// A worker's next hit: the oldest in the backlog, or the next handed to it once it is the
    /// last idle worker; none once the hand-off is closed and the backlog empty.
    pub(crate) async fn recv(&self) -> Option<Job> {
        let rx = {
            let mut s = self.lock();
            if let Some(job) = s.backlog.pop_front() {
                drop(s);
                self.room.notify_one();
                return Some(job);
            }
            if s.closed {
                return None;
            }
            let (tx, rx) = oneshot::channel();
            s.idle.push(tx);
            rx
        };
        rx.await.ok()
    }

    /// No more hits will come: idle workers end, busy ones end once the backlog is empty.
    pub(crate) fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.idle.clear();
        drop(s);
        self.room.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn job(seq: u64) -> Job {
        Job { seq, scheduled: tokio::time::Instant::now(), request: None }
    }

    /// Starts `n` workers that each take one hit, in order, and say which worker took which.
    #[tokio::test]
    async fn the_worker_idle_last_takes_the_next_hit() {
        let h = Handoff::new(4);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for w in 0..3 {
            let (h, tx) = (Arc::clone(&h), tx.clone());
            tokio::spawn(async move {
                while let Some(j) = h.recv().await {
                    tx.send((w, j.seq)).unwrap();
                }
            });
            // Worker w is idle before w + 1.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for seq in 0..3 {
            h.try_send(job(seq)).unwrap();
            // Each hit is done before the next: its worker is idle again, last of all.
            let (w, s) = rx.recv().await.unwrap();
            assert_eq!((w, s), (2, seq), "the last worker to go idle takes every hit");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        h.close();
    }

    #[tokio::test]
    async fn a_full_backlog_gives_the_job_back_and_room_lets_a_waiting_pacer_go() {
        let h = Handoff::new(2);
        h.try_send(job(0)).unwrap();
        h.try_send(job(1)).unwrap();
        assert!(matches!(h.try_send(job(2)), Err(Refused::Full(j)) if j.seq == 2));
        assert_eq!(h.backlog(), 2);
        let waiting = tokio::spawn({
            let h = Arc::clone(&h);
            async move { h.send(job(2)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "no room yet");
        // A worker takes the oldest: room for the waiting pacer.
        assert_eq!(h.recv().await.unwrap().seq, 0);
        assert!(waiting.await.unwrap());
        assert_eq!(h.recv().await.unwrap().seq, 1);
        assert_eq!(h.recv().await.unwrap().seq, 2);
        // Closed: a pacer is refused, a waiting worker ends, the backlog is still worked off.
        h.try_send(job(3)).unwrap();
        h.close();
        assert!(matches!(h.try_send(job(4)), Err(Refused::Closed)));
        assert_eq!(h.recv().await.unwrap().seq, 3);
        assert!(h.recv().await.is_none());
    }

    #[tokio::test]
    async fn closing_wakes_idle_workers_and_a_blocked_pacer() {
        let h = Handoff::new(1);
        let idle = tokio::spawn({
            let h = Arc::clone(&h);
            async move { h.recv().await.map(|j| j.seq) }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        h.try_send(job(0)).unwrap();
        assert_eq!(idle.await.unwrap(), Some(0));
        h.try_send(job(1)).unwrap();
        let blocked = tokio::spawn({
            let h = Arc::clone(&h);
            async move { h.send(job(2)).await }
        });
        let idle = tokio::spawn({
            let h = Arc::clone(&h);
            async move {
                // Takes the backlog's hit, then waits idle until the close.
                let first = h.recv().await.map(|j| j.seq);
                (first, h.recv().await.map(|j| j.seq))
            }
        });
        let (first, second) = idle.await.unwrap();
        assert_eq!(first, Some(1));
        // The blocked pacer got room and handed hit 2 over, which the worker took.
        assert!(blocked.await.unwrap());
        assert_eq!(second, Some(2));
        let last = tokio::spawn({
            let h = Arc::clone(&h);
            async move { h.recv().await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        h.close();
        assert!(last.await.unwrap().is_none(), "closing ends an idle worker");
    }
}
