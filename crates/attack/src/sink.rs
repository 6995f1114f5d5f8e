//! Where records go: a thread that hands every record to the attack's consumer (the results
//! file, charts, a display ...), keeps the run's metrics, and flushes the consumer twice a second
//! (so a killed attack loses at most a second). Workers push records into a shared queue (a short
//! uncontended lock, no system call) and the thread takes the whole queue every few
//! milliseconds: waking it per record cost several futex calls per request (measured with
//! strace: 7.5 per request at 2000/s).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use results::{Consumer, Entry, Metrics, RunEnd, RunHeader};
use tokio_util::sync::CancellationToken;

/// How often the sink thread takes the queue.
const POLL: Duration = Duration::from_millis(20);

/// One request's outcome as a worker reports it: the record and, on failure, the error text.
pub(crate) struct Outcome {
    pub record: results::Record,
    pub error: Option<String>,
    /// A replayed request's `METHOD /path` (the header's table names the targets otherwise).
    pub target: Option<std::sync::Arc<str>>,
}

/// Records on their way to the sink thread.
#[derive(Default)]
pub(crate) struct SinkQueue {
    records: Mutex<Vec<Outcome>>,
    closed: AtomicBool,
    /// The run's end, handed over with `closed`.
    end: Mutex<Option<RunEnd>>,
}

impl SinkQueue {
    pub(crate) fn push(&self, o: Outcome) {
        self.records.lock().unwrap_or_else(|e| e.into_inner()).push(o);
    }

    fn take(&self, into: &mut Vec<Outcome>) {
        let mut q = self.records.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::swap(&mut *q, into);
    }
}

type Finished<C> = std::io::Result<(Metrics, C)>;

/// The running sink thread.
pub(crate) struct Sink<C> {
    thread: JoinHandle<Finished<C>>,
    queue: Arc<SinkQueue>,
}

impl<C: Consumer + Send + 'static> Sink<C> {
    /// Starts the run in `consumer` (the results file writes its header at once), then the thread.
    /// A consumer that fails (a full disk) stops the attack.
    pub(crate) fn start(
        mut consumer: C,
        header: RunHeader,
        flush_every: Duration,
        stop: CancellationToken,
    ) -> std::io::Result<(Sink<C>, Arc<SinkQueue>)> {
        consumer.start(&header)?;
        let queue = Arc::new(SinkQueue::default());
        let q = Arc::clone(&queue);
        let thread = std::thread::Builder::new().name("loadlab-sink".into()).spawn(move || {
            let result = drain(&q, consumer, &header, flush_every);
            if result.is_err() {
                stop.cancel();
            }
            result
        })?;
        Ok((Sink { thread, queue: Arc::clone(&queue) }, queue))
    }

    /// Tells the thread no more records come and how the run ended, waits for it, and returns
    /// the run's metrics and the consumer (its run ended).
    pub(crate) fn finish(self, end: RunEnd) -> Finished<C> {
        *self.queue.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
        self.queue.closed.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread.join().unwrap_or_else(|_| Err(std::io::Error::other("results consumer panicked")))
    }
}

fn drain<C: Consumer>(queue: &SinkQueue, mut consumer: C, header: &RunHeader, flush_every: Duration) -> Finished<C> {
    let mut metrics = Metrics::new();
    metrics.start(header)?;
    // The run's error table, so every consumer sees the same index for the same text.
    let mut errors: HashMap<String, u32> = HashMap::new();
    let mut status_errors: HashMap<u16, String> = HashMap::new();
    let mut next_flush = Instant::now() + flush_every;
    let mut batch = Vec::new();
    loop {
        let closed = queue.closed.load(Ordering::Acquire);
        queue.take(&mut batch);
        for Outcome { mut record, error, target } in batch.drain(..) {
            let text: Option<&str> = match &error {
                Some(e) => Some(e),
                None if !record.is_success() => {
                    Some(status_errors.entry(record.status).or_insert_with(|| status_text(record.status)).as_str())
                }
                None => None,
            };
            if let Some(t) = text {
                // No allocation for a text already seen (every failure of a failing run).
                record.error = match errors.get(t) {
                    Some(&i) => i,
                    None => {
                        let i = errors.len() as u32 + 1;
                        errors.insert(t.to_owned(), i);
                        i
                    }
                };
            }
            let entry = Entry {
                record: &record,
                target: target.as_deref().or_else(|| header.targets.get(record.target as usize).map(String::as_str)),
                error: text,
            };
            consumer.record(&entry)?;
            metrics.record(&entry)?;
        }
        if closed {
            break;
        }
        let now = Instant::now();
        if now >= next_flush {
            consumer.flush()?;
            next_flush = now + flush_every;
        }
        std::thread::park_timeout(POLL.min(next_flush.saturating_duration_since(now)));
    }
    let end = queue.end.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(RunEnd::complete);
    consumer.end(&end)?;
    metrics.end(&end)?;
    Ok((metrics, consumer))
}

/// vegeta's error text for an unsuccessful status: the status line.
fn status_text(status: u16) -> String {
    match http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}
