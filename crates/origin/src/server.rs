//! The HTTP server: HTTP/1.1 and h2c on one port (or TLS with ALPN), one task per connection, the
//! simulated routes and faults. `serve` takes a bound listener and a shutdown future.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::admin::AdminPolicy;
use crate::conn::{ConnCtl, ConnLimits, FaultableStream};
use crate::content::Payload;
use crate::recipe::{FaultKind, Handler};
use crate::response::{full, Body, APPLICATION_JSON, TEXT_HTML};
use crate::simulation::{Outcome, Route, Simulation};

/// How long a `hang` fault holds a connection at most (the client normally gives up first).
const HANG_LIMIT: Duration = Duration::from_secs(300);
/// Largest request body the echo and fibonacci handlers read.
const MAX_REQUEST_BODY: usize = 16 << 20;

/// What every connection shares.
pub(crate) struct Shared {
    pub sim: Arc<Simulation>,
    pub admin: AdminPolicy,
    pub limits: ConnLimits,
    /// `Alt-Svc` on every response over TCP when HTTP/3 is served on the same port.
    pub alt_svc: Option<HeaderValue>,
}

/// A request body of any HTTP version (hyper's, or one read whole from an HTTP/3 stream).
pub(crate) trait RequestBody:
    hyper::body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send
{
}
impl<B> RequestBody for B where
    B: hyper::body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send
{
}

/// Accepts connections until `shutdown` resolves.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: crate::Shutdown,
) {
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => { tokio::time::sleep(Duration::from_millis(10)).await; continue }
            },
            _ = &mut shutdown => return,
        };
        let shared = Arc::clone(&shared);
        let tls = tls.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let ctl = ConnCtl::new();
            let stream = FaultableStream { stream, ctl: Arc::clone(&ctl) };
            let limits = shared.limits;
            let c2 = Arc::clone(&ctl);
            let svc = service_fn(move |req| handle(req, Arc::clone(&shared), Arc::clone(&c2), peer));
            let builder = auto::Builder::new(TokioExecutor::new());
            let served = async {
                match tls {
                    Some(acceptor) => {
                        if let Ok(s) = acceptor.accept(stream).await {
                            let _ = builder.serve_connection(TokioIo::new(s), svc).await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                    }
                }
            };
            // A fault or a timeout drops the connection (and with it the stream, see
            // FaultableStream's Drop).
            tokio::select! {
                _ = served => {}
                _ = ctl.aborted() => {}
                _ = ctl.expired(limits) => {}
            }
        });
    }
}

/// Decrements the in-flight gauge however the request ends.
struct InFlight<'a>(&'a std::sync::atomic::AtomicI64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    ctl: Arc<ConnCtl>,
    peer: SocketAddr,
) -> Result<Response<Body>, Infallible> {
    let mut resp = handle_tcp(req, &shared, ctl, peer).await;
    if let Some(v) = &shared.alt_svc {
        resp.headers_mut().insert(http::header::ALT_SVC, v.clone());
    }
    Ok(resp)
}

async fn handle_tcp(req: Request<Incoming>, shared: &Shared, ctl: Arc<ConnCtl>, peer: SocketAddr) -> Response<Body> {
    let path = req.uri().path();
    if path == "/_admin" || path.starts_with("/_admin/") {
        let _active = ctl.request();
        if !shared.admin.enabled {
            return full(StatusCode::NOT_FOUND, TEXT_HTML, "Not found");
        }
        // `to_canonical`: a dual-stack `[::]` listener sees IPv4 loopback as ::ffff:127.0.0.1.
        if shared.admin.loopback_only && !peer.ip().to_canonical().is_loopback() {
            return full(StatusCode::FORBIDDEN, TEXT_HTML, "the admin API answers on loopback only");
        }
        return crate::admin::handle(req, &shared.sim, &shared.admin).await;
    }
    answer(req, shared, &ctl).await
}

/// Answers a simulated route (any HTTP version; the admin API is answered over TCP only).
pub(crate) async fn answer<B: RequestBody>(req: Request<B>, shared: &Shared, ctl: &Arc<ConnCtl>) -> Response<Body> {
    let _active = ctl.request();
    let path = req.uri().path();
    if path == "/_admin" || path.starts_with("/_admin/") {
        return full(StatusCode::NOT_FOUND, TEXT_HTML, "Not found: the admin API answers over TCP");
    }
    if !matches!(*req.method(), Method::GET | Method::POST | Method::HEAD) {
        let mut r = full(StatusCode::METHOD_NOT_ALLOWED, TEXT_HTML, "Method not allowed");
        r.headers_mut().insert(http::header::ALLOW, HeaderValue::from_static("GET, POST, HEAD"));
        return r;
    }
    let counters = &shared.sim.counters;
    counters.in_flight.fetch_add(1, Ordering::Relaxed);
    let _in_flight = InFlight(&counters.in_flight);
    let started = Instant::now();
    let route = shared.sim.table().find(path).cloned();
    let Some(route) = route else {
        counters.current.count(Outcome::Status(404));
        return full(StatusCode::NOT_FOUND, TEXT_HTML, "Not found");
    };
    let count = |outcome: Outcome| {
        counters.current.count(outcome);
        route.counts.count(outcome);
        counters.observe(started.elapsed().as_secs_f64());
    };
    simulate(req, &route, ctl, count).await
}

/// Answers one simulated request, calling `count` once with how it ended (before a fault drops
/// the connection, since the request's future is then dropped too).
async fn simulate<B: RequestBody>(
    req: Request<B>,
    route: &Route,
    ctl: &ConnCtl,
    count: impl Fn(Outcome),
) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let Some(index) = route.stage_index(Instant::now()) else {
        count(Outcome::Status(406));
        return respond(route, 406, route.error_body(406, &path), false);
    };
    let stage = &route.recipe.stages[index];
    // A stage with a capacity: hold one of its permits while serving; wait in its queue, or
    // overflow at once when the queue is full.
    let _permit = match &route.gates[index] {
        None => None,
        Some(gate) => match gate.permits.try_acquire() {
            Ok(p) => Some(p),
            Err(_) => {
                if gate.waiting.fetch_add(1, Ordering::AcqRel) >= gate.capacity.queue {
                    gate.waiting.fetch_sub(1, Ordering::AcqRel);
                    let status = gate.capacity.overflow_status;
                    count(Outcome::Status(status));
                    return respond(route, status, route.error_body(status, &path), false);
                }
                // The waiting count drops however the wait ends (a client gone drops this future).
                let _waiting = Waiting(&gate.waiting);
                gate.permits.acquire().await.ok()
            }
        },
    };
    let latency = stage.latency.draw();
    if !latency.is_zero() {
        crate::timer::sleep(latency).await;
    }
    if let Some(fault) = stage.fault.filter(|f| f.probability >= 1.0 || rand::random::<f64>() < f.probability) {
        match fault.kind {
            FaultKind::Reset | FaultKind::Close => {
                count(Outcome::Fault(fault.kind.name()));
                ctl.abort(fault.kind == FaultKind::Reset);
                // The connection task drops the connection; this response is never sent.
                std::future::pending::<()>().await;
            }
            FaultKind::Hang => {
                count(Outcome::Fault("hang"));
                tokio::time::sleep(HANG_LIMIT).await;
                ctl.abort(false);
                std::future::pending::<()>().await;
            }
            FaultKind::SlowBody { bytes_per_sec } => {
                let (status, body, json) = payload_body(req, route, stage.status, &path).await;
                let mut r = respond(route, status, Bytes::new(), json);
                r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
                *r.body_mut() = Either::Right(slow(body, bytes_per_sec));
                count(Outcome::Fault("slow_body"));
                return r;
            }
        }
    }
    let (status, body, json) = payload_body(req, route, stage.status, &path).await;
    count(Outcome::Status(status));
    respond(route, status, body, json)
}

/// Leaves a capacity's queue when dropped.
struct Waiting<'a>(&'a std::sync::atomic::AtomicU32);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The status, body and whether it is JSON: the payload or handler output for 200 (or 413
/// when a handler's request body is over its cap), else the error body.
async fn payload_body<B: RequestBody>(req: Request<B>, route: &Route, status: u16, path: &str) -> (u16, Bytes, bool) {
    let error = |status: u16| {
        let text_json = crate::simulation::error_text(status, path).starts_with('{');
        (status, route.error_body(status, path), text_json)
    };
    if status != 200 {
        return error(status);
    }
    match &route.payload {
        Payload::Handler(h) => {
            let Some(body) = read_capped(req).await else { return error(413) };
            let out = match h {
                Handler::Echo => body,
                Handler::Empty => Bytes::new(),
                // Big numbers take a while: off the event loop, so other requests do not wait.
                Handler::Fibonacci => {
                    tokio::task::spawn_blocking(move || fibonacci_reply(&body)).await.unwrap_or_default()
                }
            };
            let json = out.first() == Some(&b'{');
            (200, if route.gzip { crate::content::gzip(&out) } else { out }, json)
        }
        // The CPU a service spends compressing on the request path, on this request's thread.
        p if route.compress_each => (200, crate::content::gzip(&p.pick()), route.payload_json),
        p => (200, p.pick(), route.payload_json),
    }
}

/// The request body, or `None` when it is over `MAX_REQUEST_BODY` (read no further than that).
async fn read_capped<B: RequestBody>(req: Request<B>) -> Option<Bytes> {
    let announced = req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_REQUEST_BODY as u64) {
        return None;
    }
    match http_body_util::Limited::new(req.into_body(), MAX_REQUEST_BODY).collect().await {
        Ok(b) => Some(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => None,
        // The client went away mid-body: nothing to answer.
        Err(_) => Some(Bytes::new()),
    }
}

fn fibonacci_reply(body: &[u8]) -> Bytes {
    let parsed: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let n = parsed.get("fib").and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok())).unwrap_or(0).min(100_000);
    let name = parsed.get("name").and_then(|v| v.as_str()).unwrap_or_default();
    let reply = serde_json::json!({
        "uuid": uuid::Uuid::new_v4().to_string(),
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "fibonacci": crate::content::fibonacci(n as u32),
        "service": "loadlab",
        "name": name,
    });
    Bytes::from(reply.to_string())
}

/// A response with the route's headers; the content type follows the body unless the recipe
/// sets one.
fn respond(route: &Route, status: u16, body: Bytes, json: bool) -> Response<Body> {
    let mut r = Response::new(Either::Left(Full::new(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    if !route.has_content_type {
        let ct = if json && status != 304 { APPLICATION_JSON } else { TEXT_HTML };
        h.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    for (k, v) in &route.headers {
        h.append(k.clone(), v.clone());
    }
    r
}

/// Streams `body` at `bytes_per_sec`, a tenth of a second at a time.
fn slow(
    body: Bytes,
    bytes_per_sec: u64,
) -> StreamBody<tokio_stream::wrappers::ReceiverStream<Result<Frame<Bytes>, Infallible>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let chunk = (bytes_per_sec / 10).max(1) as usize;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut at = 0;
        while at < body.len() {
            tick.tick().await;
            let end = (at + chunk).min(body.len());
            if tx.send(Ok(Frame::data(body.slice(at..end)))).await.is_err() {
                return;
            }
            at = end;
        }
    });
    StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx))
}
