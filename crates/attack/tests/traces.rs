//! W3C trace context on every request: each request's `traceparent` as the server receives it,
//! over every client (the lean HTTP/1.1 one, hyper's over TLS, HTTP/2, h2c, HTTP/3), its trace id
//! giving back the request's number, and the key in the results file's header.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;

use attack::testing::{Behaviour, Captured, TestServer};
use attack::{Protocol, TlsOptions};
use bytes::Bytes;
use http::Method;
use results::trace::{parse_trace_id, TraceKey};

use support::*;

/// The request numbers the server's requests carried, each checked as a W3C version 00 sampled
/// `traceparent` of `key`, with the span id `key` gives that request.
fn carried(got: &[Captured], key: TraceKey) -> Vec<u64> {
    got.iter()
        .map(|c| {
            let v = c.headers.get("traceparent").expect("a traceparent on every request").to_str().unwrap();
            let parts: Vec<&str> = v.split('-').collect();
            assert_eq!((parts.len(), parts[0], parts[3]), (4, "00", "01"), "{v}");
            let seq = parse_trace_id(parts[1]).and_then(|id| key.seq_of(id)).unwrap_or_else(|| panic!("{v}"));
            assert_eq!(parts[2], format!("{:016x}", key.span_id(seq)), "{v}");
            assert_eq!(c.headers.get_all("traceparent").iter().count(), 1);
            seq
        })
        .collect()
}

fn header_key(run: &Run) -> Option<TraceKey> {
    let mut reader = results::Reader::new(&run.bytes[..], "mem");
    while let Some(item) = reader.next().unwrap() {
        if let results::Item::Run(h) = item {
            return h.plan().trace_key();
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_carries_its_own_traceparent_over_every_client() {
    let plain = TestServer::start(Behaviour::default()).await;
    let tls = TestServer::start_tls(Behaviour::default()).await;
    let h3 = TestServer::start_h3(Behaviour::default()).await;
    let key = TraceKey::from_seed(11);
    let cases = [
        ("lean http1", &plain, Protocol::Http1),
        ("h2c", &plain, Protocol::H2c),
        ("http1 over tls", &tls, Protocol::Http1),
        ("http2", &tls, Protocol::Http2),
        ("http3", &h3, Protocol::Http3),
    ];
    for (name, server, protocol) in cases {
        server.clear_captured();
        // A POST with a body: the header goes in the head, the body stays as it was.
        let mut t = target(&server.url("/t"));
        t.method = Method::POST;
        t.body = Bytes::from_static(b"{\"n\":1}");
        let mut config = closed(vec![t], 2, 1, 60);
        config.client.protocol = protocol;
        config.client.tls = TlsOptions { insecure: true, ..Default::default() };
        config.trace = Some(key);
        let run = attack(config).await;
        assert!(run.errors().is_empty(), "{name}: {:?}", run.errors());
        let got = server.captured();
        assert!(got.iter().all(|c| &c.body[..] == b"{\"n\":1}" && c.method == "POST"), "{name}");
        // Each request's own id: every request number once, as the records have them.
        let mut seqs = carried(&got, key);
        seqs.sort_unstable();
        let recorded: Vec<u64> = run.records.iter().map(|(r, _)| r.seq).collect::<BTreeSet<_>>().into_iter().collect();
        assert_eq!(seqs, recorded, "{name}");
        assert_eq!(seqs, (0..60).collect::<Vec<_>>(), "{name}");
        assert_eq!(header_key(&run), Some(key), "{name}: the key in the results file");
    }
    // Without it, nothing is added and the header names no key.
    plain.clear_captured();
    let run = attack(closed(vec![target(&plain.url("/"))], 1, 1, 5)).await;
    assert!(plain.captured().iter().all(|c| c.headers.get("traceparent").is_none()));
    assert_eq!(header_key(&run), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templated_and_redirected_requests_keep_their_trace_and_an_open_run_numbers_them_all() {
    let server = TestServer::start(Behaviour::default()).await;
    let key = TraceKey::from_seed(12);
    // A templated target is prepared per request: it carries its trace too.
    let defaults = attack::TargetDefaults::default();
    let text = format!("GET {}\n", server.url("/u/{{seq}}"));
    let targets = attack::parse_targets(&text, attack::TargetFormat::Http, "t.txt", &defaults).unwrap();
    let mut config = closed(targets, 2, 1, 40);
    config.trace = Some(key);
    let run = attack(config).await;
    assert!(run.errors().is_empty(), "{:?}", run.errors());
    let got = server.captured();
    for (c, seq) in got.iter().zip(carried(&got, key)) {
        assert_eq!(c.path, format!("/u/{seq}"), "the trace of the request the path names");
    }
    // A redirect's second request is the same request: the same trace.
    server.clear_captured();
    let mut config = closed(vec![target(&server.url("/redirect"))], 1, 1, 3);
    config.trace = Some(key);
    attack(config).await;
    let got = server.captured();
    assert_eq!(got.len(), 6);
    for pair in got.chunks(2) {
        assert_eq!((pair[0].path.as_str(), pair[1].path.as_str()), ("/redirect", "/final"));
        assert_eq!(carried(pair, key)[0], carried(pair, key)[1]);
    }
    // The open model: every scheduled hit, numbered by its place in the schedule.
    server.clear_captured();
    let mut config = open(vec![target(&server.url("/"))], 100.0, 0.5);
    config.trace = Some(key);
    let run = attack(config).await;
    let mut seqs = carried(&server.captured(), key);
    seqs.sort_unstable();
    assert_eq!(seqs, (0..run.records.len() as u64).collect::<Vec<_>>());
}
