//! HTTP/3: QUIC connections by quinn, requests by the h3 crate (the stack oha uses). Each
//! connection has its own UDP socket and endpoint, driven on the event loop of the worker that
//! opened it, as a TCP connection is; requests are streams on it, shared by workers as HTTP/2's
//! are. 0-RTT is never used (a replayed request would be sent twice).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use http::{Request, Uri};
use tokio::time::Instant;

use crate::exchange::{Exchange, Failure, FailureKind};
use crate::request::{resolve_location, Origin, Prepared};
use crate::tls::{client_config, TlsOptions};

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An HTTP/3 connection: the h3 handle, and whether it is closed (its driver has ended, or the
/// server refused streams on it).
#[derive(Clone)]
pub struct H3Conn {
    send: SendRequest,
    pub(crate) closed: Arc<AtomicBool>,
}

/// The QUIC client configuration: TLS as for TCP (roots, `--insecure`, client certificates),
/// offering `h3` by ALPN.
pub(crate) fn quic_config(tls: &TlsOptions, timeout: std::time::Duration) -> Result<quinn::ClientConfig, String> {
    let tls = client_config(tls, &[b"h3"])?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("http3: TLS settings QUIC cannot use: {e}"))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    // The attack's timeout bounds each request; the connection stays up between them.
    transport.max_idle_timeout(Some(
        timeout
            .max(std::time::Duration::from_secs(1))
            .try_into()
            .map_err(|_| "http3: --timeout is too long for QUIC's idle timeout".to_owned())?,
    ));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Opens a QUIC connection to `addr` (named `origin.host` for TLS) and its HTTP/3 session.
pub(crate) async fn connect(
    config: &quinn::ClientConfig,
    addr: SocketAddr,
    origin: &Origin,
) -> Result<H3Conn, Failure> {
    let bind: SocketAddr = if addr.is_ipv6() { "[::]:0".parse() } else { "0.0.0.0:0".parse() }.expect("an address");
    let endpoint = quinn::Endpoint::client(bind).map_err(|e| Failure::connect(&e))?;
    let connecting = endpoint
        .connect_with(config.clone(), addr, &origin.host)
        .map_err(|e| Failure::new(format!("http3 connect: {e}")))?;
    let quic = connecting.await.map_err(|e| Failure::new(format!("http3 handshake: {e}")))?;
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic))
        .await
        .map_err(|e| Failure::new(format!("http3 handshake: {e}")))?;
    let closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        flag.store(true, Ordering::Relaxed);
        // The endpoint (its socket and driver) lives as long as the connection.
        drop(endpoint);
    });
    Ok(H3Conn { send, closed })
}

/// `e` as a failure; `idempotent` says whether a stream cut by a graceful close may go again.
fn stream_failure(e: &h3::error::StreamError, idempotent: bool) -> Failure {
    use h3::error::{Code, StreamError};
    let refused = match e {
        // GOAWAY: the server takes no new streams here; H3_REQUEST_REJECTED: it did not process
        // it. A graceful close (H3_NO_ERROR) should come after the server answered every stream
        // it took (RFC 9114 section 5.2), but a server that closes before its answers arrive
        // has processed the stream it cut: sent again only when that is safe (idempotent), as a
        // stale HTTP/1.1 connection's request is.
        StreamError::RemoteClosing { .. } => true,
        StreamError::RemoteTerminate { code, .. } => *code == Code::H3_REQUEST_REJECTED,
        _ if e.is_h3_no_error() => idempotent,
        _ => false,
    };
    Failure::new(format!("http3: {e}")).with_kind(if refused { FailureKind::Refused } else { FailureKind::Failed })
}

/// Sends `p` on a new stream of `conn` and reads the response, counting body bytes up to
/// `max_body` (all when none).
pub(crate) async fn send_once(
    conn: &H3Conn,
    p: &Prepared,
    max_body: Option<u64>,
    out: &mut Exchange,
) -> Result<Option<Uri>, Failure> {
    let mut req = Request::new(());
    *req.method_mut() = p.method.clone();
    *req.uri_mut() = p.h2_uri.clone();
    *req.headers_mut() = p.h2_headers.clone();
    let mut send = conn.send.clone();
    let mut stream = send.send_request(req).await.map_err(|e| stream_failure(&e, p.idempotent))?;
    if !p.body.is_empty() {
        stream.send_data(p.body.clone()).await.map_err(|e| stream_failure(&e, p.idempotent))?;
    }
    stream.finish().await.map_err(|e| stream_failure(&e, p.idempotent))?;
    let resp = stream.recv_response().await.map_err(|e| stream_failure(&e, p.idempotent))?;
    out.head_at = Some(Instant::now());
    out.status = resp.status().as_u16();
    let location =
        if resp.status().is_redirection() { resp.headers().get(http::header::LOCATION).cloned() } else { None };
    out.start_body(resp.headers().get(http::header::CONTENT_ENCODING).map(|v| v.as_bytes()));
    let limit = max_body.unwrap_or(u64::MAX);
    // The whole body is read, counted up to the limit, as over HTTP/1.1 and HTTP/2.
    while let Some(mut chunk) = stream.recv_data().await.map_err(|e| stream_failure(&e, p.idempotent))? {
        while chunk.has_remaining() {
            let part = chunk.chunk();
            let n = part.len();
            out.received(part, limit);
            chunk.advance(n);
        }
    }
    Ok(location.and_then(|l| resolve_location(&p.abs_uri, l.to_str().ok()?)))
}
