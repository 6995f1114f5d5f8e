//! `--live`: the live view of a running attack, read as Prometheus (checked with promtool), as
//! JSON, as server-sent events and as a dashboard in headless Chromium.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{chromium, loadlab, tempdir};
use attack::testing::{Behaviour, TestServer};

/// Starts an attack with `--live 127.0.0.1:0`; returns it and the live view's address.
fn attack_live(args: &[&str], out: &Path) -> (Child, String) {
    let mut child = loadlab()
        .args(["attack", "--name", "watched", "--live", "127.0.0.1:0", "-o"])
        .arg(out)
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("loadlab: live view on http://").and_then(|a| a.strip_suffix('/'));
    let addr = addr.unwrap_or_else(|| panic!("{line:?}")).to_owned();
    (child, addr)
}

/// GET `path`: the status code and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), body.to_owned())
}

/// The value of a Prometheus sample line starting with `prefix`, summed over matching lines.
fn sample(metrics: &str, prefix: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// Metrics once the run has counted more than `n` requests (polled, at most 30 s).
fn metrics_past(addr: &str, n: f64) -> String {
    let started = Instant::now();
    loop {
        let (status, m) = get(addr, "/metrics");
        assert_eq!(status, 200);
        if sample(&m, "loadlab_requests_total{") > n {
            return m;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never past {n} requests: {m}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts that promtool accepts `text` as Prometheus metrics.
fn promtool_check(text: &str) {
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is needed for this test (scripts/test-all installs Debian's prometheus)");
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = promtool.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Polls /metrics until the run is done (bounded); returns the last text.
fn metrics_when_done(addr: &str) -> String {
    let started = Instant::now();
    loop {
        let m = get(addr, "/metrics").1;
        if sample(&m, "loadlab_run_done{") == 1.0 {
            return m;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the run did not end: {m}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn report_json(file: &Path) -> serde_json::Value {
    let o: Output = loadlab().args(["report", "--type", "json"]).arg(file).output().unwrap();
    assert!(o.status.success());
    serde_json::from_slice(&o.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_pass_promtool_and_end_equal_to_the_results_file() {
    let ok = TestServer::start(Behaviour { delay: Duration::from_millis(5), ..Default::default() }).await;
    let failing = TestServer::start(Behaviour { status: 503, ..Default::default() }).await;
    let dir = tempdir("metrics");
    let file = dir.join("run.llr");
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET {}\n\nGET {}\n", ok.url("/a"), failing.url("/b"))).unwrap();
    let (f, t) = (file.clone(), targets.clone());
    let (metrics_mid, metrics_end, child) = tokio::task::spawn_blocking(move || {
        let args = ["--rate", "200", "--duration", "2s", "--live-linger", "20s", "--targets", t.to_str().unwrap()];
        let (child, addr) = attack_live(&args, &f);
        let mid = metrics_past(&addr, 50.0);
        (mid, metrics_when_done(&addr), child)
    })
    .await
    .unwrap();
    let mut child = child;
    for text in [&metrics_mid, &metrics_end] {
        promtool_check(text);
    }
    let mid_requests = sample(&metrics_mid, "loadlab_requests_total{");
    assert!(mid_requests > 50.0 && mid_requests < 400.0, "mid-run: {mid_requests}");
    // Lingering: the run is over and the file complete; the counters equal its totals.
    child.kill().unwrap();
    child.wait().unwrap();
    let r = report_json(&file);
    let m = &metrics_end;
    assert_eq!(sample(m, "loadlab_requests_total{") as u64, r["requests"].as_u64().unwrap());
    assert_eq!(sample(m, "loadlab_request_duration_seconds_count{") as u64, r["requests"].as_u64().unwrap());
    let code = |c: &str| r["status_codes"][c].as_u64().unwrap_or(0);
    assert_eq!(
        sample(
            m,
            &format!("loadlab_requests_total{{run=\"watched\",target=\"GET {}\",status=\"503\"}}", failing.url("/b"))
        ) as u64,
        code("503")
    );
    assert_eq!(sample(m, "loadlab_requests_total{run=\"watched\",target=\"GET ") as u64, code("200") + code("503"));
    assert_eq!(sample(m, "loadlab_response_body_bytes_total{") as u64, r["bytes_in"]["total"].as_u64().unwrap());
    assert_eq!(sample(m, "loadlab_connections_opened_total{") as u64, r["connections"].as_u64().unwrap());
    assert_eq!(sample(m, "loadlab_requests_in_flight{"), 0.0);
    assert_eq!(sample(m, "loadlab_asked_rate_requests_per_second{"), 200.0);
    let sum = sample(m, "loadlab_request_duration_seconds_sum{");
    let total_ns = r["latencies"]["total"].as_f64().unwrap();
    assert!((sum - total_ns / 1e9).abs() < 1e-3, "{sum} vs {}", total_ns / 1e9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http3_attack_is_watched_as_any_other() {
    // The live view reads records, whatever carried them: over HTTP/3 its counters end equal to
    // the results file, which names the protocol.
    let server =
        TestServer::start_h3(Behaviour { body: bytes::Bytes::from_static(b"hello"), ..Default::default() }).await;
    let dir = tempdir("live-h3");
    let file = dir.join("run.llr");
    let (f, url) = (file.clone(), server.url("/"));
    let (metrics, child) = tokio::task::spawn_blocking(move || {
        let args = [url.as_str(), "--http3", "--insecure", "--rate", "100", "--duration", "1s", "--live-linger", "20s"];
        let (child, addr) = attack_live(&args, &f);
        let (status, snapshot) = get(&addr, "/api/snapshot");
        assert_eq!(status, 200, "{snapshot}");
        (metrics_when_done(&addr), child)
    })
    .await
    .unwrap();
    let mut child = child;
    child.kill().unwrap();
    child.wait().unwrap();
    promtool_check(&metrics);
    let r = report_json(&file);
    assert_eq!(r["requests"].as_u64(), Some(100));
    assert_eq!(r["status_codes"]["200"].as_u64(), Some(100));
    assert_eq!(sample(&metrics, "loadlab_requests_total{") as u64, 100);
    assert_eq!(sample(&metrics, "loadlab_response_body_bytes_total{") as u64, 500);
    assert_eq!(sample(&metrics, "loadlab_connections_opened_total{") as u64, r["connections"].as_u64().unwrap());
    let mut reader = results::Reader::new(std::fs::File::open(&file).unwrap(), "run");
    let protocol = loop {
        match reader.next().unwrap() {
            Some(results::Item::Run(h)) => break h.run_plan.as_ref().map(|p| p.protocol.clone()),
            Some(_) => {}
            None => break None,
        }
    };
    assert_eq!(protocol.as_deref(), Some("h3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shards_metrics_carry_its_shard_label() {
    // Pods of a sharded attack share a run name: the shard label keeps their series apart.
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("shard");
    let file = dir.join("run.llr");
    let url = server.url("/");
    let metrics = tokio::task::spawn_blocking(move || {
        let args = [url.as_str(), "--shard", "1/2", "--rate", "200", "--duration", "1s", "--live-linger", "20s"];
        let (mut child, addr) = attack_live(&args, &file);
        let m = metrics_when_done(&addr);
        child.kill().unwrap();
        child.wait().unwrap();
        m
    })
    .await
    .unwrap();
    promtool_check(&metrics);
    let samples: Vec<&str> = metrics.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    assert!(samples.len() > 20, "{metrics}");
    for line in samples {
        assert!(line.contains("{run=\"watched\",shard=\"1/2\""), "{line}");
    }
    // The shard's half of the 200 hits.
    assert_eq!(sample(&metrics, "loadlab_requests_total{"), 100.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_stream_a_snapshot_every_second() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("events");
    let (url, file) = (server.url("/"), dir.join("run.llr"));
    let events = tokio::task::spawn_blocking(move || {
        let (mut child, addr) = attack_live(&[&url, "--rate", "100", "--duration", "4s"], &file);
        let mut s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET /events HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
        let mut reader = BufReader::new(s);
        let mut head = String::new();
        while reader.read_line(&mut head).unwrap() > 2 && !head.ends_with("\r\n\r\n") {}
        assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
        let mut events = Vec::new();
        let mut line = String::new();
        while events.len() < 3 {
            line.clear();
            reader.read_line(&mut line).unwrap();
            // Chunk sizes and blank lines between events.
            if let Some(data) = line.trim_end().strip_prefix("data: ") {
                events.push(serde_json::from_str::<serde_json::Value>(data).unwrap());
            }
        }
        child.wait().unwrap();
        events
    })
    .await
    .unwrap();
    let counts: Vec<u64> = events.iter().map(|e| e["runs"][0]["requests"].as_u64().unwrap_or(0)).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]) && counts[2] > counts[0], "{counts:?}");
    assert_eq!(events[2]["runs"][0]["name"], "watched");
    assert!(events[2]["charts"]["runs"][0]["seconds"].as_array().is_some_and(|s| !s.is_empty()));
}

#[test]
fn live_refuses_a_public_address_unless_asked_and_needs_live_for_its_options() {
    let o = loadlab()
        .args([
            "attack",
            "http://127.0.0.1:1/",
            "--rate",
            "1",
            "--duration",
            "1s",
            "--live",
            "0.0.0.0:0",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--live 0.0.0.0:0: not a loopback address (add --live-public"), "{err}");
    let o =
        loadlab().args(["attack", "http://127.0.0.1:1/", "--live-linger", "1s", "-o", "/dev/null"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_draws_the_running_attack_in_chromium() {
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(3), ..Default::default() }).await;
    let dir = tempdir("dashboard");
    let (url, file) = (server.url("/"), dir.join("run.llr"));
    let dom = tokio::task::spawn_blocking(move || {
        let (mut child, addr) = attack_live(&[&url, "--rate", "200", "--duration", "8s"], &file);
        metrics_past(&addr, 100.0);
        let page = format!("http://{addr}/");
        let o = chromium(&["--virtual-time-budget=4000", "--dump-dom", &page], &dir.join("profile"));
        let _ = child.kill();
        child.wait().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    })
    .await
    .unwrap();
    let body = dom.split("<body").nth(1).unwrap_or_default();
    let attr = |name: &str| {
        body.split(&format!("{name}=\"")).nth(1).and_then(|s| s.split('"').next()).unwrap_or_default().to_owned()
    };
    assert!(attr("data-errors").is_empty(), "script errors: {}", attr("data-errors"));
    assert_eq!(attr("data-drawn"), "4", "{}", &dom[..dom.len().min(600)]);
    let updates: u32 = attr("data-updates").parse().unwrap_or(0);
    assert!(updates >= 2, "{updates} updates: {}", &dom[..dom.len().min(600)]);
    assert!(dom.contains("watched (running)") && dom.contains("req/s of 200"), "{}", &dom[..dom.len().min(2000)]);
}

/// Resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 =
        status.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minute_watched_keeps_its_memory_flat() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("rss");
    let (url, file) = (server.url("/"), dir.join("run.llr"));
    let samples = tokio::task::spawn_blocking(move || {
        let (mut child, addr) = attack_live(&[&url, "--rate", "1000", "--duration", "60s"], &file);
        let mut samples = Vec::new();
        for _ in 0..11 {
            std::thread::sleep(Duration::from_secs(5));
            // What a dashboard asks for, as it would.
            assert_eq!(get(&addr, "/api/snapshot").0, 200);
            assert_eq!(get(&addr, "/metrics").0, 200);
            samples.push(rss(child.id()));
        }
        eprintln!("RSS every 5 s: {samples:?}");
        child.wait().unwrap();
        samples
    })
    .await
    .unwrap();
    // From the 10th second to the 55th: 45,000 more requests, no more memory to speak of.
    let (early, late) = (samples[1], samples[10]);
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    assert!(
        late < early + (16 << 20),
        "RSS grew from {:.1} MB to {:.1} MB: {:?}",
        mb(early),
        mb(late),
        samples.iter().map(|b| mb(*b) as u64).collect::<Vec<_>>()
    );
}

#[test]
fn a_lab_shows_its_steps_and_their_verdicts_as_they_complete() {
    let d = tempdir("lab");
    std::fs::write(d.join("fast.json"), r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200}]}"#)
        .unwrap();
    let plan = "name = \"watched lab\"\n[targets.sim]\norigin = \"fast.json\"\n[load]\nrate = [50, 100]\nduration = \"2s\"\npause = \"0s\"\n[slo]\nsuccess = \">= 99%\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let mut child = loadlab()
        .args(["lab", "run"])
        .arg(d.join("plan.toml"))
        .arg("--out")
        .arg(d.join("out"))
        .args(["--live", "127.0.0.1:0", "--live-linger", "20s"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // The plan's preview comes first, then the live view's address.
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("loadlab: 2 steps (1 target x 2 load points"), "{line:?}");
    line.clear();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("loadlab: live view on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    // Step by step: one done and the other not yet, then both done with their verdicts.
    let started = Instant::now();
    let mut seen_partial = false;
    let snap = loop {
        let s: serde_json::Value = serde_json::from_str(&get(&addr, "/api/snapshot").1).unwrap();
        let states: Vec<&str> = s["steps"].as_array().unwrap().iter().map(|x| x["state"].as_str().unwrap()).collect();
        seen_partial |= states.contains(&"done") && !states.iter().all(|x| *x == "done");
        if states.len() == 2 && states.iter().all(|x| *x == "done") {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{s}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(seen_partial, "the first step was shown done before the second");
    assert_eq!(snap["title"], "watched lab");
    let steps = snap["steps"].as_array().unwrap();
    for s in steps {
        let v = s["verdict"].as_str().unwrap();
        assert!(v.contains("req/s, p99") && v.ends_with("SLO held"), "{v}");
    }
    let runs = snap["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["name"], steps[0]["name"]);
    assert!(runs.iter().all(|r| r["requests"].as_u64().unwrap() >= 90), "{runs:?}");
    let metrics = get(&addr, "/metrics").1;
    let first = steps[0]["name"].as_str().unwrap();
    assert!(sample(&metrics, &format!("loadlab_requests_total{{run=\"{first}\"")) >= 90.0, "{metrics}");
    let _ = child.kill();
    child.wait().unwrap();
}

/// The status line a connection was answered with, if any within `wait`.
fn status_line(s: &mut TcpStream, wait: Duration) -> String {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_owned(),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            "no answer".into()
        }
        Err(_) => String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_holding_the_live_port_cannot_starve_the_attack() {
    // 1,000 idle connections to the live port of an attack allowed 160 file descriptors: the
    // live view holds a few (the rest are told 503 and closed), drops the idle ones after its
    // head timeout, and the attack's connections never lack a descriptor.
    let (soft, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    assert!(hard >= 1200, "this test opens 1,000 connections: the hard descriptor limit is {hard}");
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, soft.max(1200), hard).unwrap();
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(100), ..Default::default() }).await;
    let dir = tempdir("strangers");
    let (url, file) = (server.url("/"), dir.join("run.llr"));
    let f = file.clone();
    let (refused, later) = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("sh")
            .args(["-c", "ulimit -n 160 && exec \"$@\"", "sh", env!("CARGO_BIN_EXE_loadlab")])
            .args(["attack", &url, "--rate", "200", "--duration", "3s", "--live", "127.0.0.1:0"])
            .args(["--live-linger", "30s", "-o", f.to_str().unwrap()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("loadlab: live view on http://").unwrap().trim_end_matches('/').to_owned();
        let mut strangers: Vec<TcpStream> = (0..1000).map(|_| TcpStream::connect(&addr).unwrap()).collect();
        // Every stranger is told 503 when the view reaches it, or (reached after held ones timed
        // out) held and closed after the head timeout: none is left hanging.
        let refused = strangers.iter_mut().map(|s| status_line(s, Duration::from_secs(20))).collect::<Vec<_>>();
        // The idle ones are dropped after the head timeout: the view answers again, though all
        // 1,000 are still open on this side.
        let started = Instant::now();
        let later = loop {
            let mut s = TcpStream::connect(&addr).unwrap();
            write!(s, "GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
            let status = status_line(&mut s, Duration::from_secs(1));
            if status.starts_with("HTTP/1.1 200") || started.elapsed() > Duration::from_secs(20) {
                break status;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        drop(strangers);
        child.kill().unwrap();
        child.wait().unwrap();
        (refused, later)
    })
    .await
    .unwrap();
    let told = refused.iter().filter(|s| *s == "HTTP/1.1 503 Service Unavailable").count();
    assert!(told >= 500 && refused.iter().all(|s| s.is_empty() || s.contains("503")), "{told} told 503: {refused:?}");
    assert_eq!(later, "HTTP/1.1 200 OK");
    let r = report_json(&file);
    assert_eq!(r["requests"], 600, "{r}");
    assert_eq!(r["success"], 1.0, "{:?}", r["errors"]);
}
