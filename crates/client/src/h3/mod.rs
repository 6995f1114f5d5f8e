//! HTTP/3: QUIC connections by quinn; the HTTP/3 layer on them is this module's own, lean as the
//! HTTP/1.1 client is. A request's HEADERS frame is encoded once per prepared request, and a
//! response is read frame by frame from quinn's chunks. Through the h3 crate (the stack oha
//! uses), its per-request header encoding and stream machinery cost about a fifth of the
//! client's CPU (docs/DECISIONS.md, HTTP/3). Each connection has its own UDP socket and
//! endpoint, driven on the event loop of the worker that opened it, as a TCP connection is;
//! requests are streams on it, shared by workers as HTTP/2's are. 0-RTT is never used (a
//! replayed request would be sent twice).

mod frames;
mod qpack;
mod session;

use std::borrow::Cow;

use bytes::Bytes;
use http::Uri;
use tokio::time::Instant;

use crate::exchange::{Exchange, Failure, FailureKind};
use crate::request::{resolve_location, Prepared};

use frames::{put_frame_head, FrameReader, Part, DATA, HEADERS};
pub(crate) use session::{connect, quic_config, H3Conn};

/// HTTP/3's error codes (RFC 9114 section 8.1, RFC 9204 section 6).
const H3_NO_ERROR: u64 = 0x100;
const H3_REQUEST_REJECTED: u64 = 0x10b;
const H3_REQUEST_CANCELLED: u64 = 0x10c;

fn code_name(code: u64) -> Cow<'static, str> {
    const NAMES: [&str; 17] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    match code {
        0x100..=0x110 => NAMES[(code - 0x100) as usize].into(),
        0x200 => "QPACK_DECOMPRESSION_FAILED".into(),
        0x201 => "QPACK_ENCODER_STREAM_ERROR".into(),
        0x202 => "QPACK_DECODER_STREAM_ERROR".into(),
        _ => format!("code {code:#x}").into(),
    }
}

/// A request's two stream halves; dropped before the response ended (the attack's timeout),
/// the stream is cancelled both ways with H3_REQUEST_CANCELLED, as RFC 9114 section 4.1.1 asks.
struct RequestStream {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    done: bool,
}

impl Drop for RequestStream {
    fn drop(&mut self) {
        if !self.done {
            let code = quinn::VarInt::from_u64(H3_REQUEST_CANCELLED).expect("a small code");
            let _ = self.send.reset(code);
            let _ = self.recv.stop(code);
        }
    }
}

/// Why a stream failed, and whether the request may go again on another connection: refused
/// unprocessed (a stream the server's GOAWAY did not take, H3_REQUEST_REJECTED), or cut by a
/// graceful close while `idempotent`. A graceful close should come after the server answered
/// every stream it took (RFC 9114 section 5.2), but a server that closes before its answers
/// arrive has processed the stream it cut: sent again only when that is safe, as a stale
/// HTTP/1.1 connection's request is.
fn failure(text: String, refused: bool) -> Failure {
    Failure::new(format!("http3: {text}")).with_kind(if refused { FailureKind::Refused } else { FailureKind::Failed })
}

fn lost(e: &quinn::ConnectionError, idempotent: bool) -> Failure {
    match e {
        quinn::ConnectionError::ApplicationClosed(c) => {
            let code = c.error_code.into_inner();
            failure(format!("connection closed by the server ({})", code_name(code)), code == H3_NO_ERROR && idempotent)
        }
        quinn::ConnectionError::TimedOut => {
            failure("connection timed out (no packet within the idle timeout)".into(), false)
        }
        other => failure(format!("connection lost: {other}"), false),
    }
}

fn reset(code: quinn::VarInt, idempotent: bool, past_goaway: bool) -> Failure {
    let code = code.into_inner();
    let refused = past_goaway || code == H3_REQUEST_REJECTED || (code == H3_NO_ERROR && idempotent);
    failure(format!("stream reset by the server ({})", code_name(code)), refused)
}

/// Sends `p` on a new stream of `conn` and reads the response, counting body bytes up to
/// `max_body` (all when none).
pub(crate) async fn send_once(
    conn: &H3Conn,
    p: &Prepared,
    max_body: Option<u64>,
    out: &mut Exchange,
) -> Result<Option<Uri>, Failure> {
    // Nothing is sent when no stream opens: the request may go on another connection.
    let (send, recv) = conn.quic().open_bi().await.map_err(|e| lost(&e, true).with_kind(FailureKind::Refused))?;
    let mut stream = RequestStream { send, recv, done: false };
    let id = quinn::VarInt::from(stream.send.id()).into_inner();
    let past_goaway = || conn.past_goaway(id);
    let headers = p.h3_headers.get_or_init(|| qpack::request_headers(&p.method, &p.h2_uri, &p.h2_headers)).clone();
    let written = if p.body.is_empty() {
        stream.send.write_chunk(headers).await
    } else {
        let mut head = Vec::with_capacity(10);
        put_frame_head(&mut head, DATA, p.body.len() as u64);
        stream.send.write_all_chunks(&mut [headers, Bytes::from(head), p.body.clone()]).await.map(|_| ())
    };
    match written {
        Ok(()) => {
            let _ = stream.send.finish();
        }
        // A server may answer early and stop reading the rest with H3_NO_ERROR (RFC 9114
        // section 4.1): its response is read as any other.
        Err(quinn::WriteError::Stopped(code)) if code.into_inner() == H3_NO_ERROR => {}
        Err(quinn::WriteError::Stopped(code)) => return Err(reset(code, p.idempotent, past_goaway())),
        Err(quinn::WriteError::ConnectionLost(e)) => return Err(lost(&e, p.idempotent)),
        Err(e) => return Err(failure(e.to_string(), false)),
    }
    let location = read_response(&mut stream, p.idempotent, max_body, out, past_goaway).await?;
    stream.done = true;
    Ok(location.and_then(|l| resolve_location(&p.abs_uri, std::str::from_utf8(&l).ok()?)))
}

/// Reads frames until the stream ends: the final response's HEADERS (interim 1xx ones skipped),
/// then DATA counted, trailers ignored. Returns the `location` of a redirect.
async fn read_response(
    stream: &mut RequestStream,
    idempotent: bool,
    max_body: Option<u64>,
    out: &mut Exchange,
    past_goaway: impl Fn() -> bool,
) -> Result<Option<Vec<u8>>, Failure> {
    let limit = max_body.unwrap_or(u64::MAX);
    let mut frames = FrameReader::new();
    let mut location = None;
    let mut answered = false;
    loop {
        let chunk = match stream.recv.read_chunk(usize::MAX, true).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(quinn::ReadError::Reset(code)) => return Err(reset(code, idempotent, past_goaway())),
            Err(quinn::ReadError::ConnectionLost(e)) => return Err(lost(&e, idempotent)),
            Err(e) => return Err(failure(e.to_string(), false)),
        };
        let mut bytes = chunk.bytes;
        while let Some(part) = frames.next(&mut bytes).map_err(|e| failure(e, false))? {
            match part {
                Part::Data(data) if answered => out.received(&data, limit),
                Part::Data(_) => return Err(failure("DATA before the response's HEADERS".into(), false)),
                Part::Frame(HEADERS, _) if answered => {} // trailers
                Part::Frame(HEADERS, block) => {
                    let head = qpack::response_head(&block).map_err(|e| failure(e, false))?;
                    if head.status < 200 {
                        continue;
                    }
                    answered = true;
                    out.head_at = Some(Instant::now());
                    out.status = head.status;
                    if (300..400).contains(&head.status) {
                        location = head.location;
                    }
                    out.start_body(head.content_encoding.as_deref());
                }
                Part::Frame(kind, _) => {
                    return Err(failure(format!("frame type {kind:#x} is not allowed on a request stream"), false))
                }
            }
        }
    }
    if !answered {
        return Err(failure("the stream ended without a response".into(), false));
    }
    if !frames.at_boundary() {
        return Err(failure("the stream ended inside a frame".into(), false));
    }
    Ok(location)
}
