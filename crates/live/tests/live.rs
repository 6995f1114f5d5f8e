//! The live view at its own level: a real attack's records fed to a `Live` over loopback, then
//! read back as Prometheus text and as the JSON snapshot from its server, which stops when told.

use std::time::Duration;

use attack::testing::{Behaviour, TestServer};
use attack::{AttackConfig, Model, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// `GET path` on `addr`, the whole response as text.
async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attacks_records_read_back_as_metrics_and_a_snapshot() {
    let server = TestServer::start(Behaviour::default()).await;
    let live = live::Live::new("live test");
    let model = Model::Closed { streams: 1, requests: Some(50), duration: None };
    let target = Target::new(http::Method::GET, server.url("/").parse().unwrap());
    let config = AttackConfig::new(vec![target], model).with_connections(2);
    attack::run(config, live.consumer(None), CancellationToken::new()).await.unwrap();

    let listener = live::bind("127.0.0.1:0", false).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let serving = tokio::spawn(live::serve(listener, live.clone(), stop.clone().cancelled_owned()));
    let metrics = get(addr, "/metrics").await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    let total: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("loadlab_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(total, 50.0, "{metrics}");
    assert!(metrics.contains("loadlab_request_duration_seconds_bucket"), "{metrics}");
    let snapshot = get(addr, "/api/snapshot").await;
    let body = &snapshot[snapshot.find("\r\n\r\n").unwrap() + 4..];
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["title"], "live test");
    assert_eq!(json["runs"].as_array().unwrap().len(), 1, "{json}");
    // Told to stop, the server ends by itself.
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), serving).await.expect("stopped").unwrap();
}
