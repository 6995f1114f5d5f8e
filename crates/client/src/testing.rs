//! An in-process HTTP server for tests (feature `testing`): HTTP/1.1 and h2c on one port, TLS
//! with ALPN (h2, http/1.1), or HTTP/3 over QUIC, with a certificate made on the spot. It answers with a known delay,
//! can freeze for a window of time, and records every request it receives so a test can assert
//! what really arrived.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A plain or TLS stream, so that both are served by one code path.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// What the server does with each request.
#[derive(Clone, Debug)]
pub struct Behaviour {
    pub delay: Duration,
    pub status: u16,
    pub body: Bytes,
    /// From this long after start, for this long, every response waits for the window to end.
    pub freeze: Option<(Duration, Duration)>,
    /// After this many requests a connection shuts down gracefully, as nginx does at its
    /// `keepalive_requests`: HTTP/2 sends GOAWAY (streams opened after it are refused), HTTP/1.1
    /// answers with `Connection: close`.
    pub max_requests_per_conn: Option<u64>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            delay: Duration::ZERO,
            status: 200,
            body: Bytes::from_static(b"ok"),
            freeze: None,
            max_requests_per_conn: None,
        }
    }
}

/// One request as it arrived.
#[derive(Clone, Debug)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub version: http::Version,
    /// The host asked for: HTTP/2's `:authority`, else the Host header.
    pub host: String,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// A running server; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    /// PEM of the self-signed certificate when serving TLS.
    pub cert_pem: Option<String>,
    captured: Arc<Mutex<Vec<Captured>>>,
    connections: Arc<std::sync::atomic::AtomicU64>,
    stop: CancellationToken,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl TestServer {
    /// Plain TCP: HTTP/1.1 and h2c with prior knowledge.
    pub async fn start(b: Behaviour) -> TestServer {
        Self::start_inner(b, false, None).await
    }

    /// TLS for `localhost` and 127.0.0.1, offering h2 and http/1.1 by ALPN.
    pub async fn start_tls(b: Behaviour) -> TestServer {
        Self::start_inner(b, true, None).await
    }

    /// TLS that requires a client certificate issued by `client_ca` (DER).
    pub async fn start_tls_client_auth(
        b: Behaviour,
        client_ca: rustls::pki_types::CertificateDer<'static>,
    ) -> TestServer {
        Self::start_inner(b, true, Some(client_ca)).await
    }

    async fn start_inner(
        b: Behaviour,
        tls: bool,
        client_ca: Option<rustls::pki_types::CertificateDer<'static>>,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let (acceptor, cert_pem) = if tls {
            let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
            let cert_pem = ck.cert.pem();
            let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
            let cfg = crate::tls::server_config((vec![ck.cert.der().clone()], key), client_ca).unwrap();
            (Some(tokio_rustls::TlsAcceptor::from(Arc::new(cfg))), Some(cert_pem))
        } else {
            (None, None)
        };
        let captured = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = CancellationToken::new();
        let started = Instant::now();
        let (cap, conns, stop2) = (Arc::clone(&captured), Arc::clone(&connections), stop.clone());
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    r = listener.accept() => match r { Ok(s) => s, Err(_) => continue },
                    _ = stop2.cancelled() => return,
                };
                conns.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_nodelay(true);
                let (b, cap, acceptor, stop3) = (b.clone(), Arc::clone(&cap), acceptor.clone(), stop2.clone());
                tokio::spawn(async move {
                    let io: Box<dyn Io> = match acceptor {
                        Some(a) => match a.accept(stream).await {
                            Ok(s) => Box::new(s),
                            Err(_) => return,
                        },
                        None => Box::new(stream),
                    };
                    // Counts this connection's requests; at the limit, the connection is told to
                    // shut down gracefully.
                    let (count, limit_reached) = (Arc::new(AtomicU64::new(0)), Arc::new(tokio::sync::Notify::new()));
                    let (count2, limit2, max) =
                        (Arc::clone(&count), Arc::clone(&limit_reached), b.max_requests_per_conn);
                    let svc = service_fn(move |req| {
                        if max.is_some_and(|m| count2.fetch_add(1, Ordering::Relaxed) + 1 == m) {
                            limit2.notify_one();
                        }
                        handle(req, b.clone(), Arc::clone(&cap), started)
                    });
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let conn = builder.serve_connection(TokioIo::new(io), svc);
                    tokio::pin!(conn);
                    let mut shutting_down = false;
                    loop {
                        tokio::select! {
                            _ = conn.as_mut() => return,
                            _ = limit_reached.notified(), if !shutting_down => {
                                shutting_down = true;
                                conn.as_mut().graceful_shutdown();
                            }
                            _ = stop3.cancelled() => return,
                        }
                    }
                });
            }
        });
        TestServer { addr, cert_pem, captured, connections, stop }
    }

    /// HTTP/3 over QUIC on a UDP port of 127.0.0.1, for `localhost` and 127.0.0.1 (TLS 1.3, ALPN
    /// `h3`). After `max_requests_per_conn` requests a connection sends GOAWAY.
    pub async fn start_h3(b: Behaviour) -> TestServer {
        let (endpoint, cert_pem) = quic_endpoint();
        let addr = endpoint.local_addr().unwrap();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = CancellationToken::new();
        let started = Instant::now();
        let (cap, conns, stop2) = (Arc::clone(&captured), Arc::clone(&connections), stop.clone());
        tokio::spawn(async move {
            loop {
                let incoming = tokio::select! {
                    i = endpoint.accept() => match i { Some(i) => i, None => return },
                    _ = stop2.cancelled() => { endpoint.close(0u32.into(), b"stopped"); return }
                };
                conns.fetch_add(1, Ordering::Relaxed);
                let (b, cap, stop3) = (b.clone(), Arc::clone(&cap), stop2.clone());
                tokio::spawn(async move {
                    let Ok(quic) = incoming.await else { return };
                    let Ok(mut conn) =
                        h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(quic.clone())).await
                    else {
                        return;
                    };
                    let mut served = 0u64;
                    // A connection closes once its streams are answered (after GOAWAY too).
                    let mut answering = tokio::task::JoinSet::new();
                    loop {
                        let resolver = tokio::select! {
                            r = conn.accept() => match r { Ok(Some(r)) => r, _ => break },
                            _ = stop3.cancelled() => return,
                        };
                        served += 1;
                        let (b2, cap) = (b.clone(), Arc::clone(&cap));
                        answering.spawn(async move {
                            let b = b2;
                            let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                            let mut body = bytes::BytesMut::new();
                            while let Ok(Some(mut chunk)) = stream.recv_data().await {
                                use bytes::Buf;
                                while chunk.has_remaining() {
                                    let part = chunk.chunk();
                                    body.extend_from_slice(part);
                                    let n = part.len();
                                    chunk.advance(n);
                                }
                            }
                            let (parts, ()) = req.into_parts();
                            let resp = respond(parts, body.freeze(), b, cap, started).await;
                            let (head, body) = resp.into_parts();
                            let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                            if stream.send_response(Response::from_parts(head, ())).await.is_err() {
                                return;
                            }
                            let _ = stream.send_data(body).await;
                            let _ = stream.finish().await;
                        });
                        if b.max_requests_per_conn.is_some_and(|m| served >= m) {
                            // GOAWAY: the streams already accepted are answered, later ones refused.
                            let _ = conn.shutdown(0).await;
                        }
                    }
                    while answering.join_next().await.is_some() {}
                    // Closing now could cut answers still in flight: the client closes when done.
                    let _ = tokio::time::timeout(Duration::from_secs(1), quic.closed()).await;
                });
            }
        });
        TestServer { addr, cert_pem: Some(cert_pem), captured, connections, stop }
    }

    /// `http://127.0.0.1:PORT{path}` (or https when serving TLS).
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.cert_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// Requests received so far.
    pub fn captured(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }

    /// How many requests were received so far.
    pub fn received(&self) -> usize {
        self.captured.lock().unwrap().len()
    }

    /// Forgets the requests received so far.
    pub fn clear_captured(&self) {
        self.captured.lock().unwrap().clear();
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

async fn handle(
    req: Request<Incoming>,
    b: Behaviour,
    cap: Arc<Mutex<Vec<Captured>>>,
    started: Instant,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    Ok(respond(parts, body, b, cap, started).await)
}

/// The answer to one request (whatever HTTP it came over), recorded as it arrived.
async fn respond(
    parts: http::request::Parts,
    body: Bytes,
    b: Behaviour,
    cap: Arc<Mutex<Vec<Captured>>>,
    started: Instant,
) -> Response<BoxBody<Bytes, Infallible>> {
    let path = parts.uri.path().to_owned();
    let wants_gzip = parts
        .headers
        .get(http::header::ACCEPT_ENCODING)
        .is_some_and(|v| v.to_str().unwrap_or_default().contains("gzip"));
    cap.lock().unwrap().push(Captured {
        method: parts.method.to_string(),
        path: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
        version: parts.version,
        host: parts
            .uri
            .authority()
            .map(|a| a.to_string())
            .or_else(|| parts.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).map(str::to_owned))
            .unwrap_or_default(),
        headers: parts.headers,
        body: body.clone(),
    });
    if let Some((from, len)) = b.freeze {
        let (from, until) = (started + from, started + from + len);
        let now = Instant::now();
        if now >= from && now < until {
            tokio::time::sleep_until(until).await;
        }
    }
    if !b.delay.is_zero() {
        tokio::time::sleep(b.delay).await;
    }
    if path == "/chunked" {
        // The body in three chunks of unknown total length: sent chunked.
        let third = b.body.len() / 3;
        let parts = [b.body.slice(..third), b.body.slice(third..2 * third), b.body.slice(2 * third..)];
        let frames = parts.into_iter().map(|p| Ok::<_, Infallible>(hyper::body::Frame::data(p)));
        return Response::new(StreamBody::new(tokio_stream::iter(frames)).boxed());
    }
    let mut resp = Response::new(Full::new(b.body.clone()).boxed());
    match path.as_str() {
        // The body gzipped when the client asks for gzip, as most servers do.
        "/gzip" if wants_gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            std::io::Write::write_all(&mut gz, &b.body).unwrap();
            *resp.body_mut() = Full::new(Bytes::from(gz.finish().unwrap())).boxed();
            resp.headers_mut().insert(http::header::CONTENT_ENCODING, "gzip".parse().unwrap());
        }
        "/redirect" => {
            *resp.status_mut() = StatusCode::FOUND;
            resp.headers_mut().insert(http::header::LOCATION, "/final".parse().unwrap());
        }
        // A redirect to the absolute URL after `?to=` (another server, another scheme).
        "/away" => {
            let to = parts.uri.query().and_then(|q| q.strip_prefix("to=")).unwrap_or("/final");
            *resp.status_mut() = StatusCode::FOUND;
            resp.headers_mut().insert(http::header::LOCATION, to.parse().unwrap());
        }
        "/loop" => {
            *resp.status_mut() = StatusCode::FOUND;
            resp.headers_mut().insert(http::header::LOCATION, "/loop".parse().unwrap());
        }
        "/echo" => *resp.body_mut() = Full::new(body).boxed(),
        _ => *resp.status_mut() = StatusCode::from_u16(b.status).unwrap(),
    }
    resp
}

/// A QUIC server endpoint on a UDP port of 127.0.0.1 offering `h3` (TLS 1.3), with a certificate
/// for `localhost` and 127.0.0.1 made on the spot (returned as PEM).
pub fn quic_endpoint() -> (quinn::Endpoint, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
    let config = crate::tls::quic_server_config((vec![ck.cert.der().clone()], key)).unwrap();
    let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).expect("bind UDP loopback");
    (endpoint, ck.cert.pem())
}
