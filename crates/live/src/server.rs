//! The live view's HTTP server: HTTP/1.1, a task per connection, on loopback unless asked.
//!
//! In a cluster its port is open to every pod, and it shares the process with an attack whose
//! connections must never lack a file descriptor. So it is bounded: at most `connection_cap()`
//! connections (a small share of the descriptors; beyond it a connection gets a 503 and is
//! closed at once), a request head must arrive within `HEAD_TIMEOUT` (idle keep-alive
//! connections included), and heads are read into at most `MAX_READ` bytes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;

use crate::state::Live;

/// Dashboards and event readers served at once; more get 503 (each costs a snapshot a second).
const MAX_WATCHERS: usize = 16;
/// The most connections served at once, whatever the descriptor limit.
const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send a request head (or sit idle between requests).
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The read buffer of a connection: a request head larger than this is refused.
const MAX_READ: usize = 16 * 1024;
/// What a connection beyond the cap is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 21\r\nconnection: close\r\n\r\ntoo many connections\n";

/// Connections the live view may hold: a sixteenth of the process's file descriptors, between 4
/// and `MAX_CONNECTIONS`, so that the attack beside it keeps the rest.
pub fn connection_cap() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).map_or(1024, |(s, _)| s);
    usize::try_from(soft / 16).unwrap_or(MAX_CONNECTIONS).clamp(4, MAX_CONNECTIONS)
}

/// Why the live view could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveError(pub String);

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LiveError {}

/// Binds `addr` (`HOST:PORT`, port 0 for any): loopback only unless `public`.
pub async fn bind(addr: &str, public: bool) -> Result<TcpListener, LiveError> {
    let bad = |why: String| LiveError(format!("--live {addr}: {why}"));
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host(addr).await.map_err(|e| bad(e.to_string()))?.collect();
    let first = resolved.first().ok_or_else(|| bad("no address".into()))?;
    if !public && !resolved.iter().all(|a| a.ip().is_loopback()) {
        return Err(bad("not a loopback address (add --live-public to serve other hosts)".into()));
    }
    TcpListener::bind(first).await.map_err(|e| bad(e.to_string()))
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    r.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    r
}

/// Serves `live` on `listener` until `stop` resolves. Boxed here: a caller that spawned this
/// crate's future type would compile the server (hyper's connections, the handlers) again.
pub fn serve(
    listener: TcpListener,
    live: Arc<Live>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> futures_core::future::BoxFuture<'static, ()> {
    serving(listener, live, Box::pin(stop))
}

fn serving(
    listener: TcpListener,
    live: Arc<Live>,
    stop: futures_core::future::BoxFuture<'static, ()>,
) -> futures_core::future::BoxFuture<'static, ()> {
    Box::pin(serve_until(listener, live, stop))
}

async fn serve_until(listener: TcpListener, live: Arc<Live>, mut stop: futures_core::future::BoxFuture<'static, ()>) {
    let watchers = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(tokio::sync::Semaphore::new(connection_cap()));
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue }
            },
            _ = &mut stop => return,
        };
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            // Full: say so without waiting on the peer (a full send buffer drops the line).
            let _ = stream.try_write(BUSY);
            continue;
        };
        let live = Arc::clone(&live);
        let watchers = Arc::clone(&watchers);
        tokio::spawn(async move {
            let svc = service_fn(move |req| handle(req, Arc::clone(&live), Arc::clone(&watchers)));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_READ)
                .serve_connection(TokioIo::new(stream), svc)
                .await;
            drop(permit);
        });
    }
}

/// Counts a watcher out when its event stream ends.
struct Watcher(Arc<AtomicUsize>);

impl Drop for Watcher {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn handle(
    req: Request<Incoming>,
    live: Arc<Live>,
    watchers: Arc<AtomicUsize>,
) -> Result<Response<Body>, Infallible> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only"));
    }
    if let Some(name) = req.uri().path().strip_prefix("/results/") {
        return Ok(results_file(&live, name).await);
    }
    Ok(match req.uri().path() {
        "/" => full(StatusCode::OK, "text/html; charset=utf-8", crate::page::dashboard(live.title())),
        "/metrics" => {
            full(StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", crate::prometheus::render(&live.lock()))
        }
        "/api/snapshot" => full(StatusCode::OK, "application/json", live.snapshot().to_string()),
        "/events" => {
            if watchers.fetch_add(1, Ordering::AcqRel) >= MAX_WATCHERS {
                watchers.fetch_sub(1, Ordering::AcqRel);
                return Ok(full(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "too many live viewers"));
            }
            let guard = Watcher(watchers);
            let ticks = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(Duration::from_secs(1)));
            let events = ticks.map(move |_| {
                let _ = &guard;
                Ok::<_, Infallible>(Frame::data(Bytes::from(format!("data: {}\n\n", live.snapshot()))))
            });
            let mut r = Response::new(BodyExt::boxed(StreamBody::new(events)));
            r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
            r.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
            r
        }
        _ => {
            full(StatusCode::NOT_FOUND, "text/plain", "not found: try /, /metrics, /api/snapshot, /events or /results/")
        }
    })
}

/// `/results/`: the index of the files offered; `/results/NAME`: one of them, streamed.
async fn results_file(live: &Arc<Live>, name: &str) -> Response<Body> {
    if name.is_empty() {
        return full(StatusCode::OK, "application/json", live.shelf.index().to_string());
    }
    let Some(path) = live.shelf.find(name) else {
        return full(StatusCode::NOT_FOUND, "text/plain", "no such file: see /results/");
    };
    let file = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(e) => return full(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", e.to_string()),
    };
    let len = file.metadata().await.map_or(0, |m| m.len());
    let (live, name) = (Arc::clone(live), name.to_owned());
    let mut sent = 0u64;
    let chunks = tokio_util::io::ReaderStream::with_capacity(file, 64 * 1024).map_while(move |chunk| {
        // A read error ends the body short: the client sees fewer bytes than content-length.
        let chunk = chunk.ok()?;
        sent += chunk.len() as u64;
        if sent == len {
            live.shelf.fetched(&name);
        }
        Some(Ok::<_, Infallible>(Frame::data(chunk)))
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(chunks)));
    let headers = r.headers_mut();
    headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_LENGTH, header::HeaderValue::from(len));
    r
}
