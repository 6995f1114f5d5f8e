//! Runs an attack: the open model (a pacer hands scheduled jobs to a worker pool that grows up to
//! `max_workers`) or the closed model (connections x streams workers sending back to back), each
//! worker owning its HTTP/1.1 connection or sharing an HTTP/2 one, all feeding one sink.
//!
//! Workers run on one single-threaded tokio runtime per core, each owning its share of the
//! workers and their connections, as wrk and h2load run one event loop per thread: a multi-thread
//! runtime's work stealing woke idle threads on almost every request (futex calls in strace).

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use results::{Metrics, Record, RunHeader};

use crate::client::{
    redirected, resolve_location, send_once, ClientOptions, Conn, Connector, Exchange, Failure, Origin, Prepared,
    Protocol,
};
use crate::lean::LeanConn;
use crate::schedule::Schedule;
use crate::sink::{Outcome, Sink, SinkOptions, SinkQueue};
use crate::targets::Target;

/// Jobs waiting for a worker, at most; beyond this the pacer waits (their scheduled times stand,
/// so the wait shows in latency and lag, and memory stays bounded).
const JOB_QUEUE: usize = 16_384;
/// vegeta's initial worker count.
pub const DEFAULT_WORKERS: usize = 10;

/// How load is offered.
#[derive(Clone, Debug)]
pub enum Model {
    /// Requests at scheduled times, whatever the server does.
    Open { schedule: Schedule },
    /// `connections` x `streams` workers, each sending its next request when the last finishes.
    Closed { connections: usize, streams: usize, requests: Option<u64>, duration: Option<Duration> },
}

/// Everything an attack needs.
#[derive(Clone, Debug)]
pub struct AttackConfig {
    pub name: String,
    pub targets: Vec<Target>,
    pub model: Model,
    pub client: ClientOptions,
    /// Open model: workers started up front, and the cap on requests in flight.
    pub workers: usize,
    pub max_workers: Option<usize>,
    /// Open model over HTTP/2: connections the workers share.
    pub h2_connections: usize,
    /// Close and reopen a connection after this many requests.
    pub requests_per_conn: Option<u64>,
    /// Recorded in the results file's header as given.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Event-loop threads; `None` is one per available core.
    pub threads: Option<usize>,
}

impl AttackConfig {
    pub fn new(targets: Vec<Target>, model: Model) -> AttackConfig {
        AttackConfig {
            name: String::new(),
            targets,
            model,
            client: ClientOptions::default(),
            workers: DEFAULT_WORKERS,
            max_workers: None,
            h2_connections: 1,
            requests_per_conn: None,
            settings: serde_json::Map::new(),
            threads: None,
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.targets.is_empty() {
            return Err("no targets".into());
        }
        if let Model::Closed { connections, streams, requests, duration } = &self.model {
            if *connections == 0 || *streams == 0 {
                return Err("--connections and --streams must be at least 1".into());
            }
            if *streams > 1 && self.client.protocol == Protocol::Http1 {
                return Err("--streams above 1 needs HTTP/2 (--http2 or --h2c)".into());
            }
            if requests.is_none() && duration.is_none() {
                return Err("a closed model needs --requests or --duration".into());
            }
        }
        if self.max_workers == Some(0) {
            return Err("--max-workers must be at least 1".into());
        }
        if self.requests_per_conn == Some(0) {
            return Err("--requests-per-conn must be at least 1".into());
        }
        Ok(())
    }
}

/// What an attack leaves besides its results file.
#[derive(Debug)]
pub struct Summary {
    pub metrics: Metrics,
    /// Whether it was stopped before its schedule or count ran out.
    pub interrupted: bool,
}

/// A failed set-up (bad settings, unwritable output).
#[derive(Debug, thiserror::Error)]
pub enum AttackError {
    #[error("{0}")]
    Config(String),
    #[error("writing results: {0}")]
    Io(#[from] std::io::Error),
}

/// How often a request the server refused unprocessed is sent (on a new connection each time).
const MAX_REFUSED_ATTEMPTS: u32 = 3;

struct SlotConn {
    conn: Conn,
    origin: Origin,
    uses: u64,
}

struct Shared {
    connector: Connector,
    /// Plain-TCP HTTP/1.1 goes through the lean client.
    lean: bool,
    prepared: Vec<Prepared>,
    start: Instant,
    requests_per_conn: Option<u64>,
    /// Shared HTTP/2 connections.
    slots: Vec<tokio::sync::Mutex<Option<SlotConn>>>,
    in_flight: Arc<AtomicU64>,
    sink: Arc<SinkQueue>,
}

#[derive(Clone, Copy)]
struct Job {
    seq: u64,
    scheduled: Instant,
}

struct Worker {
    shared: Arc<Shared>,
    own: Option<SlotConn>,
    /// The worker's lean HTTP/1.1 connection, when it has one.
    lean: Option<LeanConn>,
    slot: usize,
}

impl Worker {
    fn fresh(&self, c: &SlotConn, origin: &Origin) -> bool {
        c.origin == *origin && !c.conn.is_closed() && self.shared.requests_per_conn.is_none_or(|k| c.uses < k)
    }

    async fn acquire(&mut self, origin: &Origin, new_conn: &mut bool) -> Result<Conn, Failure> {
        if self.own.as_ref().is_some_and(|c| self.fresh(c, origin)) {
            let c = self.own.as_mut().expect("checked above");
            c.uses += 1;
            return Ok(c.conn.clone());
        }
        self.own = None;
        let shared = Arc::clone(&self.shared);
        let may_share = match shared.connector.options().protocol {
            Protocol::H2c => !origin.tls,
            Protocol::Http2 => origin.tls,
            Protocol::Http1 => false,
        };
        if may_share && !shared.slots.is_empty() {
            let mut slot = shared.slots[self.slot % shared.slots.len()].lock().await;
            if let Some(c) = slot.as_mut() {
                if self.fresh(c, origin) {
                    c.uses += 1;
                    let conn = c.conn.clone();
                    self.keep_shared(&conn, origin);
                    return Ok(conn);
                }
            }
            let conn = shared.connector.connect(origin).await?;
            *new_conn = true;
            let c = SlotConn { conn: conn.clone(), origin: origin.clone(), uses: 1 };
            if conn.is_h2() {
                *slot = Some(c);
                self.keep_shared(&conn, origin);
            } else {
                self.own = Some(c);
            }
            return Ok(conn);
        }
        let conn = shared.connector.connect(origin).await?;
        *new_conn = true;
        self.own = Some(SlotConn { conn: conn.clone(), origin: origin.clone(), uses: 1 });
        Ok(conn)
    }

    /// Keeps a handle on the slot's HTTP/2 connection, so that the next requests skip the slot's
    /// lock until it closes. Not when connections are recycled: those count uses per slot.
    fn keep_shared(&mut self, conn: &Conn, origin: &Origin) {
        if self.shared.requests_per_conn.is_none() {
            self.own = Some(SlotConn { conn: conn.clone(), origin: origin.clone(), uses: 0 });
        }
    }

    /// Forgets the worker's own connection (after an error, or when it cannot be reused).
    fn drop_own(&mut self) {
        self.own = None;
    }

    async fn exchange(&mut self, target: usize, ex: &mut Exchange, new_conn: &mut bool) -> Result<(), Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        let mut current = Cow::Borrowed(&shared.prepared[target]);
        let mut hops = 0u32;
        loop {
            let location = if shared.lean && !current.origin.tls {
                self.lean_exchange(&current, ex, new_conn).await?
            } else {
                self.pooled_exchange(&current, ex, new_conn).await?
            };
            ex.conn_spent = false;
            let Some(to) = location else { return Ok(()) };
            match opts.redirects {
                None => return Ok(()),
                Some(max) if hops >= max => return Err(Failure(format!("stopped after {max} redirects"))),
                Some(_) => {
                    hops += 1;
                    let status = http::StatusCode::from_u16(ex.status).unwrap_or(http::StatusCode::FOUND);
                    current = Cow::Owned(redirected(&current, status, to));
                }
            }
        }
    }

    /// One request over the worker's lean connection (opened, or reopened, as needed).
    async fn lean_exchange(
        &mut self,
        p: &Prepared,
        ex: &mut Exchange,
        new_conn: &mut bool,
    ) -> Result<Option<http::Uri>, Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        let request = if opts.keepalive { &p.h1_keepalive } else { &p.h1_close };
        loop {
            let reuse = self
                .lean
                .take()
                .filter(|c| c.origin == p.origin && self.shared.requests_per_conn.is_none_or(|k| c.uses < k));
            let mut conn = match reuse {
                Some(c) => c,
                None => {
                    let stream = self.shared.connector.tcp(&p.origin).await?;
                    *new_conn = true;
                    LeanConn::new(stream, p.origin.clone())
                }
            };
            conn.uses += 1;
            ex.stale = false;
            // On failure the connection is dropped with the error.
            match conn.exchange(request, p.method == http::Method::HEAD, opts.max_body, ex).await {
                Ok(location) => {
                    if opts.keepalive && !ex.conn_spent {
                        self.lean = Some(conn);
                    }
                    return Ok(location.and_then(|l| resolve_location(&p.abs_uri, &l)));
                }
                // A stale keep-alive connection: once more on a new one (which cannot be stale).
                Err(_) if ex.stale && p.idempotent => {}
                Err(f) => return Err(f),
            }
        }
    }

    /// One request over a pooled connection: HTTP/1.1 over TLS (hyper), or HTTP/2 (h2).
    async fn pooled_exchange(
        &mut self,
        p: &Prepared,
        ex: &mut Exchange,
        new_conn: &mut bool,
    ) -> Result<Option<http::Uri>, Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        let mut attempt = 1;
        loop {
            let conn = self.acquire(&p.origin, new_conn).await?;
            let h2 = conn.is_h2();
            let retire = conn.retire_handle();
            ex.refused = false;
            match send_once(conn, p, opts, ex).await {
                Ok(location) => {
                    if !h2 && (ex.conn_spent || !opts.keepalive) {
                        self.drop_own();
                    }
                    return Ok(location);
                }
                // Refused unprocessed (GOAWAY, REFUSED_STREAM): no new streams on that
                // connection, and the request goes again on another.
                Err(_) if ex.refused && attempt < MAX_REFUSED_ATTEMPTS => {
                    retire.retire();
                    attempt += 1;
                }
                Err(f) => {
                    // An HTTP/2 failure may be one stream's; a dead connection shows as closed.
                    if !h2 {
                        self.drop_own();
                    }
                    return Err(f);
                }
            }
        }
    }

    async fn execute(&mut self, job: Job) {
        let shared = Arc::clone(&self.shared);
        let target = (job.seq % shared.prepared.len() as u64) as usize;
        let sent_at = Instant::now();
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        let mut ex = Exchange::default();
        let mut new_conn = false;
        let timeout = shared.connector.options().timeout;
        let result = tokio::time::timeout(timeout, self.exchange(target, &mut ex, &mut new_conn)).await;
        let done = Instant::now();
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        let error = match result {
            Ok(Ok(())) => None,
            Ok(Err(f)) => Some(f.0),
            Err(_) => {
                self.drop_own();
                Some("timeout".to_owned())
            }
        };
        if error.is_some() {
            ex.status = 0;
        }
        let us = |t: Instant| t.saturating_duration_since(job.scheduled).as_micros() as u64;
        let latency_us = us(done);
        let record = Record {
            seq: job.seq,
            target: target as u32,
            scheduled_us: job.scheduled.saturating_duration_since(shared.start).as_micros() as u64,
            latency_us,
            ttfb_us: ex.head_at.filter(|_| error.is_none()).map_or(latency_us, us),
            lag_us: us(sent_at),
            status: ex.status,
            bytes_in: ex.bytes_in,
            bytes_out: shared.prepared[target].body.len() as u64,
            error: 0,
            new_conn,
        };
        shared.sink.push(Outcome { record, error });
    }
}

/// One single-threaded runtime per thread, idling until tasks are spawned onto it.
///
/// Each runtime also keeps a heartbeat timer due sooner than any request's timeout: tokio's time
/// driver wakes its own thread (an eventfd write) whenever a new timer is due earlier than every
/// pending one, which in the open model, with nothing in flight between sends, was every request
/// (strace: one extra write per request at 2000/s).
struct Runtimes {
    handles: Vec<tokio::runtime::Handle>,
    threads: Vec<(std::thread::JoinHandle<()>, tokio::sync::oneshot::Sender<()>)>,
}

impl Runtimes {
    fn start(n: usize, heartbeat: Duration) -> std::io::Result<Runtimes> {
        let (mut handles, mut threads) = (Vec::new(), Vec::new());
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            handles.push(rt.handle().clone());
            let (done, wait) = tokio::sync::oneshot::channel::<()>();
            let t = std::thread::Builder::new().name(format!("loadlab-worker-{i}")).spawn(move || {
                rt.block_on(async {
                    tokio::pin!(wait);
                    loop {
                        tokio::select! {
                            _ = &mut wait => break,
                            _ = tokio::time::sleep(heartbeat) => {}
                        }
                    }
                });
            })?;
            threads.push((t, done));
        }
        Ok(Runtimes { handles, threads })
    }

    fn handle(&self, i: usize) -> &tokio::runtime::Handle {
        &self.handles[i % self.handles.len()]
    }

    fn stop(self) {
        for (t, done) in self.threads {
            let _ = done.send(());
            let _ = t.join();
        }
    }
}

/// Runs `config` to the end of its schedule or count (or until `stop`), writing results to `out`.
pub async fn run(
    config: AttackConfig,
    out: Box<dyn Write + Send>,
    stop: CancellationToken,
    sink_options: SinkOptions,
) -> Result<Summary, AttackError> {
    config.validate().map_err(AttackError::Config)?;
    let connector = Connector::new(config.client.clone()).map_err(AttackError::Config)?;
    let start = Instant::now();
    let start_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let header = RunHeader {
        version: results::FORMAT_VERSION,
        name: config.name.clone(),
        start_unix_ns,
        settings: config.settings.clone(),
        targets: config.targets.iter().map(Target::label).collect(),
    };
    let in_flight = Arc::new(AtomicU64::new(0));
    let (sink, tx) = Sink::start(out, header, sink_options, Arc::clone(&in_flight), stop.clone())?;
    let slot_count = match &config.model {
        Model::Closed { connections, .. } => *connections,
        Model::Open { .. } => config.h2_connections.max(1),
    };
    let shared = Arc::new(Shared {
        lean: config.client.protocol == Protocol::Http1,
        connector,
        prepared: config.targets.iter().map(Prepared::new).collect(),
        start,
        requests_per_conn: config.requests_per_conn,
        slots: (0..slot_count).map(|_| tokio::sync::Mutex::new(None)).collect(),
        in_flight,
        sink: tx,
    });
    let threads = config.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let heartbeat = (config.client.timeout / 2).min(Duration::from_secs(1));
    let runtimes = Runtimes::start(threads, heartbeat)?;
    let mut workers = JoinSet::new();
    let interrupted = match &config.model {
        Model::Open { schedule } => pace(&shared, schedule, &config, &runtimes, &stop).await,
        Model::Closed { connections, streams, requests, duration } => {
            let next = Arc::new(AtomicU64::new(0));
            let deadline = duration.map(|d| start + d);
            for c in 0..*connections {
                for _ in 0..*streams {
                    let mut w = Worker { shared: Arc::clone(&shared), own: None, lean: None, slot: c };
                    let (next, stop, limit) = (Arc::clone(&next), stop.clone(), *requests);
                    workers.spawn_on(
                        async move {
                            loop {
                                if stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                                    break;
                                }
                                let seq = next.fetch_add(1, Ordering::Relaxed);
                                if limit.is_some_and(|l| seq >= l) {
                                    break;
                                }
                                w.execute(Job { seq, scheduled: Instant::now() }).await;
                            }
                        },
                        runtimes.handle(c),
                    );
                }
            }
            false
        }
    };
    // Drain: every request has its own timeout, so this ends; the bound is a safety net.
    let drain = config.client.timeout + Duration::from_secs(1);
    let _ = tokio::time::timeout(drain, async { while workers.join_next().await.is_some() {} }).await;
    workers.abort_all();
    while workers.join_next().await.is_some() {}
    tokio::task::spawn_blocking(move || runtimes.stop()).await.ok();
    drop(shared);
    let interrupted = interrupted || stop.is_cancelled();
    let metrics = tokio::task::spawn_blocking(move || sink.finish())
        .await
        .map_err(|e| AttackError::Io(std::io::Error::other(e)))??;
    Ok(Summary { metrics, interrupted })
}

/// The open model. Each event-loop thread paces its share of the schedule (hits `k`, `k + N`,
/// `k + 2N` ... of N threads) and hands them to its own pool of workers, which grows (up to its
/// share of `max_workers`) whenever the queued jobs outnumber the idle workers. Returns whether
/// it was stopped before the schedule ran out.
async fn pace(
    shared: &Arc<Shared>,
    schedule: &Schedule,
    config: &AttackConfig,
    runtimes: &Runtimes,
    stop: &CancellationToken,
) -> bool {
    let max_workers = config.max_workers.unwrap_or(usize::MAX);
    let n = runtimes.handles.len().min(max_workers).max(1);
    let mut pacers = Vec::new();
    for k in 0..n {
        let share = |total: usize| total / n + usize::from(k < total % n);
        let (shared, schedule, stop) = (Arc::clone(shared), schedule.clone(), stop.clone());
        let (first_workers, max_local) = (share(config.workers.min(max_workers)).max(1), share(max_workers).max(1));
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
            let (first, stride) = (k as u64, n as u64);
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

/// Where the pacer hands its hits: something that takes hit `n`, due at `due` after the start,
/// and says whether to go on.
pub(crate) trait Dispatch {
    async fn dispatch(&mut self, n: u64, due: Duration) -> bool;
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
        let mut w = Worker { shared: Arc::clone(&self.shared), own: None, lean: None, slot };
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

/// Test dispatchers are plain closures.
#[cfg(test)]
impl<F: FnMut(u64, Duration) -> bool> Dispatch for F {
    async fn dispatch(&mut self, n: u64, due: Duration) -> bool {
        self(n, due)
    }
}

/// Time as the pacer sees it: elapsed since the start, and a way to wait.
pub(crate) trait PaceClock {
    fn elapsed(&self) -> Duration;
    /// Waits until `at` after the start, or less (the pacer re-checks and waits again).
    async fn sleep_until(&mut self, at: Duration);
}

/// tokio's timer: millisecond ticks, rounded up. The fallback where timerfd is missing, and the
/// clock the tests pause and advance.
struct TokioClock {
    start: tokio::time::Instant,
}

impl PaceClock for TokioClock {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        tokio::time::sleep_until(self.start + at).await;
    }
}

/// A timerfd watched by the thread's own event loop: wakes within tens of microseconds, where
/// tokio's timer wheel has millisecond ticks and rounds up (which made every send 0.5-1.5 ms late
/// and added that to every latency), and costs no hand-off between threads (a separate pacer
/// thread cost two wake-ups per request at 2000/s).
struct TimerFdClock {
    start: std::time::Instant,
    fd: tokio::io::unix::AsyncFd<TimerFd>,
}

struct TimerFd(nix::sys::timerfd::TimerFd);

impl std::os::fd::AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd;
        self.0.as_fd().as_raw_fd()
    }
}

impl TimerFdClock {
    fn new(start: std::time::Instant) -> std::io::Result<TimerFdClock> {
        use nix::sys::timerfd::{ClockId, TimerFlags};
        let fd = nix::sys::timerfd::TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        // `AsyncFd::new` is deprecated for types that may close their fd while registered; ours
        // owns it for the AsyncFd's whole life, which is the condition `register` asks for.
        #[allow(deprecated)]
        let fd = tokio::io::unix::AsyncFd::new(TimerFd(fd))?;
        Ok(TimerFdClock { start, fd })
    }
}

impl PaceClock for TimerFdClock {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    async fn sleep_until(&mut self, at: Duration) {
        use nix::sys::time::TimeSpec;
        use nix::sys::timerfd::{Expiration, TimerSetTimeFlags};
        let wait = at.saturating_sub(self.start.elapsed()).min(Duration::from_millis(50));
        if wait.is_zero() {
            return;
        }
        let timer = &self.fd.get_ref().0;
        if timer.set(Expiration::OneShot(TimeSpec::from_duration(wait)), TimerSetTimeFlags::empty()).is_err() {
            // Cannot happen with a valid relative time; fall back to the coarse timer.
            tokio::time::sleep(wait).await;
            return;
        }
        // No read(2) of the expiry count: re-arming with timerfd_settime resets it, and tokio
        // watches the fd edge-triggered, so clearing the cached readiness is enough. (One system
        // call less per wake-up.)
        loop {
            let Ok(mut guard) = self.fd.readable().await else { return };
            guard.clear_ready();
            if self.start.elapsed() >= at {
                return;
            }
            // Woken early (readiness left from before this sleep): re-arm for the rest.
            let rest = at.saturating_sub(self.start.elapsed());
            if rest.is_zero()
                || timer.set(Expiration::OneShot(TimeSpec::from_duration(rest)), TimerSetTimeFlags::empty()).is_err()
            {
                return;
            }
        }
    }
}

/// Follows `schedule` for the hits `first`, `first + stride`, ...: hands each to `dispatch` with
/// its due time (from the start), in batches of whatever is due at each wake-up, then sleeps
/// until the next is due. A late wake-up sends the overdue hits at once with their original times,
/// so the schedule never drifts. Returns true when stopped early (by `stop`, or by `dispatch`
/// returning false).
pub(crate) async fn pacer(
    schedule: &Schedule,
    first: u64,
    stride: u64,
    clock: &mut impl PaceClock,
    stop: &CancellationToken,
    dispatch: &mut impl Dispatch,
) -> bool {
    let total = schedule.total_hits();
    let mut n = first;
    loop {
        if stop.is_cancelled() {
            return true;
        }
        let due = schedule.due_by(clock.elapsed());
        while n < due {
            if !dispatch.dispatch(n, schedule.due(n).expect("n < total")).await {
                return true;
            }
            n += stride;
        }
        let Some(next) = schedule.due(n) else { return n < total };
        clock.sleep_until(next).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A virtual clock: sleeping jumps to the wake-up time, plus a fixed oversleep.
    struct FakeClock<'a> {
        now: &'a Cell<Duration>,
        oversleep: Duration,
    }

    impl PaceClock for FakeClock<'_> {
        fn elapsed(&self) -> Duration {
            self.now.get()
        }
        async fn sleep_until(&mut self, at: Duration) {
            self.now.set(self.now.get().max(at + self.oversleep));
        }
    }

    /// Runs the pacer on a virtual clock; `stall` makes dispatching hit N take that long.
    /// Returns (n, due, sent at) per hit.
    fn run_pacer(
        schedule: &Schedule,
        oversleep: Duration,
        stall: Option<(u64, Duration)>,
        first: u64,
        stride: u64,
    ) -> Vec<(u64, Duration, Duration)> {
        let now = Cell::new(Duration::ZERO);
        let mut clock = FakeClock { now: &now, oversleep };
        let mut sent = Vec::new();
        let stop = CancellationToken::new();
        let mut record = |n, due| {
            sent.push((n, due, now.get()));
            if let Some((at, pause)) = stall {
                if n == at {
                    now.set(now.get() + pause);
                }
            }
            true
        };
        let fut = pacer(schedule, first, stride, &mut clock, &stop, &mut record);
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
        sent
    }

    #[test]
    fn pacer_sends_exactly_the_schedule_on_time() {
        let sent = run_pacer(&Schedule::constant(500.0, Duration::from_secs(4)), Duration::ZERO, None, 0, 1);
        assert_eq!(sent.len(), 2000);
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!(*n, i as u64);
            assert_eq!(*due, Duration::from_millis(2 * i as u64));
            assert_eq!(at, due, "hit {i} sent off schedule");
        }
    }

    #[test]
    fn threads_share_the_schedule_by_stride() {
        let schedule = Schedule::constant(500.0, Duration::from_secs(1));
        let a = run_pacer(&schedule, Duration::ZERO, None, 0, 2);
        let b = run_pacer(&schedule, Duration::ZERO, None, 1, 2);
        assert_eq!(a.len() + b.len(), 500);
        let mut all: Vec<u64> = a.iter().chain(&b).map(|s| s.0).collect();
        all.sort_unstable();
        assert!(all.iter().enumerate().all(|(i, n)| *n == i as u64));
        assert!(b.iter().all(|(n, due, at)| *due == Duration::from_millis(2 * n) && at == due));
    }

    #[test]
    fn pacer_batches_what_is_due_when_it_wakes_late() {
        // 10,000/s, and every sleep overshoots by 1 ms: hits go out in batches of about 10, each
        // still stamped with its own due time.
        let sent =
            run_pacer(&Schedule::constant(10_000.0, Duration::from_secs(1)), Duration::from_millis(1), None, 0, 1);
        assert_eq!(sent.len(), 10_000);
        let wakes = sent.windows(2).filter(|w| w[1].2 != w[0].2).count() + 1;
        assert!((900..=1000).contains(&wakes), "{wakes} wake-ups");
        assert!(sent.iter().enumerate().all(|(i, s)| s.1 == Duration::from_micros(100 * i as u64)));
        assert!(sent.iter().all(|s| s.2 >= s.1 && s.2 - s.1 <= Duration::from_micros(1100)));
    }

    #[test]
    fn pacer_catches_up_after_a_stall_keeping_scheduled_times() {
        // 1000/s for 1 s; dispatching hit 100 stalls for 300 ms.
        let stall = Some((100, Duration::from_millis(300)));
        let sent = run_pacer(&Schedule::constant(1000.0, Duration::from_secs(1)), Duration::ZERO, stall, 0, 1);
        assert_eq!(sent.len(), 1000);
        assert_eq!(sent[101].1, Duration::from_millis(101));
        assert_eq!(sent[101].2, Duration::from_millis(400));
        // The overdue hits went out in one burst at 400 ms, then the pacer was back on schedule.
        assert_eq!(sent[400].2, Duration::from_millis(400));
        assert_eq!(sent[401].2, Duration::from_millis(401));
    }

    #[test]
    fn pacer_follows_a_ramp() {
        let schedule = Schedule::ramp(100.0, 1000.0, Duration::from_secs(2), Duration::from_secs(3));
        let sent = run_pacer(&schedule, Duration::ZERO, None, 0, 1);
        assert_eq!(sent.len(), 1100 + 1000);
        let in_window = |from: f64, to: f64| sent.iter().filter(|s| (from..to).contains(&s.2.as_secs_f64())).count();
        // Around t = 0.5 s the rate is 325/s; in the hold it is 1000/s.
        let early = in_window(0.4, 0.6);
        assert!((64..=66).contains(&early), "{early}");
        assert_eq!(in_window(2.0, 2.5), 500);
    }

    #[test]
    fn pacer_stops_when_told_or_when_dispatch_fails() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let schedule = Schedule::constant(100.0, Duration::from_secs(10));
        let stop = CancellationToken::new();
        let now = Cell::new(Duration::ZERO);
        let mut count = 0;
        let stopped = rt.block_on(pacer(
            &schedule,
            0,
            1,
            &mut FakeClock { now: &now, oversleep: Duration::ZERO },
            &stop,
            &mut |n, _| {
                count += 1;
                if n == 24 {
                    stop.cancel();
                }
                true
            },
        ));
        assert!(stopped);
        assert_eq!(count, 25);
        let now = Cell::new(Duration::ZERO);
        let mut clock = FakeClock { now: &now, oversleep: Duration::ZERO };
        let stopped = rt.block_on(pacer(&schedule, 0, 1, &mut clock, &CancellationToken::new(), &mut |n, _| n < 5));
        assert!(stopped);
    }

    /// Records when (on tokio's clock) each hit was dispatched; dispatching hit `stall.0` takes
    /// `stall.1` of (paused, auto-advancing) time, as a full job queue would.
    struct Recorder {
        start: tokio::time::Instant,
        sent: Vec<(u64, Duration, Duration)>,
        stall: Option<(u64, Duration)>,
    }

    impl Dispatch for Recorder {
        async fn dispatch(&mut self, n: u64, due: Duration) -> bool {
            self.sent.push((n, due, self.start.elapsed()));
            if let Some((at, pause)) = self.stall {
                if n == at {
                    tokio::time::sleep(pause).await;
                }
            }
            true
        }
    }

    async fn run_on_tokio_clock(schedule: &Schedule, stall: Option<(u64, Duration)>) -> Vec<(u64, Duration, Duration)> {
        let start = tokio::time::Instant::now();
        let mut clock = TokioClock { start };
        let mut recorder = Recorder { start, sent: Vec::new(), stall };
        let stopped = pacer(schedule, 0, 1, &mut clock, &CancellationToken::new(), &mut recorder).await;
        assert!(!stopped);
        recorder.sent
    }

    #[tokio::test(start_paused = true)]
    async fn paused_clock_500_per_second_for_4s_is_2000_sends_on_time() {
        let start = tokio::time::Instant::now();
        let sent = run_on_tokio_clock(&Schedule::constant(500.0, Duration::from_secs(4)), None).await;
        assert_eq!(sent.len(), 2000);
        for (i, (n, due, at)) in sent.iter().enumerate() {
            assert_eq!((*n, *due), (i as u64, Duration::from_millis(2 * i as u64)));
            assert_eq!(at, due, "hit {i} sent off schedule");
        }
        // The run took the schedule's length of (virtual) time: no drift.
        assert_eq!(start.elapsed(), Duration::from_millis(3998));
    }

    #[tokio::test(start_paused = true)]
    async fn paused_clock_ramp_and_steps_follow_the_rate() {
        // 100 -> 1000/s over 2 s, then 1 s at 1000/s: 1100 + 1000 hits.
        let ramp = Schedule::ramp(100.0, 1000.0, Duration::from_secs(2), Duration::from_secs(3));
        let sent = run_on_tokio_clock(&ramp, None).await;
        assert_eq!(sent.len(), 2100);
        // tokio's timer rounds up to the millisecond: never early, at most 1 ms late.
        assert!(sent.iter().all(|(_, due, at)| at >= due && *at - *due <= Duration::from_millis(1)));
        let per_tenth = |from: f64| sent.iter().filter(|s| (from..from + 0.1).contains(&s.1.as_secs_f64())).count();
        // The rate at t is 100 + 450 t per second: ~32 in [0.5, 0.6), ~77 in [1.5, 1.6), 100 in the hold.
        assert!((31..=34).contains(&per_tenth(0.5)), "{}", per_tenth(0.5));
        assert!((76..=79).contains(&per_tenth(1.5)), "{}", per_tenth(1.5));
        assert_eq!(per_tenth(2.5), 100);

        let steps = Schedule::steps(&[400.0, 800.0], Duration::from_secs(1), None);
        let sent = run_on_tokio_clock(&steps, None).await;
        assert_eq!(sent.len(), 1200);
        assert_eq!(sent.iter().filter(|s| s.1 < Duration::from_secs(1)).count(), 400);
    }

    #[tokio::test(start_paused = true)]
    async fn paused_clock_stall_is_caught_up_with_the_original_times() {
        // 1000/s for 1 s; dispatching hit 100 blocks for 300 ms.
        let sent = run_on_tokio_clock(
            &Schedule::constant(1000.0, Duration::from_secs(1)),
            Some((100, Duration::from_millis(300))),
        )
        .await;
        assert_eq!(sent.len(), 1000);
        // Hits 101..=400 were overdue: sent in one burst at 400 ms, each with its own due time,
        // and then back on schedule.
        assert!(sent[101..=400].iter().all(|s| s.2 == Duration::from_millis(400)));
        assert_eq!(sent[101].1, Duration::from_millis(101));
        assert_eq!(sent[401].2, Duration::from_millis(401));
        assert!(sent.iter().enumerate().all(|(i, s)| s.1 == Duration::from_millis(i as u64)));
    }

    #[test]
    fn timerfd_clock_wakes_on_time() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut clock = TimerFdClock::new(std::time::Instant::now()).unwrap();
            for ms in [3u64, 7, 20] {
                let at = Duration::from_millis(ms);
                clock.sleep_until(at).await;
                let now = clock.elapsed();
                // Never early; late only by scheduling noise (generous bound for busy machines).
                assert!(now >= at && now < at + Duration::from_millis(30), "{now:?} for {at:?}");
            }
        });
    }
}
