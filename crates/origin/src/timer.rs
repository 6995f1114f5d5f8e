//! Sleeps accurate to a fraction of a millisecond, for recipe latencies. tokio's timer wheel has
//! millisecond ticks and rounds both the deadline and its poll timeout up, so a 100 ms latency
//! came out as 101-103 ms (measured: p50 102.1 ms, p95 103.6 ms with 1,000 requests in flight).
//! Here one thread keeps the deadlines in a heap and wakes each task when its time comes; the
//! thread parks with a timeout, which the OS honours within tens of microseconds.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The wakers by (deadline, id), and the last id given.
type Entries = (BTreeMap<(Instant, u64), Waker>, u64);

/// Deadlines by (time, id). A sleep removes its entry when dropped: a waker left behind keeps
/// its task's memory until the deadline (100,000 requests abandoned during a long latency held
/// 125 MB).
struct Timer {
    entries: Mutex<Entries>,
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
        let t = Arc::new(Timer { entries: Mutex::new((BTreeMap::new(), 0)), thread: handle.thread().clone() });
        tx.send(Arc::clone(&t)).expect("timer thread alive");
        t
    })
}

fn lock(t: &Timer) -> std::sync::MutexGuard<'_, Entries> {
    t.entries.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(t: &Timer) -> ! {
    loop {
        let mut due = Vec::new();
        let next = {
            let mut guard = lock(t);
            let now = Instant::now();
            while let Some(e) = guard.0.first_entry().filter(|e| e.key().0 <= now) {
                due.push(e.remove());
            }
            guard.0.first_key_value().map(|(k, _)| k.0)
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
pub(crate) struct SleepUntil {
    at: Instant,
    /// Its entry in the timer, once registered.
    key: Option<(Instant, u64)>,
}

/// Completes after `d`, within tens of microseconds.
pub(crate) fn sleep(d: Duration) -> SleepUntil {
    SleepUntil { at: Instant::now() + d, key: None }
}

impl Future for SleepUntil {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        let t = timer();
        let earliest = {
            let mut guard = lock(t);
            if let Some(w) = self.key.and_then(|k| guard.0.get_mut(&k)) {
                // Polled again: keep the entry, with the latest waker.
                if !w.will_wake(cx.waker()) {
                    *w = cx.waker().clone();
                }
                return Poll::Pending;
            }
            guard.1 += 1;
            let key = (self.at, guard.1);
            guard.0.insert(key, cx.waker().clone());
            self.key = Some(key);
            guard.0.first_key_value().is_some_and(|(k, _)| *k == key)
        };
        if earliest {
            t.thread.unpark();
        }
        Poll::Pending
    }
}

impl Drop for SleepUntil {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            lock(timer()).0.remove(&key);
        }
    }
}

/// Sleeps registered that are due in more than a minute.
#[cfg(test)]
fn pending() -> usize {
    let later = Instant::now() + Duration::from_secs(60);
    lock(timer()).0.keys().filter(|k| k.0 > later).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_on_time_and_in_order() {
        // The latest first, and the timer left to park toward it: one that slept on would wake
        // the others 200 ms and 400 ms late. The slack (150 ms) is for a busy machine; the
        // timer's accuracy is measured by bench/origin.sh, not here.
        let start = Instant::now();
        let mut tasks = Vec::new();
        for ms in [600u64, 200, 400] {
            tasks.push(tokio::spawn(async move {
                sleep(Duration::from_millis(ms).saturating_sub(start.elapsed())).await;
                start.elapsed()
            }));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for (t, ms) in tasks.into_iter().zip([600u64, 200, 400]) {
            let took = t.await.unwrap();
            assert!(took >= Duration::from_millis(ms), "{took:?} < {ms} ms");
            assert!(took < Duration::from_millis(ms + 150), "{took:?} for {ms} ms");
        }
    }

    #[tokio::test]
    async fn a_dropped_sleep_leaves_nothing_behind() {
        let before = pending();
        let mut sleeps: Vec<_> = (0..1000).map(|_| Box::pin(sleep(Duration::from_secs(600)))).collect();
        let waker = std::task::Waker::noop();
        for s in &mut sleeps {
            assert!(s.as_mut().poll(&mut Context::from_waker(waker)).is_pending());
            assert!(s.as_mut().poll(&mut Context::from_waker(waker)).is_pending());
        }
        assert!(pending() >= before + 1000);
        drop(sleeps);
        assert!(pending() <= before, "{} entries left", pending() - before);
    }
}
