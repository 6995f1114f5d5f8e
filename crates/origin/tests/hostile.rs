//! The origin against hostile clients and recipes: it stays up, answers others, and stays within
//! its limits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use origin::{AdminPolicy, ConnLimits, Simulation};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod support;
use support::*;

fn admin() -> AdminPolicy {
    AdminPolicy { token: None, enabled: true, loopback_only: true }
}

async fn start_limited(max_payload: u64, limits: ConnLimits) -> Origin {
    let listener = origin::bind(([127, 0, 0, 1], 0).into()).unwrap();
    start_on(listener, Simulation::with_max_payload(max_payload).await, admin(), limits)
}

/// Bytes of this process's resident memory.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 =
        status.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_past_the_limit_are_refused_before_anything_is_made() {
    let o = start_limited(1 << 20, origin::DEFAULT_LIMITS).await;
    let before = rss();
    let started = Instant::now();
    // Twenty 1 GB tags in a 230-byte body; a gzipped random range that would make 32 buffers.
    let tags = "<<1024mb>>".repeat(20);
    let r = post_recipe(&o, &json!({"route": "/a", "body": tags, "stages": [{"at": 0, "status": 200}]})).await;
    assert_eq!(r.status, 400);
    assert!(r.text().starts_with("recipe.body: 20480mb of payload would go over the limit of 1mb"), "{}", r.text());
    let r = post_recipe(
        &o,
        &json!([{"route": "/ok", "body": "x", "stages": [{"at": 0, "status": 200}]},
                {"route": "/b", "random_content": "512mb..1024mb", "headers": {"content-encoding": "gzip"},
                 "stages": [{"at": 0, "status": 200}]}]),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.text().starts_with("recipe[1].random_content: 32768mb of payload"), "{}", r.text());
    assert!(started.elapsed() < Duration::from_secs(2), "refused at once: {:?}", started.elapsed());
    assert!(rss() < before + (64 << 20), "nothing was made: RSS grew {} MB", (rss() - before) >> 20);
    // Nothing changed.
    assert_eq!(get(&o, "/ok").await.status, 200, "the default route still answers");
    assert!(!get(&o, "/_admin/routes").await.text().contains("/ok"));

    // Within the limit it loads; the limit counts what the other routes hold, and a re-post
    // replaces a route's payload rather than adding to it.
    let random =
        |route: &str, size: &str| json!({"route": route, "random_content": size, "stages": [{"at": 0, "status": 200}]});
    assert_eq!(post_recipe(&o, &random("/c", "600kb")).await.status, 201);
    let r = post_recipe(&o, &random("/d", "500kb")).await;
    assert_eq!(r.status, 400);
    assert!(
        r.text().contains("recipe.random_content: 500kb of payload")
            && r.text().contains("kb held by the other routes"),
        "{}",
        r.text()
    );
    assert_eq!(post_recipe(&o, &random("/c", "900kb")).await.status, 201);
    assert_eq!(get(&o, "/c").await.body.len(), 900 << 10);
}

/// A server whose responses never end (chunked, forever) or never start; the notice is given
/// each time it has read a request.
async fn endless_upstream(answer: bool) -> (String, tokio::task::JoinHandle<()>, Arc<tokio::sync::Notify>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/big", l.local_addr().unwrap());
    let asked = Arc::new(tokio::sync::Notify::new());
    let notice = Arc::clone(&asked);
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else { return };
            let asked = Arc::clone(&asked);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                asked.notify_one();
                if !answer {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    return;
                }
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").await;
                let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                while s.write_all(chunk.as_bytes()).await.is_ok() {}
            });
        }
    });
    (url, task, notice)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_origin_body_is_cut_at_the_limit_and_a_silent_one_blocks_no_other_upload() {
    let o = start_limited(4 << 20, origin::DEFAULT_LIMITS).await;
    let (endless, _t1, _) = endless_upstream(true).await;
    let before = rss();
    let r = post_recipe(&o, &json!({"route": "/e", "origin": endless, "stages": [{"at": 0, "status": 200}]})).await;
    assert_eq!(r.status, 400);
    assert!(r.text().starts_with("recipe.origin: the body from http://"), "{}", r.text());
    assert!(r.text().contains("of payload left under the limit"), "{}", r.text());
    assert!(rss() < before + (64 << 20), "RSS grew {} MB", (rss() - before) >> 20);

    // An origin that never answers holds its own upload, not everyone's.
    let (silent, _t2, asked) = endless_upstream(false).await;
    let addr = o.addr;
    let stuck = tokio::spawn(async move {
        let o = Origin::at(addr);
        post_recipe(&o, &json!({"route": "/s", "origin": silent, "stages": [{"at": 0, "status": 200}]})).await
    });
    // Once the origin is waiting on the silent upstream.
    tokio::time::timeout(Duration::from_secs(30), asked.notified()).await.expect("the origin never asked");
    let started = Instant::now();
    let r = post_recipe(&o, &json!({"route": "/other", "body": "fine", "stages": [{"at": 0, "status": 200}]})).await;
    assert_eq!(r.status, 201);
    assert!(started.elapsed() < Duration::from_secs(2), "waited {:?} behind the stuck fetch", started.elapsed());
    assert_eq!(get(&o, "/other").await.text(), "fine");
    stuck.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_refuse_bodies_over_their_cap_with_413_without_reading_them() {
    let o = start().await;
    for handler in ["echo", "fibonacci"] {
        let route = format!("/{handler}");
        let recipe = json!({"route": route, "handler": handler, "stages": [{"at": 0, "status": 200}]});
        assert_eq!(post_recipe(&o, &recipe).await.status, 201);
        // Announced: refused on the head.
        let mut s = TcpStream::connect(o.addr).await.unwrap();
        let head = format!("POST {route} HTTP/1.1\r\nhost: x\r\ncontent-length: 1073741824\r\n\r\n");
        s.write_all(head.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 413"), "{}", String::from_utf8_lossy(&buf[..n]));
        // Chunked, 24 MB: cut at the cap.
        let mut s = TcpStream::connect(o.addr).await.unwrap();
        let head = format!("POST {route} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n");
        s.write_all(head.as_bytes()).await.unwrap();
        let chunk = format!("100000\r\n{}\r\n", "y".repeat(1 << 20));
        let mut answer = Vec::new();
        for _ in 0..24 {
            if s.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        assert!(answer.starts_with(b"HTTP/1.1 413"), "{}", String::from_utf8_lossy(&answer[..answer.len().min(200)]));
    }
    // Under the cap, as before.
    let r = send(&o, "POST", "/echo", &[], "hello").await.unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));
}

/// One of the origin's admin metrics without labels.
async fn metric(o: &Origin, name: &str) -> u64 {
    let text = get(o, "/_admin/metrics").await.text();
    let prefix = format!("{name} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_fibonacci_numbers_do_not_hold_up_other_requests() {
    let o = start().await;
    let fib = json!({"route": "/fib", "handler": "fibonacci", "stages": [{"at": 0, "status": 200}]});
    let fast = json!({"route": "/fast", "body": "ok", "stages": [{"at": 0, "status": 200}]});
    assert_eq!(post_recipe(&o, &json!([fib, fast])).await.status, 201);
    let addr = o.addr;
    let started = Instant::now();
    let big: Vec<_> = (0..6)
        .map(|_| {
            tokio::spawn(async move {
                let o = Origin::at(addr);
                let r = send(&o, "POST", "/fib", &[], r#"{"fib": 100000}"#).await.unwrap();
                assert_eq!(r.status, 200);
                let v: Value = serde_json::from_slice(&r.body).unwrap();
                assert_eq!(v["fibonacci"].as_str().unwrap().len(), 20899);
                started.elapsed()
            })
        })
        .collect();
    // Once all six have reached the origin (answering, or answered already).
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&o, "loadlab_origin_in_flight").await + metric(&o, "loadlab_origin_response_seconds_count").await < 6 {
        assert!(Instant::now() < deadline, "the big requests never reached the origin");
        tokio::task::yield_now().await;
    }
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let t = Instant::now();
        assert_eq!(get(&o, "/fast").await.status, 200);
        worst = worst.max(t.elapsed());
    }
    let mut slowest = Duration::ZERO;
    for b in big {
        slowest = slowest.max(b.await.unwrap());
    }
    // The unrelated requests did not wait for the computations.
    assert!(worst * 2 < slowest, "an unrelated request took {worst:?} while the fibonacci ones took {slowest:?}");
}

/// Reads until the server closes the connection; how long that took.
async fn closed_after(s: &mut TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit.saturating_sub(started.elapsed()), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("still open after {limit:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_closed_and_busy_ones_are_not() {
    let limits = ConnLimits { header: Duration::from_millis(400), idle: Duration::from_millis(800) };
    let o = start_limited(origin::DEFAULT_MAX_PAYLOAD, limits).await;
    let slow = json!({"route": "/slow", "body": "late", "stages": [{"at": 0, "status": 200, "latency": "1500ms"}]});
    assert_eq!(post_recipe(&o, &slow).await.status, 201);

    // Slowloris: a head a byte at a time, never finished.
    let mut loris = TcpStream::connect(o.addr).await.unwrap();
    loris.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let drip = tokio::spawn({
        let (_, mut w) = loris.into_split();
        async move {
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if w.write_all(b"x").await.is_err() {
                    return true;
                }
            }
            false
        }
    });
    // Idle from the start, and idle after a response.
    let mut idle = TcpStream::connect(o.addr).await.unwrap();
    let mut kept = TcpStream::connect(o.addr).await.unwrap();
    kept.write_all(b"GET /x HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
    // Busy: a request answered after 1.5 s, longer than both limits.
    let mut busy = TcpStream::connect(o.addr).await.unwrap();
    busy.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();

    let took = closed_after(&mut idle, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(700), "idle closed after {took:?}");
    closed_after(&mut kept, Duration::from_secs(5)).await;
    assert!(tokio::time::timeout(Duration::from_secs(5), drip).await.unwrap().unwrap(), "slowloris was cut off");
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), busy.read(&mut answer)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&answer[..n]);
    assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("late"), "{text}");
    // And the origin still serves.
    assert_eq!(get(&o, "/x").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_answers_ipv4_loopback_on_a_dual_stack_listener() {
    let listener = origin::bind("[::]:0".parse().unwrap()).expect("a dual-stack listener on [::]");
    let port = listener.local_addr().unwrap().port();
    let _o = start_on(listener, Simulation::new().await, admin(), origin::DEFAULT_LIMITS);
    // The peer is ::ffff:127.0.0.1 here.
    let o = Origin::at(([127, 0, 0, 1], port).into());
    let r = get(&o, "/_admin/status").await;
    assert_eq!((r.status, r.text().as_str()), (200, "ok!"));
}
