//! The HTTP client a worker uses: connections (TCP, TLS by rustls, HTTP/1.1 by hyper or the lean
//! client, HTTP/2 by the h2 crate, HTTP/3 on quinn by the `h3` module), one request's exchange
//! (redirects, body counting up to `--max-body`), and failure kinds.
//!
//! HTTP/2 goes to h2 directly rather than through hyper's client: hyper hands every request to
//! the connection task over a channel and wraps both bodies, which cost ~30% more CPU per request
//! in the h2c closed model (bench/peers.sh against h2load).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_ENCODING, LOCATION};
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use crate::exchange::{io_text, Exchange, Failure, FailureKind};
use crate::request::{redirected, resolve_location, Origin, Parts, Prepared};
use crate::tls::{client_config, TlsOptions};

/// Which HTTP the client speaks; plans and lab.json name it as [`Protocol::name`] does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Protocol {
    /// HTTP/1.1, over TLS for https URLs.
    #[default]
    #[serde(rename = "http1")]
    Http1,
    /// HTTP/2 over TLS when the server accepts it by ALPN (else HTTP/1.1); HTTP/1.1 for http URLs.
    #[serde(rename = "http2")]
    Http2,
    /// HTTP/2 without TLS, with prior knowledge (h2c).
    #[serde(rename = "h2c")]
    H2c,
    /// HTTP/3 over QUIC (https URLs only).
    #[serde(rename = "h3")]
    Http3,
}

impl Protocol {
    /// The name plans and results use: `http1`, `http2`, `h2c`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::Http2 => "http2",
            Protocol::H2c => "h2c",
            Protocol::Http3 => "h3",
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;

    /// `http1` (or `http/1.1`), `http2` (or `h2`), `h2c`, `h3` (or `http3`).
    fn from_str(s: &str) -> Result<Protocol, String> {
        match s {
            "http1" | "http/1.1" => Ok(Protocol::Http1),
            "http2" | "h2" => Ok(Protocol::Http2),
            "h2c" => Ok(Protocol::H2c),
            "h3" | "http3" => Ok(Protocol::Http3),
            other => Err(format!("unknown protocol {other:?} (http1, h2c, http2 or h3)")),
        }
    }
}

/// Client settings shared by all workers.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub protocol: Protocol,
    /// Whole-request limit: connect, send, head and body.
    pub timeout: Duration,
    /// Bytes of body read and counted; `None` reads everything, `Some(0)` only the head.
    pub max_body: Option<u64>,
    /// Redirects followed; `None` follows none and records the 3xx as it is.
    pub redirects: Option<u32>,
    /// Reuse connections (HTTP/1.1 sends `Connection: close` and reconnects when false).
    pub keepalive: bool,
    /// Connect here instead of the URL's host (Host and SNI still come from the URL).
    pub connect_to: Option<String>,
    pub tls: TlsOptions,
    /// Ask for gzip (when the target sets no Accept-Encoding) and count bodies' decoded size.
    pub compressed: bool,
}

/// vegeta's defaults.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_REDIRECTS: u32 = 10;

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            protocol: Protocol::Http1,
            timeout: DEFAULT_TIMEOUT,
            max_body: None,
            redirects: Some(DEFAULT_REDIRECTS),
            keepalive: true,
            connect_to: None,
            tls: TlsOptions::default(),
            compressed: false,
        }
    }
}

/// An open connection, ready to carry requests.
#[derive(Clone)]
pub enum Conn {
    H1(Arc<tokio::sync::Mutex<http1::SendRequest<Full<Bytes>>>>),
    H2(H2Conn),
    H3(crate::h3::H3Conn),
}

/// An HTTP/2 connection: the h2 handle, and whether it is closed (its connection task has ended,
/// or the server has refused streams on it).
#[derive(Clone)]
pub struct H2Conn {
    send: h2::client::SendRequest<Bytes>,
    closed: Arc<AtomicBool>,
}

/// Marks an HTTP/2 connection as not to be used for new requests (a no-op for HTTP/1.1).
pub struct Retire(Option<Arc<AtomicBool>>);

impl Retire {
    pub fn retire(&self) {
        if let Some(flag) = &self.0 {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

impl Conn {
    /// A handle that can retire this connection after it has been handed to [`send_once`].
    pub fn retire_handle(&self) -> Retire {
        Retire(match self {
            Conn::H1(_) => None,
            Conn::H2(c) => Some(Arc::clone(&c.closed)),
            Conn::H3(c) => Some(Arc::clone(&c.closed)),
        })
    }

    /// Whether requests are streams that workers may share (HTTP/2, HTTP/3).
    pub fn is_multiplexed(&self) -> bool {
        matches!(self, Conn::H2(_) | Conn::H3(_))
    }

    pub fn is_closed(&self) -> bool {
        match self {
            Conn::H1(s) => s.try_lock().map(|s| s.is_closed()).unwrap_or(false),
            Conn::H2(c) => c.closed.load(Ordering::Relaxed),
            Conn::H3(c) => c.closed.load(Ordering::Relaxed),
        }
    }
}

fn h2_text(e: &h2::Error) -> String {
    match e.get_io() {
        Some(io) => io_text(io),
        None => format!("http2: {e}"),
    }
}

fn hyper_text(e: &hyper::Error) -> String {
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return io_text(io);
        }
        if let Some(h2) = s.downcast_ref::<h2::Error>() {
            return format!("http2: {h2}");
        }
        src = s.source();
    }
    if e.is_incomplete_message() {
        return "connection closed before the response completed".into();
    }
    e.to_string()
}

/// Opens connections.
pub struct Connector {
    opts: ClientOptions,
    tls: Option<TlsConnector>,
    /// QUIC's configuration, for HTTP/3.
    quic: Option<quinn::ClientConfig>,
}

impl Connector {
    pub fn new(opts: ClientOptions) -> Result<Connector, String> {
        let alpn: &[&[u8]] = match opts.protocol {
            Protocol::Http2 => &[b"h2", b"http/1.1"],
            _ => &[b"http/1.1"],
        };
        let tls = client_config(&opts.tls, alpn)?;
        let quic =
            (opts.protocol == Protocol::Http3).then(|| crate::h3::quic_config(&opts.tls, opts.timeout)).transpose()?;
        Ok(Connector { opts, tls: Some(TlsConnector::from(tls)), quic })
    }

    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// A plain TCP connection to `origin` (or `connect_to`), Nagle off: the lean client's.
    pub async fn tcp(&self, origin: &Origin) -> Result<TcpStream, Failure> {
        let stream = match &self.opts.connect_to {
            Some(addr) => TcpStream::connect(addr.as_str()).await,
            None => match origin.host.parse::<std::net::IpAddr>() {
                Ok(ip) => TcpStream::connect(SocketAddr::new(ip, origin.port)).await,
                Err(_) => TcpStream::connect((origin.host.as_str(), origin.port)).await,
            },
        }
        .map_err(|e| Failure::connect(&e))?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// Where `origin` (or `--connect-to`) is, for a UDP connection.
    async fn udp_address(&self, origin: &Origin) -> Result<SocketAddr, Failure> {
        let target = match &self.opts.connect_to {
            Some(addr) => addr.clone(),
            None => match origin.host.parse::<std::net::IpAddr>() {
                Ok(ip) => return Ok(SocketAddr::new(ip, origin.port)),
                Err(_) => format!("{}:{}", origin.host, origin.port),
            },
        };
        let mut found = tokio::net::lookup_host(target).await.map_err(|e| Failure::connect(&e))?;
        found.next().ok_or_else(|| Failure::new("no address for the host".to_owned()))
    }

    /// Opens a connection to `origin`, speaking the configured protocol.
    pub async fn connect(&self, origin: &Origin) -> Result<Conn, Failure> {
        if let Some(quic) = &self.quic {
            if !origin.tls {
                return Err(Failure::new("http3 needs an https URL (QUIC is always encrypted)".to_owned()));
            }
            let addr = self.udp_address(origin).await?;
            return Ok(Conn::H3(crate::h3::connect(quic, addr, origin).await?));
        }
        let tcp = self.tcp(origin).await?;
        if origin.tls {
            let name = rustls::pki_types::ServerName::try_from(origin.host.clone())
                .map_err(|_| Failure::new(format!("tls: bad server name {:?}", origin.host)))?;
            let tls = self.tls.as_ref().expect("TLS connector").connect(name, tcp).await.map_err(|e| {
                let text = e.get_ref().map(|inner| inner.to_string()).unwrap_or_else(|| io_text(&e));
                Failure::new(format!("tls: {text}"))
            })?;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            self.handshake(tls, h2).await
        } else {
            self.handshake(tcp, self.opts.protocol == Protocol::H2c).await
        }
    }

    async fn handshake<I>(&self, io: I, h2: bool) -> Result<Conn, Failure>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        if h2 {
            let (send, conn) = h2::client::Builder::new()
                .enable_push(false)
                .initial_window_size(1 << 20)
                .initial_connection_window_size(4 << 20)
                .handshake::<_, Bytes>(io)
                .await
                .map_err(|e| Failure::new(format!("http2 handshake: {}", h2_text(&e))))?;
            let closed = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&closed);
            tokio::spawn(async move {
                let _ = conn.await;
                flag.store(true, Ordering::Relaxed);
            });
            Ok(Conn::H2(H2Conn { send, closed }))
        } else {
            let io = TokioIo::new(io);
            let (send, conn) = http1::Builder::new()
                .handshake(io)
                .await
                .map_err(|e| Failure::new(format!("http1 handshake: {}", hyper_text(&e))))?;
            tokio::spawn(conn);
            Ok(Conn::H1(Arc::new(tokio::sync::Mutex::new(send))))
        }
    }
}

/// Sends `prepared` over `conn` and reads the response, counting body bytes up to `max_body`.
pub async fn send_once(
    conn: Conn,
    prepared: &Prepared,
    opts: &ClientOptions,
    out: &mut Exchange,
) -> Result<Option<Uri>, Failure> {
    let s = match conn {
        Conn::H1(s) => s,
        Conn::H2(c) => return send_once_h2(c.send, prepared, opts, out).await,
        Conn::H3(c) => return crate::h3::send_once(&c, prepared, opts.max_body, out).await,
    };
    let req = prepared.request(opts.keepalive);
    let resp = {
        let mut s = s.lock().await;
        s.ready().await.map_err(|e| Failure::new(hyper_text(&e)))?;
        s.send_request(req).await
    }
    .map_err(|e| Failure::new(hyper_text(&e)))?;
    out.head_at = Some(Instant::now());
    out.status = resp.status().as_u16();
    if resp.headers().get(CONNECTION).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close")) {
        out.conn_spent = true;
    }
    let location = if resp.status().is_redirection() { resp.headers().get(LOCATION).cloned() } else { None };
    out.start_body(resp.headers().get(CONTENT_ENCODING).map(|v| v.as_bytes()));
    read_body(resp.into_body(), opts.max_body, out).await?;
    Ok(location.and_then(|l| resolve_location(&prepared.abs_uri, l.to_str().ok()?)))
}

/// Sends a request on an HTTP/2 connection and waits for its response head.
async fn h2_request(
    send: h2::client::SendRequest<Bytes>,
    p: &Prepared,
) -> Result<http::Response<h2::RecvStream>, h2::Error> {
    let mut req = Request::new(());
    *req.method_mut() = p.method.clone();
    *req.uri_mut() = p.h2_uri.clone();
    *req.headers_mut() = p.h2_headers.clone();
    // Waits while the connection is at the server's limit of concurrent streams.
    let mut send = send.ready().await?;
    let (resp, mut body) = send.send_request(req, p.body.is_empty())?;
    if !p.body.is_empty() {
        // Sent as the flow-control window allows (h2 buffers the rest).
        body.send_data(p.body.clone(), true)?;
    }
    resp.await
}

async fn send_once_h2(
    send: h2::client::SendRequest<Bytes>,
    p: &Prepared,
    opts: &ClientOptions,
    out: &mut Exchange,
) -> Result<Option<Uri>, Failure> {
    let resp = h2_request(send, p).await.map_err(|e| {
        let refused = e.is_remote() && (e.is_go_away() || e.reason() == Some(h2::Reason::REFUSED_STREAM));
        Failure::new(h2_text(&e)).with_kind(if refused { FailureKind::Refused } else { FailureKind::Failed })
    })?;
    out.head_at = Some(Instant::now());
    out.status = resp.status().as_u16();
    let location = if resp.status().is_redirection() { resp.headers().get(LOCATION).cloned() } else { None };
    out.start_body(resp.headers().get(CONTENT_ENCODING).map(|v| v.as_bytes()));
    let mut body = resp.into_body();
    let limit = opts.max_body.unwrap_or(u64::MAX);
    // The whole body is read, counted up to the limit (resetting the stream would change what
    // the server does, as vegeta's client does not).
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| Failure::new(h2_text(&e)))?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.received(&chunk, limit);
    }
    Ok(location.and_then(|l| resolve_location(&p.abs_uri, l.to_str().ok()?)))
}

async fn read_body(mut body: Incoming, max: Option<u64>, out: &mut Exchange) -> Result<(), Failure> {
    let limit = max.unwrap_or(u64::MAX);
    // Read to the end, counted up to the limit: a body left unread would cost the connection.
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Failure::new(hyper_text(&e)))?;
        if let Some(data) = frame.data_ref() {
            out.received(data, limit);
        }
    }
    Ok(())
}

/// A whole response, as [`fetch`] returns it.
#[derive(Debug)]
pub struct Fetched {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// GETs `url` with `headers` and reads the whole body (following up to `opts.redirects`
/// redirects): for fetching payloads once, with the same client the attack uses. A body longer
/// than `opts.max_body` fails the fetch, having read no more than that.
pub fn fetch<'a>(
    url: &'a str,
    headers: &'a [(String, String)],
    opts: ClientOptions,
) -> futures_core::future::BoxFuture<'a, Result<Fetched, String>> {
    // Boxed here: a caller awaiting this crate's future type would compile the whole client
    // (HTTP/1.1, HTTP/2, TLS, redirects) again (docs/DECISIONS.md, "The first command in
    // under 4 minutes").
    Box::pin(fetch_following(&Method::GET, url, headers, Bytes::new(), opts))
}

/// POSTs `body` to `url` with `headers` and reads the answer as [`fetch`] does (no redirect
/// followed unless `opts.redirects` asks): for sending a document once (an OTLP export).
pub fn post<'a>(
    url: &'a str,
    headers: &'a [(String, String)],
    body: Bytes,
    opts: ClientOptions,
) -> futures_core::future::BoxFuture<'a, Result<Fetched, String>> {
    Box::pin(fetch_following(&Method::POST, url, headers, body, opts))
}

async fn fetch_following(
    method: &Method,
    url: &str,
    headers: &[(String, String)],
    body: Bytes,
    opts: ClientOptions,
) -> Result<Fetched, String> {
    let url = crate::url::parse_url(url)?;
    let headers =
        headers.iter().map(|(k, v)| crate::url::parse_header(&format!("{k}: {v}"))).collect::<Result<Vec<_>, _>>()?;
    let timeout = opts.timeout;
    let max_hops = opts.redirects.unwrap_or(0);
    let limit = opts.max_body.unwrap_or(u64::MAX);
    let too_long = || format!("body over {limit} bytes");
    let connector = Connector::new(opts)?;
    let mut prepared = Prepared::new(Parts { method, url: &url, headers: &headers, body: &body });
    let work = async {
        for _ in 0..=max_hops {
            let conn = connector.connect(&prepared.origin).await.map_err(|f| f.text)?;
            let (status, headers, body) = match conn {
                Conn::H1(s) => {
                    let resp =
                        s.lock().await.send_request(prepared.request(false)).await.map_err(|e| hyper_text(&e))?;
                    let (parts, body) = resp.into_parts();
                    let limited = http_body_util::Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX));
                    let body = limited.collect().await.map_err(|e| match e.downcast::<hyper::Error>() {
                        Ok(e) => hyper_text(&e),
                        Err(_) => too_long(),
                    })?;
                    (parts.status, parts.headers, body.to_bytes())
                }
                Conn::H2(c) => {
                    let resp = h2_request(c.send, &prepared).await.map_err(|e| h2_text(&e))?;
                    let (parts, mut stream) = resp.into_parts();
                    let mut body = bytes::BytesMut::new();
                    while let Some(chunk) = stream.data().await {
                        let chunk = chunk.map_err(|e| h2_text(&e))?;
                        let _ = stream.flow_control().release_capacity(chunk.len());
                        if (body.len() + chunk.len()) as u64 > limit {
                            return Err(too_long());
                        }
                        body.extend_from_slice(&chunk);
                    }
                    (parts.status, parts.headers, body.freeze())
                }
                Conn::H3(_) => return Err("fetching over HTTP/3 is not supported: use http1 or http2".into()),
            };
            let location = headers.get(LOCATION).and_then(|l| l.to_str().ok());
            if status.is_redirection() {
                if let Some(to) = location.and_then(|l| resolve_location(&prepared.abs_uri, l)) {
                    // A document fetched over TLS is not then read in the clear.
                    if prepared.origin.tls && to.scheme_str() != Some("https") {
                        return Err("refused a redirect from https to plain http".to_owned());
                    }
                    prepared = redirected(&prepared, status, to);
                    continue;
                }
            }
            return Ok(Fetched { status: status.as_u16(), headers, body });
        }
        Err(format!("stopped after {max_hops} redirects"))
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| "timeout".to_owned())?
}
