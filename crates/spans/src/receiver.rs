//! The lab's OTLP/HTTP receiver: `POST /v1/traces` on loopback, as an OpenTelemetry SDK or a
//! Collector's `otlphttp` exporter sends (protobuf or JSON, gzip or not), answered as the OTLP
//! specification says (200 with a partial success naming what was dropped; 400 for a body that
//! is no export; 404, 405, 413 and 415 for the rest). Bounded as a public server is: bodies,
//! connections, a head's read time.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTracePartialSuccess, ExportTraceServiceResponse};
use prost::Message;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::decode::{spans, Encoding, MAX_BODY};
use crate::store::Collector;

/// Connections served at once; more wait in the kernel's queue.
const MAX_CONNECTIONS: usize = 64;

/// How long a connection may take to send a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A running receiver; stops when [`Receiver::stop`] is called or it is dropped.
pub struct Receiver {
    pub addr: SocketAddr,
    pub collector: Collector,
    stop: CancellationToken,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Receiver {
    /// Listens on a free loopback port and serves until stopped.
    pub async fn start() -> std::io::Result<Receiver> {
        Receiver::start_on(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Listens on `addr` (where a collector the lab does not start is pointed) and serves until
    /// stopped.
    pub async fn start_on(addr: std::net::SocketAddr) -> std::io::Result<Receiver> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let collector = Collector::default();
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, collector.clone(), stop.clone()));
        Ok(Receiver { addr, collector, stop })
    }

    /// The base URL an exporter is given (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The traces URL (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub fn traces_endpoint(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    pub fn stop(&self) {
        self.stop.cancel();
    }
}

fn serve(
    listener: TcpListener,
    collector: Collector,
    stop: CancellationToken,
) -> futures_core::future::BoxFuture<'static, ()> {
    Box::pin(async move {
        let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            let permit = tokio::select! {
                p = Arc::clone(&open).acquire_owned() => match p { Ok(p) => p, Err(_) => return },
                _ = stop.cancelled() => return,
            };
            let stream = tokio::select! {
                r = listener.accept() => match r {
                    Ok((s, _)) => s,
                    Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue }
                },
                _ = stop.cancelled() => return,
            };
            let collector = collector.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| handle(req, collector.clone()));
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEAD_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), svc);
                tokio::select! {
                    _ = conn => {}
                    _ = stop.cancelled() => {}
                }
                drop(permit);
            });
        }
    })
}

fn answer(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    r
}

/// The OTLP answer to an export: empty when everything was taken, else a partial success
/// saying how many spans were dropped and why, in the request's own encoding.
fn accepted(encoding: Encoding, rejected: u64, why: &str) -> Response<Full<Bytes>> {
    let r = ExportTraceServiceResponse {
        partial_success: (rejected > 0)
            .then(|| ExportTracePartialSuccess { rejected_spans: rejected as i64, error_message: why.to_owned() }),
    };
    match encoding {
        Encoding::Protobuf => answer(StatusCode::OK, "application/x-protobuf", r.encode_to_vec()),
        Encoding::Json => {
            answer(StatusCode::OK, "application/json", serde_json::to_vec(&r).unwrap_or_else(|_| b"{}".to_vec()))
        }
    }
}

async fn handle(req: Request<Incoming>, collector: Collector) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() != "/v1/traces" {
        collector.refused();
        return Ok(answer(StatusCode::NOT_FOUND, "text/plain", "only /v1/traces is served here"));
    }
    if req.method() != Method::POST {
        collector.refused();
        return Ok(answer(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "POST only"));
    }
    let value_of = |name: header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let Some(encoding) = Encoding::of(value_of(header::CONTENT_TYPE)) else {
        collector.refused();
        return Ok(answer(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "text/plain",
            "application/x-protobuf or application/json",
        ));
    };
    let gzip = match value_of(header::CONTENT_ENCODING).trim().to_ascii_lowercase().as_str() {
        "" | "identity" => false,
        "gzip" => true,
        _ => {
            collector.refused();
            return Ok(answer(StatusCode::UNSUPPORTED_MEDIA_TYPE, "text/plain", "gzip or no content encoding"));
        }
    };
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            collector.refused();
            return Ok(answer(StatusCode::PAYLOAD_TOO_LARGE, "text/plain", format!("at most {MAX_BODY} bytes")));
        }
    };
    match spans(&body, encoding, gzip) {
        Ok((spans, malformed)) => {
            let dropped = collector.take(spans, malformed);
            Ok(accepted(encoding, dropped, "spans of traces this lab did not send, past its bounds, or malformed"))
        }
        Err(why) => {
            collector.refused();
            Ok(answer(StatusCode::BAD_REQUEST, "text/plain", why))
        }
    }
}
