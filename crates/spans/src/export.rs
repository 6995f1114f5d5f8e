//! The client half: each request of a traced run as loadlab's own client span, exported over
//! OTLP/HTTP (protobuf) to a collector the user runs, so that a trace in their backend shows the
//! request as loadlab saw it (sent, first byte, last byte) around the server's spans. The span's
//! id is the parent id the request's `traceparent` carried: the server's span is its child.
//!
//! A [`ClientSpans`] is a results consumer: fed by a live attack it never holds the generator
//! back (a batch the sender has no room for is dropped and counted, as the SDKs' batch processor
//! does); fed from a file after the load (a lab's step) it waits for room instead. One thread
//! sends, a batch at a time, each within a time; a collector that fails a batch three times is
//! not sent the rest.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;
use results::trace::TraceKey;
use results::{Entry, RunEnd, RunHeader};
use serde::{Deserialize, Serialize};

/// Spans a request carries: about 200 bytes each, so a batch is about 400 KB.
pub const BATCH: usize = 2048;
/// Batches waiting for the sender.
const QUEUE: usize = 8;
/// One export's time, connect to answer.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// Tries of one batch (OTLP's retryable answers: 429, 502, 503, 504, or no answer).
const ATTEMPTS: u32 = 3;
/// How long the run's end waits for batches still queued.
pub const END_WAIT: Duration = Duration::from_secs(30);
/// The longest text kept in an attribute (a URL, an error).
const MAX_TEXT: usize = 512;

/// What became of a run's client spans.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Exported {
    /// Where they went (without credentials).
    pub url: String,
    /// Taken by the collector.
    pub exported: u64,
    /// Sent, and refused by the collector in its answer's partial success.
    #[serde(default)]
    pub rejected: u64,
    /// Not sent: dropped while the sender had no room, or left after a failure or past the wait.
    #[serde(default)]
    pub unsent: u64,
    /// Why the sending stopped, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Exported {
    /// `client spans: 1,200 exported to http://collector:4318/v1/traces`, with what was not.
    pub fn line(&self) -> String {
        let total = self.exported + self.rejected + self.unsent;
        let mut line = if self.exported == total {
            format!("client spans: {} exported to {}", self.exported, self.url)
        } else {
            format!("client spans: {} of {total} exported to {}", self.exported, self.url)
        };
        if self.rejected > 0 {
            line.push_str(&format!("; {} refused by the collector", self.rejected));
        }
        if self.unsent > 0 {
            line.push_str(&format!("; {} not sent", self.unsent));
        }
        if let Some(e) = &self.error {
            line.push_str(&format!(" ({e})"));
        }
        line
    }
}

/// Where and how to export.
#[derive(Clone, Debug)]
pub struct Target {
    /// The traces URL (`.../v1/traces`).
    pub url: String,
    /// Headers every export carries (a collector's credentials).
    pub headers: Vec<(String, String)>,
    pub tls: client::TlsOptions,
    /// The resource's `service.name`.
    pub service: String,
}

impl Target {
    /// `url` as given: a base (no path, or `/`) gets `/v1/traces`, as OTLP's endpoint variable
    /// does; any other path is used as it is. Headers and the service's name from the standard
    /// variables (`OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`, `OTEL_SERVICE_NAME`), else `loadlab`.
    pub fn new(url: &str) -> Result<Target, String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("{url:?}: {e}"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
            return Err(format!("{url:?}: an http:// or https:// URL of an OTLP/HTTP collector"));
        }
        let url = if matches!(uri.path(), "" | "/") && uri.query().is_none() {
            format!("{}/v1/traces", url.trim_end_matches('/'))
        } else {
            url.to_owned()
        };
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let headers = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|h| headers(&h))
            .transpose()?
            .unwrap_or_default();
        let service = var("OTEL_SERVICE_NAME").unwrap_or_else(|| "loadlab".to_owned());
        Ok(Target { url, headers, tls: client::TlsOptions::default(), service })
    }

    /// The URL as it is shown (without credentials).
    pub fn shown(&self) -> String {
        client::without_credentials(&self.url)
    }
}

/// `key1=value1,key2=value2` (values percent-encoded), as OTLP's headers variable is written.
fn headers(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').ok_or("OTEL_EXPORTER_OTLP_HEADERS: a key=value pair without '='")?;
            let v = percent_encoding::percent_decode_str(v.trim()).decode_utf8_lossy().into_owned();
            Ok((k.trim().to_owned(), v))
        })
        .collect()
}

/// Whether the run's end waits for room in the queue (a file) or drops (a live attack).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    Live,
    AfterLoad,
}

/// An encoded batch and its spans' count.
type Sent = (Bytes, u64);

/// The consumer that makes and exports a run's client spans.
pub struct ClientSpans {
    target: Target,
    pace: Pace,
    run: Option<Run>,
    batch: Vec<Span>,
    sender: Option<(SyncSender<Sent>, JoinHandle<()>)>,
    deadline: Arc<Mutex<Option<Instant>>>,
    outcome: Arc<Mutex<Exported>>,
}

/// What a run's header says that every span needs.
struct Run {
    key: TraceKey,
    start_ns: u64,
    warmup_us: u64,
    name: String,
}

impl ClientSpans {
    pub fn new(target: Target, pace: Pace) -> ClientSpans {
        let outcome = Exported { url: target.shown(), ..Default::default() };
        ClientSpans {
            target,
            pace,
            run: None,
            batch: Vec::new(),
            sender: None,
            deadline: Arc::default(),
            outcome: Arc::new(Mutex::new(outcome)),
        }
    }

    /// What became of the spans, read after the run's end.
    pub fn outcome(&self) -> Arc<Mutex<Exported>> {
        Arc::clone(&self.outcome)
    }

    fn ship(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.batch);
        let n = spans.len() as u64;
        let Some(run) = &self.run else { return };
        let body = Bytes::from(request(&self.target.service, &run.name, spans).encode_to_vec());
        let (tx, _) = self.sender.get_or_insert_with(|| {
            let (tx, rx) = sync_channel(QUEUE);
            let (target, deadline, outcome) =
                (self.target.clone(), Arc::clone(&self.deadline), Arc::clone(&self.outcome));
            (tx, std::thread::spawn(move || send_all(&rx, &target, &deadline, &outcome)))
        });
        let unsent = match self.pace {
            Pace::AfterLoad => tx.send((body, n)).is_err(),
            Pace::Live => match tx.try_send((body, n)) {
                Ok(()) => false,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => true,
            },
        };
        if unsent {
            lock(&self.outcome).unsent += n;
        }
    }
}

impl results::Consumer for ClientSpans {
    fn start(&mut self, header: &RunHeader) -> std::io::Result<()> {
        self.ship();
        self.run = header.plan().trace.as_deref().and_then(TraceKey::parse).map(|key| Run {
            key,
            start_ns: header.start_unix_ns,
            warmup_us: header.warmup_us(),
            name: header.name.clone(),
        });
        Ok(())
    }

    fn record(&mut self, entry: &Entry<'_>) -> std::io::Result<()> {
        let Some(run) = &self.run else { return Ok(()) };
        self.batch.push(client_span(run, entry));
        if self.batch.len() >= BATCH {
            self.ship();
        }
        Ok(())
    }

    fn end(&mut self, _: &RunEnd) -> std::io::Result<()> {
        self.ship();
        self.finish();
        Ok(())
    }
}

impl ClientSpans {
    /// Sends what is left and waits for the sender, at most [`END_WAIT`].
    fn finish(&mut self) {
        if let Some((tx, thread)) = self.sender.take() {
            *lock(&self.deadline) = Some(Instant::now() + END_WAIT);
            drop(tx);
            let _ = thread.join();
        }
    }
}

impl Drop for ClientSpans {
    fn drop(&mut self) {
        self.finish();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The sender's thread: each batch in turn, until the queue closes; after a batch fails every
/// try, or past the deadline, the rest are counted unsent.
fn send_all(rx: &Receiver<Sent>, target: &Target, deadline: &Mutex<Option<Instant>>, outcome: &Mutex<Exported>) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            lock(outcome).error = Some(format!("no runtime to send with: {e}"));
            return drain(rx, outcome);
        }
    };
    let mut headers = target.headers.clone();
    headers.push(("content-type".to_owned(), "application/x-protobuf".to_owned()));
    while let Ok((body, n)) = rx.recv() {
        let left = lock(deadline).map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) {
            let mut o = lock(outcome);
            o.unsent += n;
            o.error.get_or_insert_with(|| format!("still sending {} s after the run's end", END_WAIT.as_secs()));
            continue;
        }
        match runtime.block_on(post(target, &headers, body)) {
            Ok(rejected) => {
                let mut o = lock(outcome);
                o.rejected += rejected.min(n);
                o.exported += n - rejected.min(n);
            }
            Err(e) => {
                let mut o = lock(outcome);
                o.unsent += n;
                o.error = Some(e);
                drop(o);
                return drain(rx, outcome);
            }
        }
    }
}

/// Counts what is still queued as unsent.
fn drain(rx: &Receiver<Sent>, outcome: &Mutex<Exported>) {
    while let Ok((_, n)) = rx.recv() {
        lock(outcome).unsent += n;
    }
}

/// One batch, tried up to [`ATTEMPTS`] times: the spans the collector refused, or why it failed.
async fn post(target: &Target, headers: &[(String, String)], body: Bytes) -> Result<u64, String> {
    let opts = client::ClientOptions {
        timeout: POST_TIMEOUT,
        max_body: Some(1 << 20),
        redirects: None,
        tls: target.tls.clone(),
        ..Default::default()
    };
    let mut why = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
        }
        match client::post(&target.url, headers, body.clone(), opts.clone()).await {
            Ok(f) if (200..300).contains(&f.status) => {
                let answer = ExportTraceServiceResponse::decode(f.body).unwrap_or_default();
                return Ok(answer.partial_success.map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0)));
            }
            Ok(f) if matches!(f.status, 429 | 502 | 503 | 504) => why = format!("the collector answered {}", f.status),
            Ok(f) => return Err(format!("the collector answered {}", f.status)),
            Err(e) => why = results::text::plain_line(&e, MAX_TEXT),
        }
    }
    Err(why)
}

/// One request as loadlab's client span: from its send to its last byte (its wait for the
/// schedule an attribute), the first byte an event, named by its method as HTTP's conventions
/// name a client span.
fn client_span(run: &Run, entry: &Entry<'_>) -> Span {
    let r = entry.record;
    let at = |us: u64| run.start_ns.saturating_add(us.saturating_mul(1000));
    let sent = at(r.scheduled_us.saturating_add(r.lag_us));
    let end = at(r.scheduled_us.saturating_add(r.latency_us)).max(sent);
    let (method, url) = entry.target.and_then(|t| t.split_once(' ')).unwrap_or(("", ""));
    let url = client::without_credentials(url);
    let mut attributes = vec![
        text("http.request.method", method),
        text("url.full", &url),
        int("loadlab.seq", r.seq),
        int("loadlab.schedule_wait_us", r.lag_us),
    ];
    if let Ok(uri) = url.parse::<http::Uri>() {
        if let Some(host) = uri.host() {
            attributes.push(text("server.address", host));
        }
        let port = uri.port_u16().or(match uri.scheme_str() {
            Some("https") => Some(443),
            _ => Some(80),
        });
        attributes.extend(port.map(|p| int("server.port", u64::from(p))));
    }
    if r.status > 0 {
        attributes.push(int("http.response.status_code", u64::from(r.status)));
    }
    if r.scheduled_us < run.warmup_us {
        attributes.push(value("loadlab.warmup", any_value::Value::BoolValue(true)));
    }
    let failed = !r.is_success();
    if failed {
        let kind = if r.error == 0 || entry.error.is_none() {
            r.status.to_string()
        } else {
            results::text::plain_line(entry.error.unwrap_or_default(), MAX_TEXT)
        };
        attributes.push(text("error.type", &kind));
    }
    let events = (r.status > 0 && r.ttfb_us < r.latency_us)
        .then(|| span::Event {
            time_unix_nano: at(r.scheduled_us.saturating_add(r.ttfb_us)).max(sent),
            name: "response head".into(),
            ..Default::default()
        })
        .into_iter()
        .collect();
    Span {
        trace_id: run.key.trace_id(r.seq).to_be_bytes().to_vec(),
        span_id: run.key.span_id(r.seq).to_be_bytes().to_vec(),
        flags: 1,
        name: if method.is_empty() { "HTTP".into() } else { method.to_owned() },
        kind: span::SpanKind::Client as i32,
        start_time_unix_nano: sent,
        end_time_unix_nano: end,
        attributes,
        events,
        status: failed.then(|| Status {
            code: status::StatusCode::Error as i32,
            message: results::text::plain_line(entry.error.unwrap_or_default(), MAX_TEXT),
        }),
        ..Default::default()
    }
}

fn request(service: &str, run: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
    let mut resource = vec![text("service.name", service), text("service.version", env!("CARGO_PKG_VERSION"))];
    if !run.is_empty() {
        resource.push(text("loadlab.run", run));
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource { attributes: resource, ..Default::default() }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "loadlab".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn value(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(value) }), ..Default::default() }
}

fn text(key: &str, v: &str) -> KeyValue {
    value(key, any_value::Value::StringValue(v.chars().take(MAX_TEXT).collect()))
}

fn int(key: &str, v: u64) -> KeyValue {
    value(key, any_value::Value::IntValue(i64::try_from(v).unwrap_or(i64::MAX)))
}
