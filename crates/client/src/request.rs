//! A request as the clients send it: its origin (where the connection goes), and everything
//! derived from a target once (HTTP/1.1 bytes, HTTP/2 headers, the hyper request), so that
//! nothing is rebuilt per request. Redirects make a new one.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONNECTION, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::Full;

/// A request as described (a target of an attack, a document to fetch): what every client
/// needs of it, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct Parts<'a> {
    pub method: &'a Method,
    /// Absolute http(s).
    pub url: &'a Uri,
    pub headers: &'a [(HeaderName, HeaderValue)],
    pub body: &'a Bytes,
}

/// Where a connection goes: scheme and authority.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    pub tls: bool,
    pub host: String,
    pub port: u16,
}

impl Origin {
    pub fn of(uri: &Uri) -> Origin {
        let tls = uri.scheme_str() == Some("https");
        let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
        Origin { tls, port: uri.port_u16().unwrap_or(if tls { 443 } else { 80 }), host }
    }
}

/// A request prepared once per target: headers, both URI forms, body.
#[derive(Clone)]
pub struct Prepared {
    pub method: Method,
    pub origin: Origin,
    /// `/path?query`, what HTTP/1.1 sends.
    pub path_uri: Uri,
    /// The absolute URI, what HTTP/2 sends as :scheme/:authority/:path.
    pub abs_uri: Uri,
    pub host: HeaderValue,
    pub headers: HeaderMap,
    /// What HTTP/2 sends: the URI with the Host header's authority (so `Host:` works as in
    /// HTTP/1.1), and the headers without the connection-specific ones HTTP/2 forbids.
    pub h2_uri: Uri,
    pub h2_headers: HeaderMap,
    /// HTTP/3's HEADERS frame, encoded from the HTTP/2 forms on first use.
    pub h3_headers: std::sync::OnceLock<Bytes>,
    pub body: Bytes,
    /// Safe to send again when a stale connection lost it: GET, HEAD, OPTIONS, TRACE, PUT,
    /// DELETE (RFC 9110 section 9.2.2), or any request with an Idempotency-Key header.
    pub idempotent: bool,
    /// The whole HTTP/1.1 request for the lean client, with and without `Connection: close`.
    pub h1_keepalive: Bytes,
    pub h1_close: Bytes,
}

impl Prepared {
    /// Everything any client needs of `t`.
    pub fn new(t: Parts<'_>) -> Prepared {
        Prepared::build(t, None)
    }

    /// What the lean HTTP/1.1 client needs to send `t` once, over a keep-alive connection or not:
    /// a templated request is prepared for every send, and the HTTP/2 forms and the other
    /// HTTP/1.1 form were two thirds of that cost (1.05 µs of 1.5 µs with its rendering).
    pub fn for_lean(t: Parts<'_>, keepalive: bool) -> Prepared {
        Prepared::build(t, Some(keepalive))
    }

    fn build(t: Parts<'_>, lean: Option<bool>) -> Prepared {
        let mut headers = HeaderMap::new();
        let mut host = None;
        for (k, v) in t.headers {
            if k == HOST {
                host = Some(v.clone());
            } else {
                headers.append(k.clone(), v.clone());
            }
        }
        if !headers.contains_key(http::header::USER_AGENT) {
            headers.insert(
                http::header::USER_AGENT,
                HeaderValue::from_static(concat!("loadlab/", env!("CARGO_PKG_VERSION"))),
            );
        }
        let authority = t.url.authority().map(|a| a.as_str()).unwrap_or_default();
        let host = host.unwrap_or_else(|| HeaderValue::from_str(authority).expect("authority is a valid header"));
        let path_uri = t.url.path_and_query().map_or_else(|| Uri::from_static("/"), |pq| Uri::from(pq.clone()));
        let (h2_uri, h2_headers) = match lean {
            Some(_) => (t.url.clone(), HeaderMap::new()),
            None => (h2_uri(t.url, &host), h2_headers(&headers, t.method, t.body)),
        };
        let mut p = Prepared {
            method: t.method.clone(),
            origin: Origin::of(t.url),
            path_uri,
            abs_uri: t.url.clone(),
            h2_uri,
            h2_headers,
            h3_headers: Default::default(),
            host,
            headers,
            body: t.body.clone(),
            idempotent: matches!(
                *t.method,
                Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
            ) || t.headers.iter().any(|(k, _)| k == "idempotency-key" || k == "x-idempotency-key"),
            h1_keepalive: Bytes::new(),
            h1_close: Bytes::new(),
        };
        if lean != Some(false) {
            p.h1_keepalive = request_bytes(&p, true);
        }
        if lean != Some(true) {
            p.h1_close = request_bytes(&p, false);
        }
        p
    }

    /// This request with one more header (`traceparent`, per request): every form gets it, the
    /// HTTP/3 one encoded again on first use.
    pub fn with_header(&self, name: HeaderName, value: HeaderValue) -> Prepared {
        let mut p = self.clone();
        p.h3_headers = Default::default();
        p.h2_headers.append(name.clone(), value.clone());
        p.headers.append(name, value);
        if !p.h1_keepalive.is_empty() {
            p.h1_keepalive = request_bytes(&p, true);
        }
        if !p.h1_close.is_empty() {
            p.h1_close = request_bytes(&p, false);
        }
        p
    }

    /// The request for hyper's HTTP/1.1 connection (TLS).
    pub fn request(&self, keepalive: bool) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.path_uri.clone();
        *req.headers_mut() = self.headers.clone();
        req.headers_mut().insert(HOST, self.host.clone());
        if !keepalive {
            req.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
        }
        req
    }
}

/// The absolute URI with `host` as its authority (the URL's own when `host` is not one).
fn h2_uri(url: &Uri, host: &HeaderValue) -> Uri {
    let mut parts = url.clone().into_parts();
    if let Some(a) = host.to_str().ok().and_then(|h| h.parse::<http::uri::Authority>().ok()) {
        parts.authority = Some(a);
    }
    Uri::from_parts(parts).unwrap_or_else(|_| url.clone())
}

/// Headers for HTTP/2: without connection-specific fields (RFC 9113 section 8.2.2, which h2
/// refuses to send), and with a content-length for a body, as hyper would add.
fn h2_headers(headers: &HeaderMap, method: &Method, body: &Bytes) -> HeaderMap {
    use http::header::{CONTENT_LENGTH, TE, TRANSFER_ENCODING, UPGRADE};
    let mut h = headers.clone();
    for name in [CONNECTION, TRANSFER_ENCODING, UPGRADE] {
        h.remove(name);
    }
    h.remove("keep-alive");
    h.remove("proxy-connection");
    if h.get(TE).is_some_and(|v| v != "trailers") {
        h.remove(TE);
    }
    if !h.contains_key(CONTENT_LENGTH)
        && (!body.is_empty() || matches!(*method, Method::POST | Method::PUT | Method::PATCH))
    {
        h.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    h
}

/// The request as written on the wire, built once.
pub(crate) fn request_bytes(p: &Prepared, keepalive: bool) -> Bytes {
    let mut b = BytesMut::with_capacity(128 + p.body.len());
    b.put_slice(p.method.as_str().as_bytes());
    b.put_u8(b' ');
    b.put_slice(p.path_uri.path_and_query().map_or("/", |pq| pq.as_str()).as_bytes());
    b.put_slice(b" HTTP/1.1\r\nhost: ");
    b.put_slice(p.host.as_bytes());
    b.put_slice(b"\r\n");
    for (k, v) in &p.headers {
        b.put_slice(k.as_str().as_bytes());
        b.put_slice(b": ");
        b.put_slice(v.as_bytes());
        b.put_slice(b"\r\n");
    }
    let has_length =
        p.headers.contains_key(http::header::CONTENT_LENGTH) || p.headers.contains_key(http::header::TRANSFER_ENCODING);
    let needs_length =
        !p.body.is_empty() || matches!(p.method, http::Method::POST | http::Method::PUT | http::Method::PATCH);
    if !has_length && needs_length {
        use std::fmt::Write;
        let _ = write!(b, "content-length: {}\r\n", p.body.len());
    }
    if !keepalive {
        b.put_slice(b"connection: close\r\n");
    }
    b.put_slice(b"\r\n");
    b.put_slice(&p.body);
    b.freeze()
}

pub fn resolve_location(base: &Uri, location: &str) -> Option<Uri> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.parse().ok();
    }
    let mut parts = base.clone().into_parts();
    let path = if location.starts_with('/') {
        location.to_owned()
    } else {
        let base_path = base.path();
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        format!("{dir}{location}")
    };
    parts.path_and_query = Some(path.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// Headers that carry credentials: sent only to the origin they were given for.
const CREDENTIALS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "cookie2"];

/// The target of the next hop of a redirect, as vegeta's (Go's) client does it: 303, and 301/302
/// after a POST, become a GET without body; 307 and 308 repeat the request. Credentials stay
/// with the origin they were given for (scheme, host and port), as curl and Go's net/http keep
/// them: a hop to another origin goes without them.
pub fn redirected(prev: &Prepared, status: StatusCode, to: Uri) -> Prepared {
    let keep = matches!(status.as_u16(), 307 | 308) || !(status.as_u16() == 303 || prev.method == Method::POST);
    let method = if keep { prev.method.clone() } else { Method::GET };
    let same_origin = Origin::of(&to) == prev.origin;
    let headers: Vec<_> = prev
        .headers
        .iter()
        .filter(|(k, _)| same_origin || !CREDENTIALS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let body = if keep { prev.body.clone() } else { Bytes::new() };
    Prepared::new(Parts { method: &method, url: &to, headers: &headers, body: &body })
}
