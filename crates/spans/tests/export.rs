//! The client half against real sockets: a run's client spans exported to the lab's own OTLP
//! receiver (which decodes with opentelemetry-proto's types, as a collector does), a collector
//! that is not there, one that answers 503, and spans of a run the collector does not want.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use results::trace::TraceKey;
use results::{Consumer, Entry, Record, RunEnd, RunHeader, RunPlan};
use spans::{ClientSpans, ExportTarget, Pace};

const START_NS: u64 = 1_700_000_000_000_000_000;

fn header(key: TraceKey) -> RunHeader {
    RunHeader {
        name: "step".into(),
        start_unix_ns: START_NS,
        targets: vec!["GET http://user:secret@127.0.0.1:9/x?q=1".into()],
        run_plan: Some(RunPlan { trace: Some(key.text()), ..Default::default() }),
        ..Default::default()
    }
}

fn record(seq: u64) -> Record {
    Record {
        seq,
        scheduled_us: seq * 1000,
        lag_us: 100,
        latency_us: 2_000 + seq,
        ttfb_us: 1_500,
        status: if seq % 10 == 9 { 503 } else { 200 },
        ..Default::default()
    }
}

/// Feeds `n` requests of `key`'s run into an exporter to `url`, after the load.
fn export(url: &str, key: TraceKey, n: u64) -> spans::Exported {
    let mut spans = ClientSpans::new(ExportTarget::new(url).unwrap(), Pace::AfterLoad);
    let outcome = spans.outcome();
    let h = header(key);
    spans.start(&h).unwrap();
    for seq in 0..n {
        let r = record(seq);
        let error = (r.status == 503).then_some("503 Service Unavailable");
        spans.record(&Entry { record: &r, target: Some(&h.targets[0]), error }).unwrap();
    }
    spans.end(&RunEnd::default()).unwrap();
    let o = outcome.lock().unwrap().clone();
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_becomes_the_client_span_its_traceparent_named_and_the_collector_takes_them() {
    let receiver = spans::Receiver::start().await.unwrap();
    let key = TraceKey::from_seed(7);
    receiver.collector.register(key);
    // Past one batch, so two exports carry them.
    let n = spans::BATCH as u64 + 100;
    let base = receiver.endpoint();
    let out = tokio::task::spawn_blocking(move || export(&base, key, n)).await.unwrap();
    assert_eq!((out.exported, out.rejected, out.unsent, out.error.as_deref()), (n, 0, 0, None), "{out:?}");
    assert_eq!(out.url, receiver.traces_endpoint(), "a base URL gets /v1/traces");
    assert_eq!(receiver.collector.counts().exports, 2);
    for seq in [0, 9, n - 1] {
        let kept = receiver.collector.of_request(key, seq);
        assert_eq!(kept.len(), 1, "request {seq}");
        let s = &kept[0];
        // The span the server's span names as its parent: the traceparent's parent id.
        assert_eq!(s.span_id, key.span_id(seq));
        assert_eq!(s.parent, 0, "the client span is the trace's root");
        assert_eq!(&*s.name, "GET");
        // From the send (the schedule plus its wait) to the last byte.
        assert_eq!(s.start_ns, START_NS + (seq * 1000 + 100) * 1000);
        assert_eq!(s.end_ns, START_NS + (seq * 1000 + 2_000 + seq) * 1000);
    }
    assert_eq!(out.line(), format!("client spans: {n} exported to {}", receiver.traces_endpoint()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_the_collector_refuses_are_counted_apart_from_those_it_took() {
    let receiver = spans::Receiver::start().await.unwrap();
    // The receiver keeps only registered runs' spans, and says how many it dropped.
    let url = receiver.traces_endpoint();
    let out = tokio::task::spawn_blocking(move || export(&url, TraceKey::from_seed(8), 50)).await.unwrap();
    assert_eq!((out.exported, out.rejected, out.unsent), (0, 50, 0), "{out:?}");
    assert!(
        out.line().contains("0 of 50 exported") && out.line().contains("50 refused by the collector"),
        "{}",
        out.line()
    );
}

#[test]
fn a_collector_that_is_not_there_stops_the_sending_and_says_why() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let began = Instant::now();
    let out = export(&format!("http://127.0.0.1:{port}"), TraceKey::from_seed(9), 3 * spans::BATCH as u64);
    assert_eq!((out.exported, out.unsent), (0, 3 * spans::BATCH as u64), "{out:?}");
    assert!(out.error.as_deref().is_some_and(|e| e.contains("refused")), "{out:?}");
    // Three tries of the first batch, the rest not tried.
    assert!(began.elapsed() < Duration::from_secs(20), "{:?}", began.elapsed());
}

#[test]
fn a_busy_collector_is_tried_again_then_left() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tries = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&tries);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(3) {
            let mut s = stream.unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut buf = vec![0; 1 << 16];
            let _ = s.read(&mut buf);
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    let out = export(&format!("http://127.0.0.1:{port}/otlp/v1/traces"), TraceKey::from_seed(10), 10);
    assert_eq!(out.url, format!("http://127.0.0.1:{port}/otlp/v1/traces"), "a path is kept as given");
    assert_eq!(tries.load(Ordering::SeqCst), 3, "{out:?}");
    assert_eq!((out.exported, out.unsent, out.error.as_deref()), (0, 10, Some("the collector answered 503")));
}

#[test]
fn a_url_that_is_no_collector_is_refused_in_one_line() {
    for bad in ["ftp://x/v1/traces", "127.0.0.1:4318", "http://"] {
        let e = ExportTarget::new(bad).unwrap_err();
        assert!(e.contains("http:// or https://") || e.contains(bad), "{bad}: {e}");
        assert!(!e.contains('\n'));
    }
}
