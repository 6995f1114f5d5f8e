//! A worker: sends one request at a time over its own HTTP/1.1 connection or a shared HTTP/2
//! one (opening, reusing and retiring connections), follows redirects, sends again what a server
//! refused unprocessed, and reports each request's record.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use results::trace::TRACEPARENT_LEN;
use results::Record;

use crate::sink::{Outcome, SinkQueue};
use crate::targets::Target;
use client::LeanConn;
use client::{redirected, resolve_location, Origin, Prepared};
use client::{send_once, Conn, Connector, Protocol};
use client::{Exchange, Failure, FailureKind};
use results::Gauges;

/// How often a request the server refused unprocessed is sent (on a new connection each time).
const MAX_REFUSED_ATTEMPTS: u32 = 3;

static TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// A `traceparent` value as a header value (hex digits and dashes: always valid).
fn traceparent_value(v: &[u8; TRACEPARENT_LEN]) -> http::HeaderValue {
    http::HeaderValue::from_bytes(v).expect("hex digits and dashes make a header value")
}

pub(crate) struct SlotConn {
    conn: Conn,
    origin: Origin,
    uses: u64,
}

/// Opens a connection with `open`, counting it in the gauges when it took as long as a SYN
/// retransmission.
async fn timed<T>(gauges: &Gauges, open: impl std::future::Future<Output = Result<T, Failure>>) -> Result<T, Failure> {
    let started = Instant::now();
    let out = open.await;
    let took = started.elapsed();
    gauges.connect_max_us.fetch_max(took.as_micros() as u64, Ordering::Relaxed);
    if took >= crate::accept::SLOW_CONNECT {
        gauges.slow_connects.fetch_add(1, Ordering::Relaxed);
    }
    out
}

pub(crate) struct Shared {
    pub(crate) connector: Connector,
    /// Plain-TCP HTTP/1.1 goes through the lean client.
    pub(crate) lean: bool,
    pub(crate) prepared: Vec<Prepared>,
    /// By target, when it has templates: the target rendered per request (with the run's
    /// request settings, such as asking for gzip).
    pub(crate) templated: Vec<Option<Target>>,
    /// Templates' random values are a function of this and the sequence number.
    pub(crate) seed: u64,
    /// Each request's `traceparent`, from this key and its sequence number.
    pub(crate) trace: Option<results::trace::TraceKey>,
    /// Which of `prepared` each request goes to.
    pub(crate) mix: crate::mix::Mix,
    pub(crate) start: Instant,
    pub(crate) requests_per_conn: Option<u64>,
    /// Shared HTTP/2 connections.
    pub(crate) slots: Vec<tokio::sync::Mutex<Option<SlotConn>>>,
    pub(crate) gauges: Arc<Gauges>,
    /// Open model: hits not sent by then are not sent at all.
    pub(crate) send_deadline: Option<Instant>,
    pub(crate) sink: Arc<SinkQueue>,
}

#[derive(Clone)]
pub(crate) struct Job {
    pub(crate) seq: u64,
    pub(crate) scheduled: Instant,
    /// A replayed request and its label in the results; none sends the targets in turn.
    pub(crate) request: Option<(Arc<Prepared>, Arc<str>)>,
}

pub(crate) struct Worker {
    shared: Arc<Shared>,
    own: Option<SlotConn>,
    /// The worker's lean HTTP/1.1 connection, when it has one.
    lean: Option<LeanConn>,
    slot: usize,
    /// A traced request's HTTP/1.1 bytes, written here again for each (no allocation per request).
    traced: Vec<u8>,
}

impl Worker {
    /// A worker with no connection yet; `slot` picks its shared HTTP/2 connection.
    pub(crate) fn new(shared: Arc<Shared>, slot: usize) -> Worker {
        Worker { shared, own: None, lean: None, slot, traced: Vec::new() }
    }

    /// Opens the worker's plain HTTP/1.1 keep-alive connection before it takes a hit, where every
    /// target shares one origin: a hit then waits in the queue for whichever worker is ready
    /// first, not for this connection. Bound to a new connection, a hit waited out the target's
    /// full accept queue (a SYN retransmitted a second later) while the workers already
    /// connected were free again (nginx's worker stopped 1 s at 1,000/s: p99 1.03 s against the
    /// 0.90 s the stall explains). A failure here is nobody's request: the first hit dials again
    /// and records it (as does one that outlasts the request timeout).
    pub(crate) async fn connect_ahead(&mut self) {
        let shared = Arc::clone(&self.shared);
        let Some(first) = shared.prepared.first() else { return };
        let one_origin =
            shared.prepared.iter().all(|p| p.origin == first.origin) && shared.templated.iter().all(Option::is_none);
        if !(shared.lean && shared.connector.options().keepalive && !first.origin.tls && one_origin) {
            return;
        }
        let dial = timed(&shared.gauges, shared.connector.tcp(&first.origin));
        if let Ok(Ok(stream)) = tokio::time::timeout(shared.connector.options().timeout, dial).await {
            self.lean = Some(LeanConn::new(stream, first.origin.clone()));
        }
    }

    fn fresh(&self, c: &SlotConn, origin: &Origin) -> bool {
        c.origin == *origin && !c.conn.is_closed() && self.shared.requests_per_conn.is_none_or(|k| c.uses < k)
    }

    async fn acquire(&mut self, origin: &Origin, ex: &mut Exchange) -> Result<Conn, Failure> {
        if self.own.as_ref().is_some_and(|c| self.fresh(c, origin)) {
            let c = self.own.as_mut().expect("checked above");
            c.uses += 1;
            return Ok(c.conn.clone());
        }
        self.own = None;
        let shared = Arc::clone(&self.shared);
        let may_share = match shared.connector.options().protocol {
            Protocol::H2c => !origin.tls,
            Protocol::Http2 | Protocol::Http3 => origin.tls,
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
            let conn = timed(&shared.gauges, shared.connector.connect(origin)).await?;
            ex.new_conn = true;
            let c = SlotConn { conn: conn.clone(), origin: origin.clone(), uses: 1 };
            if conn.is_multiplexed() {
                *slot = Some(c);
                self.keep_shared(&conn, origin);
            } else {
                self.own = Some(c);
            }
            return Ok(conn);
        }
        let conn = timed(&shared.gauges, shared.connector.connect(origin)).await?;
        ex.new_conn = true;
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

    /// Sends `prepared` (with `traceparent` when given), following redirects.
    async fn exchange(
        &mut self,
        prepared: &Prepared,
        traceparent: Option<&[u8; TRACEPARENT_LEN]>,
        ex: &mut Exchange,
    ) -> Result<(), Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        let mut current = Cow::Borrowed(prepared);
        let lean = |p: &Prepared| shared.lean && !p.origin.tls;
        // The pooled clients send a header map: a traced request gets its own copy with the
        // header (the lean client splices it into its bytes instead).
        if let Some(v) = traceparent.filter(|_| !lean(prepared)) {
            current = Cow::Owned(prepared.with_header(TRACEPARENT.clone(), traceparent_value(v)));
        }
        let mut hops = 0u32;
        loop {
            let location = if lean(&current) {
                self.lean_exchange(&current, traceparent, ex).await?
            } else {
                self.pooled_exchange(&current, ex).await?
            };
            ex.conn_spent = false;
            let Some(to) = location else { return Ok(()) };
            match opts.redirects {
                None => return Ok(()),
                Some(max) if hops >= max => return Err(Failure::new(format!("stopped after {max} redirects"))),
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
        traceparent: Option<&[u8; TRACEPARENT_LEN]>,
        ex: &mut Exchange,
    ) -> Result<Option<http::Uri>, Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        let mut request: &[u8] = if opts.keepalive { &p.h1_keepalive } else { &p.h1_close };
        let mut traced = std::mem::take(&mut self.traced);
        if let Some(v) = traceparent {
            // The header line goes before the blank line that ends the head.
            let at = request.len() - p.body.len() - 2;
            traced.clear();
            traced.extend_from_slice(&request[..at]);
            traced.extend_from_slice(b"traceparent: ");
            traced.extend_from_slice(v);
            traced.extend_from_slice(b"\r\n");
            traced.extend_from_slice(&request[at..]);
            request = &traced;
        }
        let out = self.lean_send(p, request, ex).await;
        self.traced = traced;
        out
    }

    /// Sends `request`, the bytes of `p`, over the worker's lean connection.
    async fn lean_send(
        &mut self,
        p: &Prepared,
        request: &[u8],
        ex: &mut Exchange,
    ) -> Result<Option<http::Uri>, Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        loop {
            let reuse = self
                .lean
                .take()
                .filter(|c| c.origin == p.origin && self.shared.requests_per_conn.is_none_or(|k| c.uses < k));
            let mut conn = match reuse {
                // Opened ahead (`connect_ahead`): its first exchange is still a new connection's.
                Some(c) => {
                    ex.new_conn |= c.uses == 0;
                    c
                }
                None => {
                    let stream = timed(&self.shared.gauges, self.shared.connector.tcp(&p.origin)).await?;
                    ex.new_conn = true;
                    LeanConn::new(stream, p.origin.clone())
                }
            };
            conn.uses += 1;
            // On failure the connection is dropped with the error.
            match conn.exchange(request, p.method == http::Method::HEAD, opts.max_body, ex).await {
                Ok(location) => {
                    if opts.keepalive && !ex.conn_spent {
                        self.lean = Some(conn);
                    }
                    return Ok(location.and_then(|l| resolve_location(&p.abs_uri, &l)));
                }
                // A stale keep-alive connection: once more on a new one (which cannot be stale).
                Err(f) if f.kind == FailureKind::Stale && p.idempotent => {}
                Err(f) => return Err(f),
            }
        }
    }

    /// One request over a pooled connection: HTTP/1.1 over TLS (hyper), or HTTP/2 (h2).
    async fn pooled_exchange(&mut self, p: &Prepared, ex: &mut Exchange) -> Result<Option<http::Uri>, Failure> {
        let shared = Arc::clone(&self.shared);
        let opts = shared.connector.options();
        let mut attempt = 1;
        loop {
            let conn = self.acquire(&p.origin, ex).await?;
            let h2 = conn.is_multiplexed();
            let retire = conn.retire_handle();
            match send_once(conn, p, opts, ex).await {
                Ok(location) => {
                    if !h2 && (ex.conn_spent || !opts.keepalive) {
                        self.drop_own();
                    }
                    return Ok(location);
                }
                // Refused unprocessed (GOAWAY, REFUSED_STREAM): no new streams on that
                // connection, and the request goes again on another.
                Err(f) if f.kind == FailureKind::Refused && attempt < MAX_REFUSED_ATTEMPTS => {
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

    /// Sends `job`'s request and records its outcome; returns how long that took from the pick-up
    /// (the pool's drain estimate, read from the clock reads the record needs anyway).
    pub(crate) async fn execute(&mut self, job: Job) -> std::time::Duration {
        let shared = Arc::clone(&self.shared);
        let sent_at = Instant::now();
        // Too late to send: counted, never sent minutes after its time.
        if shared.send_deadline.is_some_and(|d| sent_at > d) {
            shared.gauges.not_sent.fetch_add(1, Ordering::Relaxed);
            return std::time::Duration::ZERO;
        }
        let rendered;
        let (target, prepared, label) = match &job.request {
            Some((p, label)) => (0, &**p, Some(Arc::clone(label))),
            None => {
                let t = shared.mix.pick(job.seq);
                match &shared.templated[t] {
                    None => (t, &shared.prepared[t], None),
                    Some(base) => match base.render(job.seq, shared.seed) {
                        Ok(r) => {
                            let opts = shared.connector.options();
                            rendered = if shared.lean && r.url.scheme_str() != Some("https") {
                                Prepared::for_lean(r.parts(), opts.keepalive)
                            } else {
                                Prepared::new(r.parts())
                            };
                            (t, &rendered, None)
                        }
                        // A value that makes no request (a file's line is no host name): a
                        // failed request, recorded.
                        Err(e) => {
                            shared.gauges.sent.fetch_add(1, Ordering::Relaxed);
                            let us = sent_at.saturating_duration_since(job.scheduled).as_micros() as u64;
                            let record = Record {
                                seq: job.seq,
                                target: t as u32,
                                scheduled_us: job.scheduled.saturating_duration_since(shared.start).as_micros() as u64,
                                latency_us: us,
                                ttfb_us: us,
                                lag_us: us,
                                ..Record::default()
                            };
                            shared.sink.push(Outcome { record, error: Some(e), target: None });
                            return std::time::Duration::ZERO;
                        }
                    },
                }
            }
        };
        let in_flight = shared.gauges.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        shared.gauges.peak_in_flight.fetch_max(in_flight, Ordering::Relaxed);
        shared.gauges.sent.fetch_add(1, Ordering::Relaxed);
        let mut ex = Exchange::default();
        let compressed = shared.connector.options().compressed;
        ex.decode = compressed;
        let timeout = shared.connector.options().timeout;
        let traceparent = shared.trace.map(|k| k.traceparent(job.seq));
        let result = tokio::time::timeout(timeout, self.exchange(prepared, traceparent.as_ref(), &mut ex)).await;
        let done = Instant::now();
        shared.gauges.in_flight.fetch_sub(1, Ordering::Relaxed);
        let error = match result {
            Ok(Ok(())) => None,
            Ok(Err(f)) => Some(f.text),
            Err(_) => {
                self.drop_own();
                Some("timeout".to_owned())
            }
        };
        if error.is_some() {
            ex.status = 0;
        }
        if compressed {
            shared.gauges.decoded_bytes_in.fetch_add(ex.decoded_bytes(), Ordering::Relaxed);
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
            bytes_out: prepared.body.len() as u64,
            error: 0,
            new_conn: ex.new_conn,
        };
        shared.sink.push(Outcome { record, error, target: label });
        done.saturating_duration_since(sent_at)
    }
}
