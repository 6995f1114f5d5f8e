//! The attack over real loopback sockets against the in-process test server: protocols, TLS,
//! the closed model, requests and responses of every shape.

mod support;

use std::time::Duration;

use attack::testing::{Behaviour, TestServer};
use attack::{AttackConfig, ClientOptions, Model, Protocol, Target};
use bytes::Bytes;
use http::Method;
use results::LlrWriter;
use tokio_util::sync::CancellationToken;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_model_counts_requests_and_connections() {
    let server = TestServer::start(Behaviour::default()).await;
    // Enough requests that every connection takes some: a worker whose connection opened late
    // on a busy machine found 200 all taken (2 connections of 4, once in CI's full run).
    let run = attack(closed(vec![target(&server.url("/"))], 4, 1, 2000)).await;
    assert_eq!(run.records.len(), 2000);
    assert_eq!(server.connections(), 4);
    assert_eq!(run.metrics.connections, 4);

    let server = TestServer::start(Behaviour::default()).await;
    let mut config = closed(vec![target(&server.url("/"))], 1, 1, 40);
    config.requests_per_conn = Some(5);
    let run = attack(config).await;
    assert_eq!(run.records.len(), 40);
    assert_eq!(server.connections(), 8);
    assert_eq!(run.metrics.connections, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_model_by_duration_stops_by_itself() {
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(10), ..Default::default() }).await;
    let by_time = Model::Closed { streams: 1, requests: None, duration: Some(Duration::from_millis(500)) };
    let config = AttackConfig::new(vec![target(&server.url("/"))], by_time).with_connections(2);
    let run = attack(config).await;
    // Two connections, 10 ms each: about 100 requests in 0.5 s.
    assert!((40..=110).contains(&run.records.len()), "{}", run.records.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_model_longer_than_its_timeout_runs_to_its_end() {
    // The run once ended a timeout and a second after it started, whatever its length.
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(10), ..Default::default() }).await;
    let by_time = Model::Closed { streams: 1, requests: None, duration: Some(Duration::from_millis(2500)) };
    let mut config = AttackConfig::new(vec![target(&server.url("/"))], by_time).with_connections(1);
    config.client.timeout = Duration::from_millis(300);
    let run = attack(config).await;
    let last = run.records.iter().map(|(r, _)| r.scheduled_us).max().unwrap();
    // Cut short, it ended at 1.3 s (the timeout and a second); a stalled last request ends by 2.2 s.
    assert!(last >= 2_000_000, "the last request was sent at {last} us of 2.5 s");
    let by_count = Model::Closed { streams: 1, requests: Some(150), duration: None };
    let mut config = AttackConfig::new(vec![target(&server.url("/"))], by_count).with_connections(1);
    config.client.timeout = Duration::from_millis(300);
    assert_eq!(attack(config).await.records.len(), 150, "every request asked for, however long they take");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_over_tls_multiplexes_streams_on_one_connection() {
    let server = TestServer::start_tls(Behaviour::default()).await;
    let dir = tempdir();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.cert_pem.as_ref().unwrap()).unwrap();
    let mut config = closed(vec![target(&server.url("/"))], 1, 10, 100);
    config.client = ClientOptions { protocol: Protocol::Http2, ..Default::default() };
    config.client.tls.root_certs = vec![ca];
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 100, "{:?}", run.errors().first());
    assert_eq!(server.connections(), 1);
    assert!(server.captured().iter().all(|c| c.version == http::Version::HTTP_2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_checks_certificates_unless_insecure() {
    let server = TestServer::start_tls(Behaviour::default()).await;
    let run = attack(closed(vec![target(&server.url("/"))], 1, 1, 3)).await;
    assert_eq!(run.metrics.successes, 0);
    assert!(run.errors().iter().all(|e| e.starts_with("tls: invalid peer certificate")), "{:?}", run.errors());
    assert!(run.records.iter().all(|(r, _)| r.status == 0));

    let mut config = closed(vec![target(&server.url("/"))], 1, 1, 3);
    config.client.tls.insecure = true;
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 3);
    assert!(server.captured().iter().all(|c| c.version == http::Version::HTTP_11));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_with_prior_knowledge() {
    let server = TestServer::start(Behaviour::default()).await;
    let mut config = open(vec![target(&server.url("/"))], 200.0, 0.5);
    config.client.protocol = Protocol::H2c;
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 100);
    assert_eq!(server.connections(), 1);
    assert!(server.captured().iter().all(|c| c.version == http::Version::HTTP_2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_receives_method_headers_and_body() {
    let server = TestServer::start(Behaviour::default()).await;
    for protocol in [Protocol::Http1, Protocol::H2c] {
        let mut t = Target::new(Method::POST, server.url("/things?x=1").parse().unwrap());
        t.headers.push(attack::parse_header("replayed-traffic: true").unwrap());
        t.headers.push(attack::parse_header("Host: news.example").unwrap());
        // Connection-specific: HTTP/2 must not send it (and must not fail the request for it).
        t.headers.push(attack::parse_header("Connection: keep-alive").unwrap());
        t.body = Bytes::from_static(b"{\"fib\":10}");
        let mut config = closed(vec![t], 1, 1, 2);
        config.client.protocol = protocol;
        let run = attack(config).await;
        assert_eq!(run.metrics.successes, 2, "{protocol:?}: {:?}", run.errors());
        assert_eq!(run.records[0].0.bytes_out, 10);
        let got = server.captured();
        assert_eq!(got.len(), 2);
        let c = &got[0];
        assert_eq!(c.version, if protocol == Protocol::H2c { http::Version::HTTP_2 } else { http::Version::HTTP_11 });
        assert_eq!((c.method.as_str(), c.path.as_str()), ("POST", "/things?x=1"));
        assert_eq!(c.headers["replayed-traffic"], "true");
        // The Host header names the host over both protocols (HTTP/2 sends it as :authority).
        assert_eq!(c.host, "news.example");
        assert_eq!(c.headers["content-length"], "10");
        assert_eq!(&c.body[..], b"{\"fib\":10}");
        assert_eq!(c.headers.get("connection").is_some(), protocol == Protocol::Http1);
        server.clear_captured();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_followed_up_to_the_limit() {
    let server = TestServer::start(Behaviour::default()).await;
    let run = attack(closed(vec![target(&server.url("/redirect"))], 1, 1, 1)).await;
    assert_eq!(run.records[0].0.status, 200);
    let paths: Vec<String> = server.captured().into_iter().map(|c| c.path).collect();
    assert_eq!(paths, ["/redirect", "/final"]);

    let mut config = closed(vec![target(&server.url("/redirect"))], 1, 1, 1);
    config.client.redirects = None;
    let run = attack(config).await;
    assert_eq!(run.records[0].0.status, 302);
    assert_eq!(run.metrics.successes, 1);

    let mut config = closed(vec![target(&server.url("/loop"))], 1, 1, 1);
    config.client.redirects = Some(3);
    let run = attack(config).await;
    assert_eq!(run.errors(), ["stopped after 3 redirects"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_body_limits_what_is_read() {
    let body = Bytes::from(vec![b'x'; 100_000]);
    let server = TestServer::start(Behaviour { body, ..Default::default() }).await;
    for protocol in [Protocol::Http1, Protocol::H2c] {
        for (max, want) in [(None, 100_000), (Some(1000), 1000), (Some(0), 0)] {
            let mut config = closed(vec![target(&server.url("/"))], 1, 1, 3);
            config.client.max_body = max;
            config.client.protocol = protocol;
            let before = server.connections();
            let run = attack(config).await;
            assert_eq!(run.metrics.successes, 3);
            assert!(run.records.iter().all(|(r, _)| r.bytes_in == want), "{protocol:?} max {max:?}");
            // The rest of the body is read and not counted, as vegeta's client does: one
            // connection carries every request, with or without a limit.
            assert_eq!(server.connections() - before, 1, "{protocol:?} max {max:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_results_not_crashes() {
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let run = attack(closed(vec![target(&format!("http://127.0.0.1:{port}/"))], 1, 1, 3)).await;
    assert_eq!(run.errors(), ["connect: connection refused"; 3]);

    let server = TestServer::start(Behaviour { delay: Duration::from_secs(5), ..Default::default() }).await;
    let mut config = closed(vec![target(&server.url("/"))], 1, 1, 1);
    config.client.timeout = Duration::from_millis(200);
    let run = attack(config).await;
    assert_eq!(run.errors(), ["timeout"]);
    let latency = ms(run.records[0].0.latency_us);
    assert!((200.0..1000.0).contains(&latency), "{latency}");

    let server = TestServer::start(Behaviour { status: 500, ..Default::default() }).await;
    let run = attack(closed(vec![target(&server.url("/"))], 1, 1, 2)).await;
    assert_eq!(run.errors(), ["500 Internal Server Error"; 2]);
    assert_eq!(run.metrics.status[&500], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_off_opens_a_connection_per_request() {
    let server = TestServer::start(Behaviour::default()).await;
    let mut config = closed(vec![target(&server.url("/"))], 1, 1, 5);
    config.client.keepalive = false;
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 5);
    assert_eq!(server.connections(), 5);
    assert!(server.captured().iter().all(|c| c.headers["connection"] == "close"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_are_used_round_robin() {
    let server = TestServer::start(Behaviour::default()).await;
    let targets = vec![target(&server.url("/a")), target(&server.url("/b"))];
    let run = attack(closed(targets, 1, 1, 4)).await;
    let t: Vec<u32> = run.records.iter().map(|(r, _)| r.target).collect();
    assert_eq!(t, [0, 1, 0, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_drains_and_closes_the_file() {
    let server = std::sync::Arc::new(
        TestServer::start(Behaviour { delay: Duration::from_millis(20), ..Default::default() }).await,
    );
    let stop = CancellationToken::new();
    let buf = SharedBuf::default();
    let config = open(vec![target(&server.url("/"))], 100.0, 60.0);
    let (s2, seen) = (stop.clone(), server.clone());
    // Stopped once 30 requests have arrived, with more in flight (each takes 20 ms).
    tokio::spawn(async move {
        while seen.received() < 30 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        s2.cancel();
    });
    let summary = attack::run(config, LlrWriter::new(buf.clone()), stop).await.unwrap();
    assert!(summary.interrupted);
    // Promptly: a handful past the 30, not the 6,000 a minute would send.
    assert!((30..=60).contains(&summary.metrics.requests), "{}", summary.metrics.requests);
    // Every request sent got its answer before the file was closed.
    assert_eq!(summary.metrics.successes, summary.metrics.requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_keeps_the_urls_host() {
    let server = TestServer::start(Behaviour::default()).await;
    // The name never resolves: every byte goes to the loopback server given by --connect-to.
    let mut config = closed(vec![target("http://news.example.invalid:8080/page")], 1, 1, 2);
    config.client.connect_to = Some(server.addr.to_string());
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 2, "{:?}", run.errors());
    let got = server.captured();
    assert_eq!(got[0].headers["host"], "news.example.invalid:8080");
    assert_eq!(got[0].path, "/page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_are_presented() {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client = rcgen::CertificateParams::new(vec!["loadlab-client".to_owned()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    let server = TestServer::start_tls_client_auth(Behaviour::default(), ca.der().clone()).await;
    let dir = tempdir();
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    std::fs::write(&cert, client.pem()).unwrap();
    std::fs::write(&key, client_key.serialize_pem()).unwrap();

    // Without a certificate the handshake fails; with one it succeeds.
    let mut config = closed(vec![target(&server.url("/"))], 1, 1, 2);
    config.client.tls.insecure = true;
    let run = attack(config.clone()).await;
    assert_eq!(run.metrics.successes, 0, "served without a client certificate");
    config.client.tls.cert = Some(cert);
    config.client.tls.key = Some(key);
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 2, "{:?}", run.errors());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_chunked_head_and_reuse() {
    let body = Bytes::from(vec![b'z'; 150_000]);
    let server = TestServer::start(Behaviour { body, ..Default::default() }).await;
    // Chunked bodies are counted whole, and the connection is reused after them.
    let run = attack(closed(vec![target(&server.url("/chunked"))], 1, 1, 5)).await;
    assert_eq!(run.metrics.successes, 5, "{:?}", run.errors());
    assert!(run.records.iter().all(|(r, _)| r.bytes_in == 150_000));
    assert_eq!(server.connections(), 1);
    // ... and counted up to --max-body, the rest read and dropped: the connection is reused.
    let mut config = closed(vec![target(&server.url("/chunked"))], 1, 1, 2);
    config.client.max_body = Some(70_000);
    let run = attack(config).await;
    assert!(run.records.iter().all(|(r, _)| r.bytes_in == 70_000 && r.status == 200));
    assert_eq!(run.metrics.connections, 1);
    // HEAD: a Content-Length but no body; the connection carries on.
    let head = Target::new(Method::HEAD, server.url("/").parse().unwrap());
    let run = attack(closed(vec![head], 1, 1, 3)).await;
    assert_eq!(run.metrics.successes, 3, "{:?}", run.errors());
    assert!(run.records.iter().all(|(r, _)| r.bytes_in == 0));
    assert_eq!(run.metrics.connections, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_responses_of_every_shape_are_results() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // (response bytes, expected status, bytes in, error prefix)
    let cases: Vec<(&[u8], u16, u64, &str)> = vec![
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 5, ""),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", 200, 8, ""),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 204, 0, ""),
        (b"HTTP/1.0 200 OK\r\n\r\nuntil the end", 200, 13, ""),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, 0, "malformed response"),
        (b"garbage\r\n\r\n", 0, 0, "malformed response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", 0, 0, "connection closed before the response completed"),
        (b"", 0, 0, "connection closed before the response completed"),
    ];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let responses: Vec<Vec<u8>> = cases.iter().map(|c| c.0.to_vec()).collect();
    tokio::spawn(async move {
        for i in 0.. {
            let Ok((mut s, _)) = listener.accept().await else { return };
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(&responses[i % responses.len()]).await;
            let _ = s.shutdown().await;
        }
    });
    let n = cases.len() as u64 * 3;
    let mut config = closed(vec![target(&format!("http://{addr}/"))], 1, 1, n);
    config.client.keepalive = false;
    config.client.timeout = Duration::from_secs(5);
    let run = attack(config).await;
    assert_eq!(run.records.len() as u64, n);
    for (r, err) in &run.records {
        let (_, status, bytes, error) = cases[(r.seq % cases.len() as u64) as usize];
        assert_eq!(r.status, status, "seq {}: {err:?}", r.seq);
        if error.is_empty() {
            assert_eq!((r.bytes_in, err.as_deref()), (bytes, None), "seq {}", r.seq);
        } else {
            assert!(err.as_deref().unwrap_or_default().starts_with(error), "seq {}: {err:?}", r.seq);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_retires_are_replaced_without_errors() {
    // nginx closes a connection after `keepalive_requests` (1000 by default): HTTP/2 by GOAWAY,
    // which refuses the streams the client opened meanwhile. Those were never processed, so they
    // are sent again on a new connection, as Go's client does, rather than reported as errors.
    let server = TestServer::start(Behaviour { max_requests_per_conn: Some(50), ..Default::default() }).await;
    for protocol in [Protocol::H2c, Protocol::Http1] {
        let before = server.connections();
        // HTTP/1.1 gets as many connections as HTTP/2 has streams in flight.
        let (connections, streams) = if protocol == Protocol::H2c { (2, 10) } else { (20, 1) };
        let mut config = closed(vec![target(&server.url("/"))], connections, streams, 2000);
        config.client.protocol = protocol;
        let run = attack(config).await;
        assert_eq!(run.metrics.successes, 2000, "{protocol:?}: {:?}", &run.errors()[..run.errors().len().min(3)]);
        // 50 per connection (HTTP/2: plus the streams in flight when the limit hit), and each
        // client connection's last one may end the run part-used.
        let opened = server.connections() - before;
        assert!((2000 / 60..=2000 / 50 + connections as u64).contains(&opened), "{protocol:?}: {opened} connections");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_keepalive_connection_is_retried_only_for_idempotent_requests() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A server that answers one request per connection as if it kept it alive, then closes it
    // (an idle timeout firing right after the response): the next request finds it closed.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                if s.read(&mut buf).await.unwrap_or(0) > 0 {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
                }
            });
        }
    });
    let url = format!("http://{addr}/");
    // GET: each request that meets the stale connection goes again on a new one.
    let run = attack(closed(vec![target(&url)], 1, 1, 6)).await;
    assert_eq!(run.metrics.successes, 6, "{:?}", run.errors());
    assert_eq!(run.metrics.connections, 6);
    // POST may have been processed: it is not sent twice, and the failure is a result.
    let post = Target::new(Method::POST, url.parse().unwrap());
    let run = attack(closed(vec![post], 1, 1, 6)).await;
    assert_eq!(run.metrics.successes, 3);
    assert!(run.errors().iter().all(|e| e.starts_with("connection") || e.contains("reset")), "{:?}", run.errors());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_cross_http2_flow_control_both_ways() {
    // 3 MiB each way: more than the default 64 KiB stream window the server starts with, so
    // the body goes out as the server grants window, and the echo comes back as we release it.
    let server = TestServer::start(Behaviour::default()).await;
    let mut t = Target::new(Method::POST, server.url("/echo").parse().unwrap());
    t.body = Bytes::from((0..3 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let mut config = closed(vec![t.clone()], 1, 4, 8);
    config.client.protocol = Protocol::H2c;
    let run = attack(config).await;
    assert_eq!(run.metrics.successes, 8, "{:?}", run.errors());
    assert!(run.records.iter().all(|(r, _)| r.bytes_in == 3 << 20 && r.bytes_out == 3 << 20));
    assert!(server.captured().iter().all(|c| c.body == t.body));
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_against_rfc_9112_are_judged_as_it_says() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let many: String = (0..100).map(|i| format!("X-H{i}: {i}\r\n")).collect();
    let many = format!("HTTP/1.1 200 OK\r\n{many}Content-Length: 2\r\n\r\nok");
    // (response, expected status, error prefix): kept-alive connections, several requests each.
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (many.into_bytes(), 200, ""),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok".to_vec(),
            0,
            "malformed response: conflicting Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok".to_vec(), 200, ""),
        // More bytes than announced: this response stands, the next request goes on a new connection.
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA BYTES".to_vec(), 200, ""),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
                .to_vec(),
            200,
            "",
        ),
    ];
    for (response, status, error) in cases {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reply = response.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let reply = reply.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let mut config = closed(vec![target(&format!("http://{addr}/"))], 1, 1, 4);
        config.client.timeout = Duration::from_secs(2);
        let run = attack(config).await;
        server.abort();
        for (r, err) in &run.records {
            let text = String::from_utf8_lossy(&response[..response.len().min(60)]).into_owned();
            assert_eq!(r.status, status, "{text:?}: {err:?}");
            if error.is_empty() {
                assert_eq!(err.as_deref(), None, "{text:?}");
                assert_eq!(r.bytes_in, 2, "{text:?}");
            } else {
                assert!(err.as_deref().unwrap_or_default().starts_with(error), "{text:?}: {err:?}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_asks_for_gzip_and_counts_both_sizes() {
    let body = Bytes::from("loadlab ".repeat(1000));
    let server = TestServer::start(Behaviour { body: body.clone(), ..Default::default() }).await;
    for protocol in [Protocol::Http1, Protocol::H2c] {
        // Without --compressed: no Accept-Encoding, a plain body, no decoded count.
        let mut config = closed(vec![target(&server.url("/gzip"))], 1, 1, 5);
        config.client.protocol = protocol;
        let run = attack(config).await;
        assert_eq!(run.metrics.bytes_in, 5 * 8000);
        assert_eq!(run.metrics.decoded_in(), None);

        let mut config = closed(vec![target(&server.url("/gzip"))], 2, 1, 10);
        config.client.protocol = protocol;
        config.client.compressed = true;
        let run = attack(config).await;
        assert!(run.errors().is_empty(), "{:?}", run.errors());
        let wire = run.records[0].0.bytes_in;
        assert!(wire > 0 && wire < 200, "{protocol:?}: gzipped body of {wire} bytes");
        assert_eq!(run.metrics.bytes_in, 10 * wire, "{protocol:?}: records count the bytes received");
        assert_eq!(run.metrics.decoded_in(), Some(10 * 8000), "{protocol:?}: and the run their decoded size");
    }
    let sent = server.captured();
    let asked: Vec<_> = sent.iter().map(|c| c.headers.get("accept-encoding").cloned()).collect();
    assert_eq!(asked.iter().filter(|a| a.is_some()).count(), 20, "{asked:?}");

    // A target's own Accept-Encoding is kept.
    let mut t = target(&server.url("/gzip"));
    t.headers.push((http::header::ACCEPT_ENCODING, http::HeaderValue::from_static("identity")));
    let mut config = closed(vec![t], 1, 1, 2);
    config.client.compressed = true;
    let run = attack(config).await;
    assert_eq!(run.metrics.bytes_in, 2 * 8000);
    assert_eq!(run.metrics.decoded_in(), Some(2 * 8000));
    assert_eq!(server.captured().last().unwrap().headers.get("accept-encoding").unwrap(), "identity");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_targets_hold_their_mix_and_a_seed_repeats_it() {
    let server = TestServer::start(Behaviour::default()).await;
    let weighted = |path: &str, w: u32| {
        let mut t = target(&server.url(path));
        t.weight = w;
        t
    };
    let targets = vec![weighted("/a", 6), weighted("/b", 3), weighted("/c", 1)];
    let mut config = closed(targets.clone(), 4, 1, 10_000);
    config.seed = 11;
    let run = attack(config).await;
    assert_eq!(run.records.len(), 10_000);
    let count = |p: &str| server.captured().iter().filter(|c| c.path == p).count();
    // Within 1% of each share over 10,000 requests (here exact: 10,000 is 1,000 cycles of 10).
    assert_eq!((count("/a"), count("/b"), count("/c")), (6_000, 3_000, 1_000));
    // The same seed sends the same target for each sequence number; another seed starts elsewhere
    // (13 does in a cycle of 10; a seed picks one of the cycle's 10 starts, so some coincide).
    let by_seq = |run: &Run| {
        let mut v: Vec<(u64, u32)> = run.records.iter().map(|(r, _)| (r.seq, r.target)).collect();
        v.sort_unstable();
        v.into_iter().map(|(_, t)| t).take(200).collect::<Vec<_>>()
    };
    let mut again = closed(targets.clone(), 2, 1, 200);
    again.seed = 11;
    let mut other = closed(targets, 2, 1, 200);
    other.seed = 13;
    let (a, b) = (attack(again).await, attack(other).await);
    assert_eq!(by_seq(&a), by_seq(&run));
    assert_ne!(by_seq(&b), by_seq(&run));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_render_distinct_values_per_request_over_http1_and_h2c() {
    let dir = tempdir();
    std::fs::write(dir.join("users.txt"), "ana\nbo\nJosé\n").unwrap();
    let server = TestServer::start(Behaviour::default()).await;
    let text = format!(
        "POST {}\nX-Request-Id: {{{{uuid}}}}\nContent-Type: application/json\n@{}\n",
        server.url("/u/{{seq}}?n={{rand 1 3}}&who={{line users.txt}}"),
        dir.join("body.json").display()
    );
    std::fs::write(dir.join("body.json"), "{\"user\":\"{{line users.txt}}\",\"at\":{{time ms}}}").unwrap();
    let defaults = attack::TargetDefaults { template_dir: dir.clone(), ..Default::default() };
    let targets = attack::parse_targets(&text, attack::TargetFormat::Http, "t.txt", &defaults).unwrap();
    assert_eq!(targets[0].label(), format!("POST {}", server.url("/u/{{seq}}?n={{rand 1 3}}&who={{line users.txt}}")));
    for (protocol, streams, n) in [(Protocol::Http1, 1, 600u64), (Protocol::H2c, 2, 300)] {
        server.clear_captured();
        let mut config = closed(targets.clone(), 4, streams, n);
        config.client.protocol = protocol;
        let run = attack(config).await;
        assert!(run.errors().is_empty(), "{:?}", run.errors());
        let got = server.captured();
        assert_eq!(got.len() as u64, n);
        // Every sequence number once, in the path.
        let mut seqs: Vec<u64> = got.iter().map(|c| c.path[3..c.path.find('?').unwrap()].parse().unwrap()).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..n).collect::<Vec<_>>(), "{protocol:?}");
        let ids: std::collections::HashSet<_> =
            got.iter().map(|c| c.headers.get("x-request-id").unwrap().to_str().unwrap().to_owned()).collect();
        assert_eq!(ids.len() as u64, n, "a UUID per request");
        let ns: std::collections::BTreeSet<_> =
            got.iter().map(|c| c.path.split("n=").nth(1).unwrap().split('&').next().unwrap().to_owned()).collect();
        assert_eq!(ns.into_iter().collect::<Vec<_>>(), ["1", "2", "3"]);
        // The file's lines in turn: each a third of the time, encoded in the URL, as is in the body.
        for (name, in_url) in [("ana", "ana"), ("bo", "bo"), ("José", "Jos%C3%A9")] {
            let bodies = got.iter().filter(|c| c.body.starts_with(format!("{{\"user\":\"{name}\"").as_bytes())).count();
            let urls = got.iter().filter(|c| c.path.ends_with(&format!("who={in_url}"))).count();
            assert_eq!((bodies as u64, urls as u64), (n / 3, n / 3), "{name} over {protocol:?}");
        }
        assert!(got
            .iter()
            .all(|c| c.headers.get("content-length").is_none_or(|l| l.to_str().unwrap() == c.body.len().to_string())));
    }
}
