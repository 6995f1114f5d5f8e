//! Where results go: a thread that encodes records into the results file, flushes it every
//! second (so a killed attack loses at most a second), keeps the run's metrics and draws the
//! progress line. Workers push records into a shared queue (a short uncontended lock, no system
//! call) and the thread takes the whole queue every few milliseconds: waking it per record cost
//! several futex calls per request (measured with strace: 7.5 per request at 2000/s).

use std::collections::HashMap;
use std::io::{BufWriter, IsTerminal, Write};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use results::{Metrics, Record, RunHeader, Writer};
use tokio_util::sync::CancellationToken;

/// How often the sink thread takes the queue.
const POLL: Duration = Duration::from_millis(20);

/// One request's outcome as a worker reports it: the record and, on failure, the error text.
pub struct Outcome {
    pub record: Record,
    pub error: Option<String>,
}

/// How the sink behaves.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// Draw a progress line on stderr (the binary asks for it when stderr is a terminal).
    pub progress: bool,
    /// How often the file is flushed (and the progress line redrawn).
    pub flush_every: Duration,
    /// Keep per-second statistics in the returned metrics.
    pub per_second: bool,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            progress: std::io::stderr().is_terminal(),
            flush_every: Duration::from_secs(1),
            per_second: false,
        }
    }
}

/// Records on their way to the sink thread.
#[derive(Default)]
pub struct SinkQueue {
    records: Mutex<Vec<Outcome>>,
    closed: AtomicBool,
}

impl SinkQueue {
    pub fn push(&self, o: Outcome) {
        self.records.lock().unwrap_or_else(|e| e.into_inner()).push(o);
    }

    fn take(&self, into: &mut Vec<Outcome>) {
        let mut q = self.records.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::swap(&mut *q, into);
    }
}

/// The running sink thread.
pub struct Sink {
    thread: JoinHandle<std::io::Result<Metrics>>,
    queue: Arc<SinkQueue>,
}

impl Sink {
    /// Writes the header at once, then starts the thread.
    pub fn start(
        out: Box<dyn Write + Send>,
        header: RunHeader,
        opts: SinkOptions,
        in_flight: Arc<AtomicU64>,
        stop: CancellationToken,
    ) -> std::io::Result<(Sink, Arc<SinkQueue>)> {
        let writer = Writer::new(BufWriter::with_capacity(1 << 16, out), &header)?;
        let queue = Arc::new(SinkQueue::default());
        let q = Arc::clone(&queue);
        let thread = std::thread::Builder::new().name("loadlab-sink".into()).spawn(move || {
            let result = drain(&q, writer, &header, &opts, &in_flight);
            if result.is_err() {
                stop.cancel();
            }
            result
        })?;
        Ok((Sink { thread, queue: Arc::clone(&queue) }, queue))
    }

    /// Tells the thread no more records come, waits for it, and returns the run's metrics.
    pub fn finish(self) -> std::io::Result<Metrics> {
        self.queue.closed.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread.join().unwrap_or_else(|_| Err(std::io::Error::other("results writer panicked")))
    }
}

fn drain(
    queue: &SinkQueue,
    mut writer: Writer<BufWriter<Box<dyn Write + Send>>>,
    header: &RunHeader,
    opts: &SinkOptions,
    in_flight: &AtomicU64,
) -> std::io::Result<Metrics> {
    let mut metrics = if opts.per_second { Metrics::with_seconds() } else { Metrics::new() };
    metrics.runs.push(header.name.clone());
    let mut errors: HashMap<String, u32> = HashMap::new();
    let mut status_errors: HashMap<u16, u32> = HashMap::new();
    let mut progress = Progress::new(opts.progress);
    let started = Instant::now();
    let mut next_flush = started + opts.flush_every;
    let mut batch = Vec::new();
    loop {
        let closed = queue.closed.load(Ordering::Acquire);
        queue.take(&mut batch);
        for Outcome { mut record, error } in batch.drain(..) {
            let text = match error {
                Some(e) => {
                    let i = match errors.get(&e) {
                        Some(&i) => i,
                        None => {
                            let i = writer.intern_error(&e);
                            errors.insert(e.clone(), i);
                            i
                        }
                    };
                    record.error = i;
                    Some(e)
                }
                None if !record.is_success() => {
                    let text = status_text(record.status);
                    record.error = *status_errors.entry(record.status).or_insert_with(|| writer.intern_error(&text));
                    Some(text)
                }
                None => None,
            };
            writer.push(&record)?;
            metrics.add(header.start_unix_ns, &record, text.as_deref());
            progress.add(&record);
        }
        if closed {
            break;
        }
        let now = Instant::now();
        if now >= next_flush {
            writer.flush()?;
            progress.draw(started.elapsed(), in_flight.load(Ordering::Relaxed), metrics.requests - metrics.successes);
            next_flush = now + opts.flush_every;
        }
        std::thread::park_timeout(POLL.min(next_flush.saturating_duration_since(now)));
    }
    writer.finish()?;
    progress.done();
    Ok(metrics)
}

/// vegeta's error text for an unsuccessful status: the status line.
fn status_text(status: u16) -> String {
    match http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

/// The stderr progress line: elapsed, rate and p99 over the last interval, in flight, errors.
struct Progress {
    on: bool,
    count: u64,
    last_draw: Instant,
    latency: Histogram<u64>,
}

impl Progress {
    fn new(on: bool) -> Progress {
        Progress {
            on,
            count: 0,
            last_draw: Instant::now(),
            latency: Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("static bounds"),
        }
    }

    fn add(&mut self, r: &Record) {
        if self.on {
            self.count += 1;
            self.latency.saturating_record(r.latency_us.max(1));
        }
    }

    fn draw(&mut self, elapsed: Duration, in_flight: u64, errors: u64) {
        if !self.on {
            return;
        }
        let secs = self.last_draw.elapsed().as_secs_f64().max(1e-3);
        let p99 = Duration::from_micros(self.latency.value_at_quantile(0.99));
        eprint!(
            "\r{:>6.1}s  {:>9.1} req/s  in flight {:>5}  p99 {:>10}  errors {:<8}",
            elapsed.as_secs_f64(),
            self.count as f64 / secs,
            in_flight,
            format!("{p99:.1?}"),
            errors
        );
        let _ = std::io::stderr().flush();
        self.count = 0;
        self.latency.reset();
        self.last_draw = Instant::now();
    }

    fn done(&self) {
        if self.on {
            eprintln!();
        }
    }
}
