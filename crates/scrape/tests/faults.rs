//! A source that answers slowly, too much, with an error or with something else than the
//! format: each a clear line within the bounds, never a hang or a number.

use std::time::{Duration, Instant};

use client::testing::{Behaviour, TestServer};
use scrape::{Remote, Selector, Source};

fn remote(url: String) -> Remote {
    Remote {
        source: Source::Exporter(url),
        cpu: Selector::parse("process_cpu_seconds_total").unwrap(),
        memory: None,
        host: None,
        host_limits: Default::default(),
        tls: Default::default(),
    }
}

async fn checked(b: Behaviour) -> (String, Duration) {
    let server = TestServer::start(b).await;
    let mut r = remote(server.url("/metrics"));
    let started = Instant::now();
    let e = r.check().await.unwrap_err();
    (e, started.elapsed())
}

#[tokio::test]
async fn a_source_that_misbehaves_is_refused_in_one_line_within_its_bounds() {
    let (e, took) = checked(Behaviour { delay: Duration::from_secs(30), ..Default::default() }).await;
    assert!(e.contains("/metrics: timeout") && took < Duration::from_secs(10), "{e} after {took:?}");
    // 40 MiB of series: refused past 32 MiB, never read whole into a number.
    let huge = "process_cpu_seconds_total 1\n".repeat(40 << 20 >> 5);
    let (e, _) = checked(Behaviour { body: huge.into(), ..Default::default() }).await;
    assert!(e.contains("body over 33554432 bytes"), "{e}");
    let (e, _) = checked(Behaviour { status: 503, ..Default::default() }).await;
    assert!(e.contains("answered 503"), "{e}");
    let (e, _) = checked(Behaviour { body: "<html><body>Not Found</body></html>".into(), ..Default::default() }).await;
    assert!(e.contains("not the Prometheus text format: line 1"), "{e}");
    let (e, _) = checked(Behaviour { body: "process_resident_memory_bytes 1e6\n".into(), ..Default::default() }).await;
    assert!(
        e.contains("process_cpu_seconds_total selects no series") && e.contains("process_resident_memory_bytes"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // A reading of a source that stopped answering says so, and its step's CPU is unmeasured.
    let server =
        TestServer::start(Behaviour { body: "process_cpu_seconds_total 5\n".into(), ..Default::default() }).await;
    let r = remote(server.url("/metrics"));
    let first = r.read(false).await;
    assert_eq!(first.cpu_s(), Ok(5.0));
    drop(server);
    let second = r.read(false).await;
    let why = scrape::remote::used(&first, &second, 0.01).unwrap_err();
    assert!(why.contains("end not read"), "{why}");
}

/// A server that answers a redirect to another origin: the credentials given for the first stay
/// there, as curl and Go's net/http keep them; from https, a redirect to plain http is refused.
#[tokio::test]
async fn credentials_are_sent_only_to_the_origin_they_were_given_for() {
    use scrape::prometheus::{Auth, Secret, Server};
    let json = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
    let other = TestServer::start(Behaviour { body: json.into(), ..Default::default() }).await;
    let first = TestServer::start(Behaviour::default()).await;
    let away = format!("{}?to={}", first.url("/away"), other.url("/api/v1/query"));
    for auth in [
        Auth::Bearer(Secret::new("bearer-secret".into())),
        Auth::Basic { user: "u".into(), password: Secret::new("basic-secret".into()) },
    ] {
        // The base URL redirects every path to the other server's query endpoint.
        let server = Server { url: away.clone(), auth: Some(auth), interval: None, interval_checked: false };
        let selector = Selector::parse("process_cpu_seconds_total").unwrap();
        let _ = server.sum(&selector, None, &Default::default()).await;
        assert!(first.captured().iter().all(|c| c.headers.contains_key("authorization")));
        let there = other.captured();
        assert!(!there.is_empty(), "the redirect was followed");
        assert!(there.iter().all(|c| !c.headers.contains_key("authorization")), "{there:?}");
        other.clear_captured();
    }
    // The same origin keeps them (a path moved on the same server).
    let same = TestServer::start(Behaviour { body: json.into(), ..Default::default() }).await;
    let server = Server {
        url: format!("{}?to={}", same.url("/away"), same.url("/api/v1/query")),
        auth: Some(Auth::Bearer(Secret::new("t".into()))),
        interval: None,
        interval_checked: false,
    };
    let _ = server.sum(&Selector::parse("x").unwrap(), None, &Default::default()).await;
    assert!(same.captured().iter().all(|c| c.headers["authorization"] == "Bearer t"));
    // From TLS to plain http: refused, nothing sent there.
    let tls = TestServer::start_tls(Behaviour::default()).await;
    let options = client::TlsOptions { insecure: true, ..Default::default() };
    let url = format!("{}?to={}", tls.url("/away"), other.url("/metrics"));
    let e = client::fetch(&url, &[], scrape::fetch::options(&options)).await.unwrap_err();
    assert!(e.contains("refused a redirect from https to plain http"), "{e}");
    assert!(other.captured().is_empty());
}

/// A server whose samples are stamped ten years ahead of the time asked for: no figure from it.
#[tokio::test]
async fn a_sample_from_the_future_is_not_taken_as_fresh() {
    use scrape::prometheus::Server;
    let ahead = scrape::remote::unix_now() + 10.0 * 365.25 * 86_400.0;
    // Every query answers the same vector: the value and `timestamp()` both read as `ahead`.
    let json = format!(
        r#"{{"status":"success","data":{{"resultType":"vector","result":[{{"metric":{{}},"value":[1,"{ahead}"]}}]}}}}"#
    );
    let server = TestServer::start(Behaviour { body: json.into(), ..Default::default() }).await;
    let p = Server { url: server.url(""), auth: None, interval: None, interval_checked: false };
    let selector = Selector::parse("process_cpu_seconds_total").unwrap();
    let e = p.counters(&selector, &Default::default()).await.unwrap_err();
    assert!(e.contains("after the time asked for: not an answer to trust"), "{e}");
    let e = p.sum(&selector, None, &Default::default()).await.unwrap_err();
    assert!(e.contains("after the time asked for"), "{e}");
}
