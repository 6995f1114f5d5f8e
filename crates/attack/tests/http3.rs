//! HTTP/3 over loopback: the attack's QUIC client against an in-process h3 server.

mod support;

use std::time::Duration;

use attack::testing::{Behaviour, TestServer};
use attack::{Protocol, TlsOptions};

use support::*;

fn over_h3(mut config: attack::AttackConfig) -> attack::AttackConfig {
    config.client.protocol = Protocol::Http3;
    config.client.tls = TlsOptions { insecure: true, ..Default::default() };
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_model_multiplexes_streams_on_its_connections() {
    let server =
        TestServer::start_h3(Behaviour { body: bytes::Bytes::from_static(b"hello"), ..Default::default() }).await;
    let mut t = target(&server.url("/x?q=1"));
    t.headers.push(("x-custom".parse().unwrap(), "custom-value".parse().unwrap()));
    t.headers.push(("host".parse().unwrap(), "example.test".parse().unwrap()));
    let run = attack(over_h3(closed(vec![t], 3, 4, 300))).await;
    assert!(run.errors().is_empty(), "{:?}", run.errors());
    assert_eq!(run.records.len(), 300);
    assert!(run.records.iter().all(|(r, _)| r.status == 200 && r.bytes_in == 5));
    let got = server.captured();
    assert_eq!(got.len(), 300);
    assert!(got.iter().all(|c| c.version == http::Version::HTTP_3 && c.path == "/x?q=1"));
    // The field section as a third-party QPACK decoder (the h3 crate's) reads it: the Host
    // header as :authority, the target's header, the default user agent.
    let c = &got[0];
    assert_eq!((c.method.as_str(), c.host.as_str()), ("GET", "example.test"));
    assert_eq!(c.headers["x-custom"], "custom-value");
    assert!(c.headers["user-agent"].to_str().unwrap().starts_with("loadlab/"));
    assert!(!c.headers.contains_key("host"), "{:?}", c.headers);
    assert_eq!(server.connections(), 3, "one QUIC connection per --connections");
    let new_conns = run.records.iter().filter(|(r, _)| r.new_conn).count();
    assert_eq!(new_conns, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_model_keeps_its_schedule_and_counts_latency_from_it() {
    let server = TestServer::start_h3(Behaviour { delay: Duration::from_millis(20), ..Default::default() }).await;
    let mut target = target(&server.url("/echo"));
    target.method = http::Method::POST;
    target.body = bytes::Bytes::from_static(b"{\"n\":1}");
    let run = attack(over_h3(open(vec![target], 50.0, 1.0))).await;
    assert_eq!(run.records.len(), 50);
    assert!(run.errors().is_empty(), "{:?}", run.errors());
    let mut times: Vec<u64> = run.records.iter().map(|(r, _)| r.scheduled_us).collect();
    times.sort_unstable();
    assert!(times.iter().enumerate().all(|(i, t)| *t == i as u64 * 20_000), "{times:?}");
    // Latency counts from the schedule and includes the server's 20 ms.
    assert!(run.records.iter().all(|(r, _)| r.latency_us >= 20_000 && r.bytes_in == 7));
    assert!(server.captured().iter().all(|c| &c.body[..] == b"{\"n\":1}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_refuses_streams_that_are_sent_again_on_a_new_connection() {
    let server = TestServer::start_h3(Behaviour { max_requests_per_conn: Some(25), ..Default::default() }).await;
    let run = attack(over_h3(closed(vec![target(&server.url("/"))], 1, 4, 200))).await;
    assert!(run.errors().is_empty(), "{:?}", run.errors());
    assert_eq!(server.captured().len(), 200);
    assert!(server.connections() >= 8, "{} connections", server.connections());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_failures_are_results_with_their_kind() {
    let server = TestServer::start_h3(Behaviour::default()).await;
    // An untrusted certificate: the handshake fails, each request records why.
    let mut config = closed(vec![target(&server.url("/"))], 1, 1, 3);
    config.client.protocol = Protocol::Http3;
    let run = attack(config).await;
    assert_eq!(run.records.len(), 3);
    assert!(
        run.errors().iter().all(|e| e.starts_with("http3 handshake:") && e.contains("certificate")),
        "{:?}",
        run.errors()
    );
    // Nothing listening on the UDP port: the idle timeout ends each attempt, as a timeout.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = over_h3(closed(vec![target(&format!("https://127.0.0.1:{port}/"))], 1, 1, 2));
    config.client.timeout = Duration::from_millis(600);
    let run = attack(config).await;
    assert_eq!(run.records.len(), 2);
    assert!(run.records.iter().all(|(r, _)| r.status == 0));
    // An http URL is refused before anything is sent.
    let config = over_h3(closed(vec![target("http://127.0.0.1:1/")], 1, 1, 1));
    let e = attack::run(config, results::LlrWriter::new(Vec::new()), Default::default()).await.err().unwrap();
    assert!(e.to_string().contains("--http3 needs https URLs"), "{e}");
}
