//! What one exchange produced, and why a request failed.

use tokio::time::Instant;

use crate::decoded::Decoder;

/// What one exchange produced.
#[derive(Debug, Default)]
pub struct Exchange {
    pub status: u16,
    pub bytes_in: u64,
    /// When the (final) response head arrived.
    pub head_at: Option<Instant>,
    /// The connection must not carry another request (body cut short, `Connection: close`).
    pub conn_spent: bool,
    /// The exchange opened a connection (TCP, TLS included) rather than reusing one.
    pub new_conn: bool,
    /// Count the decoded size of gzip and deflate bodies (`--compressed`).
    pub decode: bool,
    decoder: Option<Decoder>,
}

impl Exchange {
    /// A (final) response's body begins, in this `Content-Encoding`.
    pub(crate) fn start_body(&mut self, encoding: Option<&[u8]>) {
        self.bytes_in = 0;
        self.decoder = if self.decode { encoding.and_then(Decoder::for_encoding) } else { None };
    }

    /// Body bytes arrived; counted up to `limit` (`--max-body`).
    pub(crate) fn received(&mut self, data: &[u8], limit: u64) {
        let take = (data.len() as u64).min(limit.saturating_sub(self.bytes_in));
        self.bytes_in += take;
        if let Some(d) = &mut self.decoder {
            d.feed(&data[..take as usize]);
        }
    }

    /// The body's decoded size: what it decodes to when it was encoded (and decoding was
    /// asked for), else the bytes received.
    pub fn decoded_bytes(&mut self) -> u64 {
        self.decoder.take().map_or(self.bytes_in, Decoder::finish)
    }
}

/// What became of a request that did not get its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// An error to record.
    Failed,
    /// The server refused the request without processing it (HTTP/2 GOAWAY past its stream, or
    /// REFUSED_STREAM): safe to send again on another connection.
    Refused,
    /// A reused HTTP/1.1 connection failed before any byte of the response: the server had
    /// closed it. An idempotent request may go again on a new connection (as Go's client does).
    Stale,
}

/// Why a request failed (its text goes to the results file's error table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub text: String,
    pub kind: FailureKind,
}

impl Failure {
    pub fn new(text: impl Into<String>) -> Failure {
        Failure { text: text.into(), kind: FailureKind::Failed }
    }

    pub fn with_kind(self, kind: FailureKind) -> Failure {
        Failure { kind, ..self }
    }

    pub(crate) fn connect(e: &std::io::Error) -> Failure {
        Failure::new(format!("connect: {}", io_text(e)))
    }
}

pub(crate) fn io_text(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => "connection refused".into(),
        ConnectionReset => "connection reset by peer".into(),
        ConnectionAborted => "connection aborted".into(),
        TimedOut => "timeout".into(),
        UnexpectedEof => "unexpected EOF".into(),
        BrokenPipe => "broken pipe".into(),
        AddrNotAvailable => "address not available".into(),
        _ => e.to_string(),
    }
}
