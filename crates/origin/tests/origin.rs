//! The origin simulator over real loopback sockets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use origin::{AdminPolicy, Simulation};
use serde_json::{json, Value};

mod support;
use support::*;

#[tokio::test]
async fn default_recipe_serves_gzipped_html_after_100ms() {
    let o = start().await;
    let t = Instant::now();
    let r = get(&o, "/any/path?x=1").await;
    assert!(t.elapsed() >= Duration::from_millis(100));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("cache-control"), Some("public, max-age=30"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(gunzip(&r.body).contains("<title>loadlab origin simulator</title>"));
    assert_eq!(get(&o, "/_admin/status").await.text(), "ok!");
    assert_eq!(get(&o, "/_admin/routes").await.text(), "/*");
}

#[tokio::test]
async fn add_recipe_then_current_recipe_returns_it_as_posted() {
    let o = start().await;
    let recipe = json!([{"route": "/news", "random_content": "2kb", "origin": null, "body": null,
        "headers": {"x-sim": "yes"}, "stages": [{"at": 0, "status": 200, "latency": "800ms..1s"}]}]);
    let r = post_recipe(&o, &recipe).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let all: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2);
    let current: Value = serde_json::from_slice(&get(&o, "/_admin/current_recipe").await.body).unwrap();
    assert_eq!(current[1], recipe[0]);
    assert_eq!(current[1]["stages"][0]["latency"], "800ms..1s");
    // It can be posted back as is.
    assert_eq!(post_recipe(&o, &current).await.status, 201);
    assert_eq!(get(&o, "/_admin/routes_status").await.text(), "/* 200 100\n/news 200 800..1000");
}

#[tokio::test]
async fn a_bad_recipe_gets_400_and_changes_nothing() {
    let o = start().await;
    post_recipe(&o, &json!({"route": "/a", "body": "A", "stages": [{"at": 0, "status": 200}]})).await;
    let bad = json!([{"route": "/b", "body": "B", "stages": [{"at": 0, "status": 200}]},
        {"route": "/a", "body": "changed", "stages": [{"at": 0, "status": 200, "latency": "1.5s"}]}]);
    let r = post_recipe(&o, &bad).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.text(),
        "recipe[1].stages[0].latency: \"1.5s\" is not a latency (use 0, \"<int>s\", \"10.5ms\" or \"<int>us\")"
    );
    assert_eq!(get(&o, "/_admin/routes").await.text(), "/*\n/a");
    assert_eq!(get(&o, "/a").await.text(), "A");
    for junk in ["{", "[]", "42", r#"{"body":"x","extra":1}"#] {
        let r = send(&o, "POST", "/_admin/add_recipe", &[], junk).await.unwrap();
        assert_eq!(r.status, 400, "{junk}");
        assert_eq!(r.text().lines().count(), 1, "{junk}: {}", r.text());
    }
    assert_eq!(get(&o, "/a").await.text(), "A");
}

#[tokio::test]
async fn routes_exact_prefix_longest_and_query_ignored() {
    let o = start().await;
    let recipes = json!([
        {"route": "/news", "body": "exact", "stages": [{"at": 0, "status": 200}]},
        {"route": "/news*", "body": "news-prefix", "stages": [{"at": 0, "status": 200}]},
        {"route": "/news/sport*", "body": "sport-prefix", "stages": [{"at": 0, "status": 200}]},
        {"route": "/only", "body": "", "stages": [{"at": 0, "status": 200}]}]);
    assert_eq!(post_recipe(&o, &recipes).await.status, 201);
    assert_eq!(get(&o, "/news?page=2").await.text(), "exact");
    assert_eq!(get(&o, "/newsroom").await.text(), "news-prefix");
    assert_eq!(get(&o, "/news/sport/football").await.text(), "sport-prefix");
    assert_eq!(get(&o, "/News").await.status, 200); // falls to the default "/*"
    let empty = get(&o, "/only").await;
    assert_eq!((empty.status, empty.body.len()), (200, 0));
    get(&o, "/_admin/restart").await;
    post_recipe(&o, &json!({"route": "/x", "body": "x", "stages": [{"at": 0, "status": 200}]})).await;
    // Only "/*" (default) and "/x": restart the default away by replacing "/*" is not possible, so
    // check an unmatched path on a table without "/*".
    let o2 = start().await;
    post_recipe(&o2, &json!({"route": "/*", "body": "d", "stages": [{"at": 0, "status": 200}]})).await;
    assert_eq!(get(&o2, "/whatever").await.text(), "d");
}

#[tokio::test]
async fn status_bodies_content_types_and_headers() {
    let o = start().await;
    let recipes = json!([
        {"route": "/e404", "body": "x", "headers": {"x-r": "1"}, "stages": [{"at": 0, "status": 404}]},
        {"route": "/e500", "body": "x", "headers": {"x-r": "1"}, "stages": [{"at": 0, "status": 500}]},
        {"route": "/e304", "body": "x", "headers": {"x-r": "1", "content-encoding": "gzip"}, "stages": [{"at": 0, "status": 304}]},
        {"route": "/later", "body": "x", "headers": {"x-r": "1"}, "stages": [{"at": "10s", "status": 200}]},
        {"route": "/json", "body": "{\"a\":1}", "stages": [{"at": 0, "status": 200}]},
        {"route": "/typed", "body": "{\"a\":1}", "headers": {"Content-Type": "text/plain"}, "stages": [{"at": 0, "status": 200}]}]);
    assert_eq!(post_recipe(&o, &recipes).await.status, 201);
    let r = get(&o, "/e404").await;
    assert_eq!((r.status, r.text().as_str(), r.header("x-r")), (404, "Not found", Some("1")));
    let r = get(&o, "/e500").await;
    assert_eq!((r.status, r.text().as_str(), r.header("x-r")), (500, "Error 500", Some("1")));
    let r = get(&o, "/e304").await;
    assert_eq!((r.status, r.body.len(), r.header("content-type")), (304, 0, Some("text/html; charset=utf-8")));
    assert_eq!(r.header("x-r"), Some("1"));
    let r = get(&o, "/later?q=1").await;
    assert_eq!(r.status, 406);
    assert_eq!(r.text(), "Recipe not set at /later, please POST a recipe for this route to /_admin/add_recipe");
    assert_eq!(r.header("x-r"), Some("1"));
    assert!(get(&o, "/_admin/routes_status").await.text().contains("/later 406 0"));
    let r = get(&o, "/json").await;
    assert_eq!(r.header("content-type"), Some("application/json; charset=utf-8"));
    let r = get(&o, "/typed").await;
    assert_eq!(r.header("content-type"), Some("text/plain"));
}

#[tokio::test]
async fn gzip_is_real_for_payloads_and_error_bodies() {
    let o = start().await;
    let recipes = json!([
        {"route": "/big", "random_content": "200kb", "headers": {"Content-Encoding": "gzip"}, "stages": [{"at": 0, "status": 200}]},
        {"route": "/fail", "random_content": "1kb", "headers": {"content-encoding": "gzip"}, "stages": [{"at": 0, "status": 503}]},
        {"route": "/tagged", "body": "<p><<10b>>|<<1kb>></p>", "headers": {"content-encoding": "gzip"}, "stages": [{"at": 0, "status": 200}]},
        {"route": "/range", "random_content": "1kb..4kb", "stages": [{"at": 0, "status": 200}]}]);
    assert_eq!(post_recipe(&o, &recipes).await.status, 201);
    let r = get(&o, "/big").await;
    let plain = gunzip(&r.body);
    assert_eq!(plain.len(), 204_800);
    assert!(plain.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/'));
    assert!(r.body.len() < 204_800);
    // Made once at load: the same bytes every time.
    assert_eq!(get(&o, "/big").await.body, r.body);
    let r = get(&o, "/fail").await;
    assert_eq!((r.status, gunzip(&r.body).as_str()), (503, "Error 503"));
    let tagged = gunzip(&get(&o, "/tagged").await.body);
    assert!(
        tagged.starts_with("<p>") && tagged.ends_with("</p>") && tagged.len() == 3 + 10 + 1 + 1024 + 4,
        "{}",
        tagged.len()
    );
    let mut sizes = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let n = get(&o, "/range").await.body.len();
        assert!((1024..=4096).contains(&n), "{n}");
        sizes.insert(n);
    }
    assert!(sizes.len() > 5, "sizes drawn per request: {sizes:?}");
}

#[tokio::test]
async fn compress_per_request_gzips_every_response_as_it_is_sent() {
    let o = start().await;
    let recipe = json!({"route": "/each", "random_content": "50kb", "compress": "per_request",
        "headers": {"content-encoding": "gzip"}, "stages": [{"at": 0, "status": 200}]});
    assert_eq!(post_recipe(&o, &recipe).await.status, 201);
    let (a, b) = (get(&o, "/each").await, get(&o, "/each").await);
    assert_eq!(a.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&a.body).len(), 51_200);
    assert_eq!(gunzip(&a.body), gunzip(&b.body), "one payload, compressed each time");
    // Without gzip, or with another word: refused by field.
    let bad = json!({"route": "/x", "body": "x", "compress": "per_request"});
    let r = post_recipe(&o, &bad).await;
    assert!(r.status == 400 && String::from_utf8_lossy(&r.body).contains("recipe.compress"), "{:?}", r.status);
    let bad = json!({"route": "/x", "body": "x", "compress": "always", "headers": {"content-encoding": "gzip"}});
    assert_eq!(post_recipe(&o, &bad).await.status, 400);
}

#[tokio::test]
async fn head_sends_gets_headers_without_body_and_other_methods_get_405() {
    let o = start().await;
    post_recipe(&o, &json!({"route": "/h", "random_content": "3kb", "stages": [{"at": 0, "status": 200}]})).await;
    let r = send(&o, "HEAD", "/h", &[], "").await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("3072"));
    assert!(r.body.is_empty());
    let r = send(&o, "PUT", "/h", &[], "x").await.unwrap();
    assert_eq!(r.status, 405);
    let r = send(&o, "DELETE", "/h", &[], "").await.unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(get(&o, "/_admin/nope").await.status, 404);
}

/// Moves tokio's clock, which the in-process origin's stages follow, on by `d` at once: stage
/// timing tested without sleeping, the same on a slow machine as on a fast one.
async fn skip(d: Duration) {
    tokio::time::pause();
    tokio::time::advance(d).await;
    tokio::time::resume();
}

#[tokio::test]
async fn stages_progress_and_reposting_replaces_the_schedule() {
    let o = start().await;
    let staged =
        json!({"route": "/s", "body": "x", "stages": [{"at": 0, "status": 200}, {"at": "60s", "status": 503}]});
    post_recipe(&o, &staged).await;
    assert_eq!(get(&o, "/s").await.status, 200);
    skip(Duration::from_secs(59)).await;
    assert_eq!(get(&o, "/s").await.status, 200);
    skip(Duration::from_secs(2)).await;
    assert_eq!(get(&o, "/s").await.status, 503);
    assert!(get(&o, "/_admin/routes_status").await.text().contains("/s 503 0"));

    // Re-posting replaces the route and its schedule: the old 503 stage never comes.
    post_recipe(
        &o,
        &json!({"route": "/r", "body": "x", "stages": [{"at": 0, "status": 200}, {"at": "60s", "status": 503}]}),
    )
    .await;
    skip(Duration::from_secs(30)).await;
    post_recipe(&o, &json!({"route": "/r", "body": "y", "stages": [{"at": 0, "status": 200}]})).await;
    skip(Duration::from_secs(600)).await;
    let r = get(&o, "/r").await;
    assert_eq!((r.status, r.text().as_str()), (200, "y"));

    // Restart: back to the default; old schedules never fire.
    post_recipe(&o, &json!({"route": "/*", "body": "z", "stages": [{"at": "60s", "status": 500}]})).await;
    assert_eq!(get(&o, "/_admin/restart").await.text(), "ok!");
    skip(Duration::from_secs(120)).await;
    assert_eq!(get(&o, "/anything").await.status, 200);
    assert_eq!(get(&o, "/_admin/routes").await.text(), "/*");
}

#[tokio::test]
async fn latency_fixed_and_ranged() {
    let o = start().await;
    post_recipe(
        &o,
        &json!([{"route": "/slow", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "200ms"}]},
        {"route": "/range", "body": "x", "stages": [{"at": 0, "status": 200, "latency": ["50ms", "150ms"]}]}]),
    )
    .await;
    let t = Instant::now();
    get(&o, "/slow").await;
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(200) && took < Duration::from_millis(400), "{took:?}");
    for _ in 0..5 {
        let t = Instant::now();
        get(&o, "/range").await;
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(50) && took < Duration::from_millis(300), "{took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_slow_requests_are_served_concurrently() {
    let o = Arc::new(start().await);
    post_recipe(&o, &json!({"route": "/slow", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "200ms"}]}))
        .await;
    let t = Instant::now();
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let o = Arc::clone(&o);
            tokio::spawn(async move { get(&o, "/slow").await.status })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    // A server answering one at a time would need 40 s, two at a time 20 s; the rest is slack
    // for a busy machine.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_serves_some_queues_some_and_overflows_the_rest() {
    let o = Arc::new(start().await);
    let recipe = json!({"route": "/svc", "body": "ok", "stages": [
        {"at": 0, "status": 200, "latency": "300ms", "concurrency": 2, "queue": 2, "overflow_status": 429}]});
    assert_eq!(post_recipe(&o, &recipe).await.status, 201);
    let t = Instant::now();
    let tasks: Vec<_> = (0..7)
        .map(|_| {
            let o = Arc::clone(&o);
            tokio::spawn(async move {
                let r = get(&o, "/svc").await;
                (r.status, t.elapsed())
            })
        })
        .collect();
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got.sort_by_key(|(_, at)| *at);
    let ms = |d: Duration| d.as_millis();
    // Three overflow at once, two are served in the first 300 ms, two wait for them.
    let overflow: Vec<_> = got.iter().filter(|(s, _)| *s == 429).collect();
    assert_eq!(overflow.len(), 3, "{got:?}");
    assert!(overflow.iter().all(|(_, at)| ms(*at) < 250), "{got:?}");
    let served: Vec<u128> = got.iter().filter(|(s, _)| *s == 200).map(|(_, at)| ms(*at)).collect();
    assert_eq!(served.len(), 4, "{got:?}");
    assert!(served[..2].iter().all(|&m| (300..550).contains(&m)), "{got:?}");
    assert!(served[2..].iter().all(|&m| (600..900).contains(&m)), "{got:?}");
    // The gate is free again afterwards.
    assert_eq!(get(&o, "/svc").await.status, 200);
    // A queue without a concurrency is refused.
    let bad = json!({"route": "/x", "body": "", "stages": [{"at": 0, "status": 200, "queue": 5}]});
    let r = post_recipe(&o, &bad).await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("stages[0].concurrency"), "{}", r.text());
}

#[tokio::test]
async fn handlers_echo_fibonacci_empty() {
    let o = start().await;
    post_recipe(
        &o,
        &json!([{"route": "/echo", "handler": "echo", "stages": [{"at": 0, "status": 200}]},
        {"route": "/fibonacci", "handler": "fibonacci", "stages": [{"at": 0, "status": 200}]},
        {"route": "/empty", "handler": "empty", "stages": [{"at": 0, "status": 200}]}]),
    )
    .await;
    let r = send(&o, "POST", "/echo", &[], "hello there").await.unwrap();
    assert_eq!(r.text(), "hello there");
    let r =
        send(&o, "POST", "/fibonacci", &[("content-type", "application/json")], r#"{"name":"benchmark","fib":500}"#)
            .await
            .unwrap();
    assert_eq!(r.header("content-type"), Some("application/json; charset=utf-8"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["name"], "benchmark");
    assert_eq!(v["service"], "loadlab");
    assert_eq!(v["fibonacci"].as_str().unwrap().len(), 105);
    assert_eq!(v["uuid"].as_str().unwrap().len(), 36);
    assert!(chrono::DateTime::parse_from_rfc3339(v["time"].as_str().unwrap()).is_ok());
    let r = get(&o, "/empty").await;
    assert_eq!((r.status, r.body.len()), (200, 0));
}

#[tokio::test]
async fn faults_reset_close_hang_slow_body() {
    let o = start().await;
    post_recipe(&o, &json!([
        {"route": "/reset", "body": "x", "stages": [{"at": 0, "status": 200, "fault": "reset"}]},
        {"route": "/close", "body": "x", "stages": [{"at": 0, "status": 200, "fault": "close"}]},
        {"route": "/hang", "body": "x", "stages": [{"at": 0, "status": 200, "fault": "hang"}]},
        {"route": "/slow", "random_content": "20kb", "stages": [{"at": 0, "status": 200, "fault": "slow_body", "bandwidth": "64kb/s"}]},
        {"route": "/half", "body": "x", "stages": [{"at": 0, "status": 200, "fault": "close", "probability": 0.5}]}])).await;

    let e = send(&o, "GET", "/reset", &[], "").await.unwrap_err();
    let io = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>()).map(|e| e.kind());
    assert_eq!(io, Some(std::io::ErrorKind::ConnectionReset), "{e:?}");

    let e = send(&o, "GET", "/close", &[], "").await.unwrap_err();
    assert!(e.is_incomplete_message(), "{e:?}");

    let hang = tokio::time::timeout(Duration::from_millis(500), send(&o, "GET", "/hang", &[], "")).await;
    assert!(hang.is_err(), "hang answered");

    let t = Instant::now();
    let r = get(&o, "/slow").await;
    assert_eq!(r.body.len(), 20 * 1024);
    // 20 KiB at 64 KiB/s: about 0.3 s.
    assert!(t.elapsed() >= Duration::from_millis(250), "{:?}", t.elapsed());

    let mut ok = 0;
    for _ in 0..100 {
        ok += u32::from(send(&o, "GET", "/half", &[], "").await.is_ok());
    }
    assert!((25..=75).contains(&ok), "{ok} of 100 answered at probability 0.5");
    let counts: Value = serde_json::from_slice(&get(&o, "/_admin/current_count").await.body).unwrap();
    assert_eq!(counts["reset"], 1);
    assert_eq!(counts["close"].as_u64().unwrap(), 1 + 100 - ok as u64);
}

#[tokio::test]
async fn counts_and_metrics() {
    let o = start().await;
    post_recipe(
        &o,
        &json!([{"route": "/ok", "body": "x", "stages": [{"at": 0, "status": 200}]},
        {"route": "/bad", "body": "x", "stages": [{"at": 0, "status": 503}]}]),
    )
    .await;
    for _ in 0..3 {
        get(&o, "/ok").await;
    }
    get(&o, "/bad").await;
    let c: Value = serde_json::from_slice(&get(&o, "/_admin/current_count").await.body).unwrap();
    assert_eq!(c, json!({"total_requests": 4, "200": 3, "503": 1}));
    let m = get(&o, "/_admin/metrics").await.text();
    assert!(m.contains("loadlab_origin_requests_total{route=\"/ok\",status=\"200\"} 3"), "{m}");
    assert!(m.contains("loadlab_origin_requests_total{route=\"/bad\",status=\"503\"} 1"), "{m}");
    assert!(m.contains("loadlab_origin_response_seconds_bucket{le=\"+Inf\"} 4"), "{m}");
    assert!(
        m.contains("loadlab_origin_response_seconds_count 4") && m.contains("loadlab_origin_response_seconds_sum ")
    );
    assert!(m.contains("loadlab_origin_in_flight 0"), "{m}");
    assert_eq!(get(&o, "/_admin/clear_current_count").await.text(), r#"{"cleared":"yes"}"#);
    let c: Value = serde_json::from_slice(&get(&o, "/_admin/current_count").await.body).unwrap();
    assert_eq!(c, json!({"total_requests": 0}));
}

#[tokio::test]
async fn admin_token_guards_admin_only() {
    let o = start_with(AdminPolicy { token: Some("s3cret".into()), enabled: true, loopback_only: true }).await;
    assert_eq!(get(&o, "/_admin/status").await.status, 401);
    let r = send(&o, "GET", "/_admin/status", &[("authorization", "Bearer wrong")], "").await.unwrap();
    assert_eq!(r.status, 401);
    let r = send(&o, "GET", "/_admin/status", &[("authorization", "Bearer s3cret")], "").await.unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "ok!"));
    assert_eq!(get(&o, "/news").await.status, 200);
    let off = start_with(AdminPolicy { token: None, enabled: false, loopback_only: true }).await;
    assert_eq!(get(&off, "/_admin/status").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_payload_is_fetched_once_with_the_recipe_headers() {
    use attack::testing::{Behaviour, TestServer};
    let upstream =
        TestServer::start(Behaviour { body: Bytes::from_static(b"{\"from\":\"upstream\"}"), ..Default::default() })
            .await;
    let o = start().await;
    let recipe = json!({"route": "/p", "origin": upstream.url("/news"), "headers": {"x-replay": "true", "content-encoding": "gzip"},
        "stages": [{"at": 0, "status": 200}]});
    assert_eq!(post_recipe(&o, &recipe).await.status, 201);
    for _ in 0..5 {
        let r = get(&o, "/p").await;
        assert_eq!(gunzip(&r.body), "{\"from\":\"upstream\"}");
        assert_eq!(r.header("content-type"), Some("application/json; charset=utf-8"));
    }
    let seen = upstream.captured();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/news");
    assert_eq!(seen[0].headers["x-replay"], "true");
    assert_eq!(seen[0].headers["accept-encoding"], "gzip");
    // An origin that cannot be fetched is a bad recipe.
    let r = post_recipe(&o, &json!({"route": "/q", "origin": "http://127.0.0.1:1/", "stages": []})).await;
    assert_eq!(r.status, 400);
    assert!(r.text().starts_with("recipe.origin: fetching http://127.0.0.1:1/: connect:"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_and_tls_with_http2() {
    use attack::{AttackConfig, Model, Protocol, Target};
    let o = start().await;
    post_recipe(&o, &json!({"route": "/*", "random_content": "1kb", "stages": [{"at": 0, "status": 200}]})).await;
    let target = Target::new(http::Method::GET, format!("http://{}/x", o.addr).parse().unwrap());
    let mut config = AttackConfig::new(vec![target], Model::Closed { streams: 8, requests: Some(200), duration: None })
        .with_connections(2);
    config.client.protocol = Protocol::H2c;
    let s = attack::run(config, (), Default::default()).await.unwrap();
    assert_eq!((s.metrics.successes, s.metrics.connections), (200, 2));

    let (cert, key) = certificate("tls");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = origin::tls_acceptor(&cert, &key).unwrap();
    let sim = Simulation::new().await;
    tokio::spawn(origin::serve(listener, sim, AdminPolicy::default(), Some(acceptor), std::future::pending()));
    let target = Target::new(http::Method::GET, format!("https://{addr}/x").parse().unwrap());
    let mut config = AttackConfig::new(vec![target], Model::Closed { streams: 4, requests: Some(20), duration: None })
        .with_connections(1);
    config.client.protocol = Protocol::Http2;
    config.client.tls.root_certs = vec![cert];
    let s = attack::run(config, (), Default::default()).await.unwrap();
    assert_eq!((s.metrics.successes, s.metrics.connections), (20, 1), "{:?}", s.metrics.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http3_beside_tls_serves_the_same_routes_and_faults() {
    use attack::{AttackConfig, Model, Protocol, Schedule, Target};
    let (cert, key) = certificate("h3");
    let listener = origin::bind(([127, 0, 0, 1], 0).into()).unwrap();
    let addr = listener.local_addr().unwrap();
    let quic = origin::quic_endpoint(addr, &cert, &key, origin::DEFAULT_LIMITS).unwrap();
    assert_eq!(quic.local_addr().unwrap().port(), addr.port(), "the same port number over UDP");
    let sim = Simulation::new().await;
    let recipe = json!([
        {"route": "/x", "random_content": "1kb", "stages": [{"at": 0, "status": 200, "latency": "20ms"}]},
        {"route": "/reset", "body": "x", "stages": [{"at": 0, "status": 200, "fault": "reset"}]},
        {"route": "/hang", "body": "x", "stages": [{"at": 0, "status": 200, "fault": "hang"}]},
        {"route": "/teapot", "body": "short and stout", "stages": [{"at": 0, "status": 418}]}]);
    sim.upload(recipe.to_string().as_bytes()).await.unwrap();
    let acceptor = origin::tls_acceptor(&cert, &key).unwrap();
    let limits = origin::DEFAULT_LIMITS;
    tokio::spawn(origin::serve_with_h3(
        listener,
        quic,
        sim,
        AdminPolicy::default(),
        limits,
        Some(acceptor),
        std::future::pending(),
    ));
    let h3 = |path: &str, (model, connections): (Model, usize)| {
        let target = Target::new(http::Method::GET, format!("https://{addr}{path}").parse().unwrap());
        let mut config = AttackConfig::new(vec![target], model).with_connections(connections);
        config.client.protocol = Protocol::Http3;
        config.client.tls.root_certs = vec![cert.clone()];
        config
    };
    // A closed model with streams: every answer with its body, after the stage's latency.
    let closed = (Model::Closed { streams: 8, requests: Some(200), duration: None }, 2);
    let s = attack::run(h3("/x", closed), (), Default::default()).await.unwrap();
    assert_eq!((s.metrics.successes, s.metrics.connections), (200, 2), "{:?}", s.metrics.errors);
    assert_eq!(s.metrics.bytes_in, 200 * 1024);
    assert!(s.metrics.latency_min_us >= 20_000, "{}", s.metrics.latency_min_us);
    // An open model, and a status from the recipe.
    // (Over HTTP/3 an open model's connections are those its workers share.)
    let open = (Model::Open { schedule: Schedule::constant(40.0, std::time::Duration::from_secs(1)) }, 1);
    let s = attack::run(h3("/teapot", open), (), Default::default()).await.unwrap();
    assert_eq!((s.metrics.requests, s.metrics.status.get(&418).copied()), (40, Some(40)));
    // Faults are failed requests with their reason; a hang ends with the client's timeout.
    let one = || (Model::Closed { streams: 1, requests: Some(2), duration: None }, 1);
    let s = attack::run(h3("/reset", one()), (), Default::default()).await.unwrap();
    assert_eq!(s.metrics.successes, 0);
    assert!(s.metrics.errors.keys().all(|e| e.starts_with("http3:")), "{:?}", s.metrics.errors);
    let mut hang = h3("/hang", one());
    hang.client.timeout = std::time::Duration::from_millis(300);
    let s = attack::run(hang, (), Default::default()).await.unwrap();
    assert_eq!(s.metrics.errors.get("timeout").copied(), Some(2), "{:?}", s.metrics.errors);
    // TCP clients are told where HTTP/3 is.
    let opts = attack::ClientOptions {
        tls: attack::TlsOptions { root_certs: vec![cert.clone()], ..Default::default() },
        ..Default::default()
    };
    let f = attack::fetch(&format!("https://{addr}/teapot"), &[], opts).await.unwrap();
    assert_eq!(f.headers["alt-svc"], format!("h3=\":{}\"; ma=86400", addr.port()));
}
