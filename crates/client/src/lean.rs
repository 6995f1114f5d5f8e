//! A lean HTTP/1.1 client for plain TCP: the request bytes are built once per target and written
//! with one call; the response head is parsed in place with httparse and the body is counted, not
//! kept. Written by hand because the generator's CPU per request is what it is measured on: with
//! hyper's client connection the loop cost ~1.25x wrk's CPU per request against nginx (bench/
//! peers.sh); this path measured 0.76-1.10x. HTTP/1.1 over TLS stays on hyper (HTTP/2 uses h2); the
//! attack tests run this path against hyper-served responses (length, chunked, close-delimited,
//! HEAD, redirects, 1xx).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::exchange::{io_text, Exchange, Failure, FailureKind};
use crate::request::Origin;

const BUF: usize = 64 * 1024;
/// Headers parsed on the stack; a response with more is parsed again with room for this many.
const MAX_HEADERS: usize = 1024;
/// A response head larger than this is refused.
const MAX_HEAD: usize = 256 * 1024;

/// How the response body is delimited.
enum BodyMode {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// One plain-TCP HTTP/1.1 connection, owned by one worker.
pub struct LeanConn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    pub origin: Origin,
    pub uses: u64,
}

fn io_failure(e: std::io::Error) -> Failure {
    Failure::new(io_text(&e))
}

fn closed() -> Failure {
    Failure::new("connection closed before the response completed")
}

impl LeanConn {
    pub fn new(stream: TcpStream, origin: Origin) -> LeanConn {
        LeanConn { stream, buf: vec![0; BUF], start: 0, end: 0, origin, uses: 0 }
    }

    /// Reads more bytes after `end`; false at EOF.
    async fn fill(&mut self) -> Result<bool, Failure> {
        if self.start > 0 && self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < MAX_HEAD {
                self.buf.resize(self.buf.len() * 2, 0);
            } else {
                return Err(Failure::new("response head too large"));
            }
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await.map_err(io_failure)?;
        self.end += n;
        Ok(n > 0)
    }

    /// Writes `request` and reads the response, counting at most `max_body` body bytes. Returns
    /// the Location of a redirect. Sets `out.conn_spent` when the connection cannot be reused,
    /// and fails as `Stale` when a reused connection failed before any byte of the response.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        head_request: bool,
        max_body: Option<u64>,
        out: &mut Exchange,
    ) -> Result<Option<String>, Failure> {
        let reused = self.uses > 1;
        let (mode, location) = match self.write_and_read_head(request, head_request, out).await {
            Ok(head) => head,
            Err((failure, received)) => {
                // The server closed the idle keep-alive connection as the request went out (its
                // idle timeout, or the last response of its keepalive_requests).
                if reused && !received {
                    return Err(failure.with_kind(FailureKind::Stale));
                }
                return Err(failure);
            }
        };
        out.head_at = Some(Instant::now());
        self.body(mode, max_body.unwrap_or(u64::MAX), out).await?;
        // Bytes beyond the response: the server said more than it announced. This response
        // stands; the connection is not trusted with another.
        if self.start != self.end {
            out.conn_spent = true;
        }
        Ok(location)
    }

    /// Sends the request and reads up to the end of the final response head. A failure says
    /// whether any byte of the response had arrived.
    async fn write_and_read_head(
        &mut self,
        request: &[u8],
        head_request: bool,
        out: &mut Exchange,
    ) -> Result<(BodyMode, Option<String>), (Failure, bool)> {
        self.stream.write_all(request).await.map_err(|e| (io_failure(e), false))?;
        // Bytes left from an earlier response mean the server sent more than it said.
        if self.start != self.end {
            return Err((Failure::new("unexpected bytes after the previous response"), true));
        }
        let mut received = false;
        let head = loop {
            let parsed = {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let mut resp = httparse::Response::new(&mut headers);
                match resp.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(n)) => Some(self.head(n, &resp, head_request, out)),
                    Ok(httparse::Status::Partial) => None,
                    // Rare: parse again with room for many more (on the heap, only then).
                    Err(httparse::Error::TooManyHeaders) => {
                        let mut many = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
                        let mut resp = httparse::Response::new(&mut many);
                        match resp.parse(&self.buf[self.start..self.end]) {
                            Ok(httparse::Status::Complete(n)) => Some(self.head(n, &resp, head_request, out)),
                            Ok(httparse::Status::Partial) => None,
                            Err(e) => return Err((Failure::new(format!("malformed response: {e}")), true)),
                        }
                    }
                    Err(e) => return Err((Failure::new(format!("malformed response: {e}")), true)),
                }
            };
            let parsed = match parsed {
                Some(Err(f)) => return Err((f, true)),
                Some(Ok(p)) => Some(p),
                None => None,
            };
            match parsed {
                Some((n, Some(head))) => {
                    self.start += n;
                    break head;
                }
                // An interim 1xx response: skip it and read the real one.
                Some((n, None)) => self.start += n,
                None => match self.fill().await {
                    Ok(true) => received = true,
                    Ok(false) => return Err((closed(), received)),
                    Err(f) => return Err((f, received)),
                },
            }
        };
        Ok(head)
    }

    /// Reads a parsed head: `None` for an interim 1xx, else the body mode and Location.
    #[allow(clippy::type_complexity)]
    fn head(
        &self,
        n: usize,
        resp: &httparse::Response<'_, '_>,
        head_request: bool,
        out: &mut Exchange,
    ) -> Result<(usize, Option<(BodyMode, Option<String>)>), Failure> {
        let status = resp.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            return Ok((n, None));
        }
        out.status = status;
        let mut length = None;
        let mut chunked = false;
        let mut close = resp.version == Some(0);
        let mut location = None;
        let mut encoding = None;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                // RFC 9112 section 6.3: differing lengths make the response invalid.
                let value = std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse::<u64>().ok());
                match (length, value) {
                    (_, None) => return Err(Failure::new("malformed response: bad Content-Length")),
                    (Some(l), Some(v)) if l != v => {
                        return Err(Failure::new("malformed response: conflicting Content-Length headers"))
                    }
                    _ => length = value,
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .split(|b| *b == b',')
                    .next_back()
                    .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = h.value.trim_ascii();
                if v.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if v.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            } else if h.name.eq_ignore_ascii_case("location") && (300..400).contains(&status) {
                location = std::str::from_utf8(h.value).ok().map(str::to_owned);
            } else if h.name.eq_ignore_ascii_case("content-encoding") {
                encoding = Some(h.value);
            }
        }
        out.start_body(encoding);
        // Chunked with a length: the chunks win and the connection is not reused (RFC 9112 6.3).
        if chunked && length.is_some() {
            close = true;
        }
        if close {
            out.conn_spent = true;
        }
        let mode = if head_request || status == 204 || status == 304 {
            BodyMode::None
        } else if chunked {
            BodyMode::Chunked
        } else if let Some(len) = length {
            BodyMode::Length(len)
        } else {
            out.conn_spent = true;
            BodyMode::UntilClose
        };
        Ok((n, Some((mode, location))))
    }

    /// Takes up to `want` buffered body bytes, counting them; returns how many.
    fn take(&mut self, want: u64, limit: u64, out: &mut Exchange) -> u64 {
        let n = ((self.end - self.start) as u64).min(want);
        out.received(&self.buf[self.start..self.start + n as usize], limit);
        self.start += n as usize;
        n
    }

    async fn body(&mut self, mode: BodyMode, limit: u64, out: &mut Exchange) -> Result<(), Failure> {
        match mode {
            BodyMode::None => Ok(()),
            BodyMode::Length(mut left) => {
                loop {
                    left -= self.take(left, limit, out);
                    if left == 0 {
                        return Ok(());
                    }
                    // Past `--max-body` the rest is read and not counted, as vegeta's client
                    // does: the connection stays reusable, so the server sees the same load.
                    if !self.fill().await? {
                        return Err(closed());
                    }
                }
            }
            BodyMode::UntilClose => loop {
                self.take(u64::MAX, limit, out);
                if out.bytes_in >= limit || !self.fill().await? {
                    return Ok(());
                }
            },
            BodyMode::Chunked => self.chunked(limit, out).await,
        }
    }

    /// Reads one CRLF-terminated line (without the CRLF) and consumes it.
    async fn line(&mut self) -> Result<Vec<u8>, Failure> {
        loop {
            if let Some(i) = self.buf[self.start..self.end].windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[self.start..self.start + i].to_vec();
                self.start += i + 2;
                return Ok(line);
            }
            if !self.fill().await? {
                return Err(closed());
            }
        }
    }

    async fn chunked(&mut self, limit: u64, out: &mut Exchange) -> Result<(), Failure> {
        loop {
            let size_line = self.line().await?;
            let hex = size_line.split(|b| *b == b';').next().unwrap_or_default();
            let size = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
                .ok_or_else(|| Failure::new("malformed response: bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.line().await?.is_empty() {}
                return Ok(());
            }
            let mut left = size;
            loop {
                left -= self.take(left, limit, out);
                if left == 0 {
                    break;
                }
                if !self.fill().await? {
                    return Err(closed());
                }
            }
            if !self.line().await?.is_empty() {
                return Err(Failure::new("malformed response: chunk without CRLF"));
            }
        }
    }
}
