//! The receiver over real sockets: an export taken (protobuf, JSON, gzip) and answered as OTLP
//! says, and whatever else a peer sends refused in its bounds.

use std::io::{Read, Write};
use std::net::TcpStream;

use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use results::trace::TraceKey;

/// Sends one request (`head` lines, then `body`) and returns the status and the body.
fn send(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let req = format!("{head}\r\nHost: lab\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").map_or(out.len(), |p| p + 4);
    (status, out[at..].to_vec())
}

fn export(key: TraceKey, seqs: std::ops::Range<u64>, stranger: usize) -> ExportTraceServiceRequest {
    let span = |trace: u128, id: u64| Span {
        trace_id: trace.to_be_bytes().to_vec(),
        span_id: id.to_be_bytes().to_vec(),
        name: "GET /".into(),
        start_time_unix_nano: 1,
        end_time_unix_nano: 2,
        ..Default::default()
    };
    let mut spans: Vec<Span> = seqs.map(|s| span(key.trace_id(s), s + 1)).collect();
    let other = TraceKey::from_seed(99);
    spans.extend((0..stranger as u64).map(|s| span(other.trace_id(s), s + 1)));
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_are_taken_and_answered_as_otlp_says() {
    let r = spans::Receiver::start().await.unwrap();
    let key = TraceKey::from_seed(5);
    r.collector.register(key);
    let addr = r.addr;
    let body = export(key, 0..10, 3).encode_to_vec();
    let (status, answer) = tokio::task::spawn_blocking(move || {
        send(addr, "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf", &body)
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
    // The three spans of a trace the lab never sent: a partial success naming them.
    let answer = ExportTraceServiceResponse::decode(&answer[..]).unwrap();
    assert_eq!(answer.partial_success.unwrap().rejected_spans, 3);
    assert_eq!(r.collector.of_request(key, 4).len(), 1);
    // JSON, gzipped.
    let json = serde_json::to_vec(&export(key, 10..20, 0)).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).unwrap();
    let gz = gz.finish().unwrap();
    let (status, answer) = tokio::task::spawn_blocking(move || {
        send(addr, "POST /v1/traces HTTP/1.1\r\nContent-Type: application/json\r\nContent-Encoding: gzip", &gz)
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert!(answer.get("partialSuccess").is_none_or(|p| p.is_null()), "{answer}");
    assert_eq!(r.collector.of_request(key, 15).len(), 1);
    let counts = r.collector.counts();
    assert_eq!((counts.received, counts.kept, counts.unknown_trace), (23, 20, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_no_export_is_refused_in_one_answer_and_the_receiver_goes_on() {
    let r = spans::Receiver::start().await.unwrap();
    let addr = r.addr;
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("GET /v1/traces HTTP/1.1", Vec::new(), 405),
        ("POST /v1/metrics HTTP/1.1\r\nContent-Type: application/x-protobuf", Vec::new(), 404),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: text/plain", b"x".to_vec(), 415),
        (
            "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: br",
            b"x".to_vec(),
            415,
        ),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf", vec![0xff; 64], 400),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/json", b"{\"resourceSpans\": [1]}".to_vec(), 400),
        ("POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf", vec![0; spans::MAX_BODY + 1], 413),
    ];
    for (head, body, want) in cases {
        let (status, answer) = tokio::task::spawn_blocking(move || send(addr, head, &body)).await.unwrap();
        assert_eq!(status, want, "{head}: {}", String::from_utf8_lossy(&answer));
        assert!(!String::from_utf8_lossy(&answer).contains('\u{1b}'));
    }
    assert_eq!(r.collector.counts().refused, 7);
    // Still serving.
    let body = export(TraceKey::from_seed(1), 0..1, 0).encode_to_vec();
    let (status, _) = tokio::task::spawn_blocking(move || {
        send(addr, "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf", &body)
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
}
