//! An OTLP/HTTP export body as spans: protobuf (`application/x-protobuf`) or JSON
//! (`application/json`), gzip or not, through opentelemetry-proto's own message types. Pure:
//! bytes in, spans or a one-line reason out, every size bounded before it is allocated.

use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// The largest body taken as sent (OpenTelemetry's exporters batch 512 spans by default: a few
/// hundred KB).
pub const MAX_BODY: usize = 16 << 20;

/// The largest body after gzip: a small body may not inflate into a large allocation.
pub const MAX_INFLATED: usize = 64 << 20;

/// The longest span name kept; longer ones are cut (with `…`).
pub const MAX_NAME: usize = 120;

/// How an export body is encoded, from its Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// From a Content-Type header (parameters ignored); none for another type.
    pub fn of(content_type: &str) -> Option<Encoding> {
        match content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase().as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Encoding::Protobuf),
            "application/json" => Some(Encoding::Json),
            _ => None,
        }
    }
}

/// One span as the lab keeps it: its ids, its name and when it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub trace_id: u128,
    pub span_id: u64,
    /// 0 for a span with no parent.
    pub parent: u64,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The spans of an export body, and how many it held that cannot be spans (an id of the wrong
/// length, an end before its start).
pub fn spans(body: &[u8], encoding: Encoding, gzip: bool) -> Result<(Vec<Span>, u64), String> {
    if body.len() > MAX_BODY {
        return Err(format!("body of {} bytes: the most taken is {MAX_BODY}", body.len()));
    }
    let inflated;
    let body = if gzip {
        let mut out = Vec::new();
        let read = flate2::read::GzDecoder::new(body)
            .take(MAX_INFLATED as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("gzip: {e}"))?;
        if read > MAX_INFLATED {
            return Err(format!("gzip body inflates past {MAX_INFLATED} bytes"));
        }
        inflated = out;
        &inflated[..]
    } else {
        body
    };
    let request = match encoding {
        Encoding::Protobuf => {
            ExportTraceServiceRequest::decode(body).map_err(|e| format!("not an OTLP protobuf export: {e}"))?
        }
        Encoding::Json => serde_json::from_slice::<ExportTraceServiceRequest>(body)
            .map_err(|e| format!("not an OTLP JSON export: {}", results::text::plain_line(&e.to_string(), 200)))?,
    };
    let mut out = Vec::new();
    let mut bad = 0u64;
    for r in request.resource_spans {
        for s in r.scope_spans.into_iter().flat_map(|s| s.spans) {
            match own(s) {
                Some(span) => out.push(span),
                None => bad += 1,
            }
        }
    }
    Ok((out, bad))
}

/// A span of OTLP's as the lab keeps it; none when it cannot be one.
fn own(s: opentelemetry_proto::tonic::trace::v1::Span) -> Option<Span> {
    let trace_id = u128::from_be_bytes(s.trace_id.as_slice().try_into().ok()?);
    let span_id = u64::from_be_bytes(s.span_id.as_slice().try_into().ok()?);
    let parent = match s.parent_span_id.len() {
        0 => 0,
        _ => u64::from_be_bytes(s.parent_span_id.as_slice().try_into().ok()?),
    };
    if trace_id == 0 || span_id == 0 || s.end_time_unix_nano < s.start_time_unix_nano {
        return None;
    }
    Some(Span {
        trace_id,
        span_id,
        parent,
        name: name(&s.name),
        start_ns: s.start_time_unix_nano,
        end_ns: s.end_time_unix_nano,
    })
}

/// A span's name as every page and terminal may show it: plain (no control or reordering
/// character), at most [`MAX_NAME`] characters.
fn name(raw: &str) -> String {
    if raw.chars().count() <= MAX_NAME {
        return results::text::plain(raw);
    }
    let mut cut = results::text::plain(&raw.chars().take(MAX_NAME - 1).collect::<String>());
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as OtlpSpan};
    use std::io::Write;

    pub(crate) fn export(spans: Vec<OtlpSpan>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
                ..Default::default()
            }],
        }
    }

    fn otlp(trace: u128, id: u64, parent: u64, name: &str, start: u64, end: u64) -> OtlpSpan {
        OtlpSpan {
            trace_id: trace.to_be_bytes().to_vec(),
            span_id: id.to_be_bytes().to_vec(),
            parent_span_id: if parent == 0 { Vec::new() } else { parent.to_be_bytes().to_vec() },
            name: name.into(),
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            ..Default::default()
        }
    }

    #[test]
    fn protobuf_json_and_gzip_read_alike() {
        let req = export(vec![otlp(7, 1, 9, "GET /", 100, 300), otlp(7, 2, 1, "db.query", 150, 250)]);
        let proto = req.encode_to_vec();
        let (a, bad) = spans(&proto, Encoding::Protobuf, false).unwrap();
        assert_eq!(bad, 0);
        assert_eq!(
            a[1],
            Span { trace_id: 7, span_id: 2, parent: 1, name: "db.query".into(), start_ns: 150, end_ns: 250 }
        );
        let json = serde_json::to_vec(&req).unwrap();
        assert!(String::from_utf8_lossy(&json).contains("\"traceId\":\"00000000000000000000000000000007\""));
        assert_eq!(spans(&json, Encoding::Json, false).unwrap().0, a);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&proto).unwrap();
        assert_eq!(spans(&gz.finish().unwrap(), Encoding::Protobuf, true).unwrap().0, a);
        assert_eq!(Encoding::of("application/x-protobuf"), Some(Encoding::Protobuf));
        assert_eq!(Encoding::of("Application/JSON; charset=utf-8"), Some(Encoding::Json));
        assert_eq!(Encoding::of("text/plain"), None);
    }

    #[test]
    fn what_cannot_be_a_span_is_counted_and_bad_bodies_are_one_line() {
        let req = export(vec![
            otlp(7, 1, 0, "ok", 100, 300),
            OtlpSpan { trace_id: vec![1, 2, 3], ..otlp(7, 2, 0, "short id", 1, 2) },
            otlp(7, 3, 0, "ends before it starts", 300, 100),
            otlp(0, 4, 0, "zero trace", 1, 2),
        ]);
        let (kept, bad) = spans(&req.encode_to_vec(), Encoding::Protobuf, false).unwrap();
        assert_eq!((kept.len(), bad), (1, 3));
        for (body, enc, gzip) in [
            (&b"\xff\xff\xff"[..], Encoding::Protobuf, false),
            (&b"{\"resourceSpans\": 3}"[..], Encoding::Json, false),
            (&b"not gzip"[..], Encoding::Protobuf, true),
        ] {
            let e = spans(body, enc, gzip).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(spans(&vec![0; MAX_BODY + 1], Encoding::Protobuf, false).unwrap_err().contains("the most taken"));
        // A gzip bomb stops at the bound.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        for _ in 0..(MAX_INFLATED / (1 << 20) + 1) {
            gz.write_all(&vec![0u8; 1 << 20]).unwrap();
        }
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < MAX_BODY);
        assert!(spans(&bomb, Encoding::Protobuf, true).unwrap_err().contains("inflates past"));
    }

    #[test]
    fn names_cannot_drive_a_terminal_and_are_cut() {
        let req =
            export(vec![otlp(7, 1, 0, "db\u{1b}]0;owned\u{7}\u{1b}[2J", 1, 2), otlp(7, 2, 0, &"x".repeat(5000), 1, 2)]);
        let (kept, _) = spans(&req.encode_to_vec(), Encoding::Protobuf, false).unwrap();
        assert!(!kept[0].name.chars().any(char::is_control), "{:?}", kept[0].name);
        assert_eq!(kept[1].name.chars().count(), MAX_NAME);
    }
}
