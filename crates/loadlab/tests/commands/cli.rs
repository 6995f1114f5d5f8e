//! The binary end to end: subprocesses against the in-process test server on loopback.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::{free_port, loadlab, stderr, stdout, tempdir, until_received};
use attack::testing::{Behaviour, TestServer};

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run loadlab")
}

pub(crate) fn report_json(files: &[&Path]) -> serde_json::Value {
    let o = run(loadlab().arg("report").arg("--type").arg("json").args(files));
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Runs the blocking subprocess work while the test server keeps serving.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_pipes_into_report() {
    let server = TestServer::start(Behaviour::default()).await;
    let target = format!("GET {}\n", server.url("/news"));
    let text = blocking(move || {
        let mut attack = loadlab()
            .args(["attack", "--rate", "200", "--duration", "1s", "-H", "replayed-traffic: true"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        attack.stdin.take().unwrap().write_all(target.as_bytes()).unwrap();
        let report = loadlab().arg("report").stdin(attack.stdout.take().unwrap()).output().unwrap();
        assert!(attack.wait().unwrap().success());
        assert!(report.status.success(), "{}", stderr(&report));
        stdout(&report)
    })
    .await;
    assert!(text.starts_with("Requests      [total, rate, throughput]         200, 2"), "{text}");
    assert!(text.contains("Status Codes  [code:count]                      200:200  \nError Set:\n"), "{text}");
    let got = server.captured();
    assert_eq!(got.len(), 200);
    assert!(got.iter().all(|c| c.path == "/news" && c.headers["replayed-traffic"] == "true"));
}

/// Runs `run` with stderr on a pseudo-terminal; returns its status and what the terminal showed.
fn stderr_on_pty(run: impl FnOnce(Stdio) -> std::process::ExitStatus) -> (std::process::ExitStatus, String) {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        // Ends with EIO once the child (the last holder of the slave side) exits.
        let _ = std::io::Read::read_to_end(&mut master, &mut seen);
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = run(Stdio::from(pty.slave));
    (status, reader.join().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_line_is_drawn_on_a_terminal_and_only_there() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("progress");
    let url = server.url("/");
    let (on_tty, piped) = blocking(move || {
        let attack = |stderr: Stdio, out: &str| {
            loadlab()
                .args(["attack", &url, "--rate", "100", "--duration", "2500ms", "--output"])
                .arg(dir.join(out))
                .stderr(stderr)
                .status()
                .unwrap()
        };
        // stderr on a pseudo-terminal: what a user at a shell sees.
        let (status, on_tty) = stderr_on_pty(|stderr| attack(stderr, "tty.llr"));
        assert!(status.success());
        let piped = loadlab()
            .args(["attack", &url, "--rate", "100", "--duration", "1500ms", "--output"])
            .arg(dir.join("piped.llr"))
            .output()
            .unwrap();
        assert!(piped.status.success());
        (on_tty, stderr(&piped))
    })
    .await;
    // Redrawn in place about once a second, with the rate, in-flight count, p99 and errors.
    let draws: Vec<&str> = on_tty.split('\r').filter(|l| l.contains("req/s")).collect();
    assert!(draws.len() >= 2, "{on_tty:?}");
    let last = draws.last().unwrap();
    assert!(last.contains("in flight") && last.contains("p99") && last.contains("errors 0"), "{last:?}");
    let rate: f64 = last.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!((50.0..=150.0).contains(&rate), "{last:?}");
    assert!(on_tty.ends_with('\n'), "the line is finished when the attack ends: {on_tty:?}");
    assert!(piped.is_empty(), "no progress line into a pipe: {piped:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_leaves_a_readable_file_missing_at_most_the_last_second() {
    let server = std::sync::Arc::new(TestServer::start(Behaviour::default()).await);
    let dir = tempdir("kill");
    let file = dir.join("run.llr");
    let (url, f, s) = (server.url("/"), file.clone(), server.clone());
    let (killed_at, requests, warnings) = blocking(move || {
        let mut child = loadlab()
            .args(["attack", &url, "--rate", "1000", "--duration", "60s", "-o"])
            .arg(&f)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed a few seconds into the load, once several one-second blocks are due on disk.
        until_received(&s, 3000, &mut child);
        child.kill().unwrap(); // SIGKILL
        let killed_at = std::time::SystemTime::now();
        child.wait().unwrap();
        let o = run(loadlab().args(["report", "--type", "json"]).arg(&f));
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (killed_at, v["requests"].as_u64().unwrap(), stderr(&o))
    })
    .await;
    assert!(warnings.is_empty() || warnings.contains("truncated block"), "{warnings}");
    // The last response the file holds ended less than a second before the kill.
    let mut reader = results::Reader::new(std::fs::File::open(&file).unwrap(), "run.llr");
    let (mut start_ns, mut last_end_us) = (0u64, 0u64);
    while let Some(item) = reader.next().unwrap() {
        match item {
            results::Item::Run(h) => start_ns = h.start_unix_ns,
            results::Item::Record(r) => last_end_us = last_end_us.max(r.scheduled_us + r.latency_us),
            results::Item::End(_) => panic!("a killed attack has no end marker"),
        }
    }
    let last_end = std::time::UNIX_EPOCH + Duration::from_nanos(start_ns) + Duration::from_micros(last_end_us);
    let lost = killed_at.duration_since(last_end).unwrap();
    assert!(lost < Duration::from_secs(1), "lost the last {lost:?} ({requests} requests kept)");
    assert!(requests > 1000, "{requests} requests kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_closes_cleanly() {
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(300), ..Default::default() }).await;
    let dir = tempdir("term");
    let file = dir.join("run.llr");
    let (url, f) = (server.url("/"), file.clone());
    let child = loadlab()
        .args(["attack", &url, "--rate", "50", "--duration", "60s", "-o"])
        .arg(&f)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Sending, with requests in flight: then the signal.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.received() < 20 {
        assert!(std::time::Instant::now() < deadline, "the attack never sent 20 requests");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let (status, v, err) = blocking(move || {
        let out = child.wait_with_output().unwrap();
        let o = run(loadlab().args(["report", "--type", "json"]).arg(&f));
        assert!(stderr(&o).is_empty(), "damaged file: {}", stderr(&o));
        (out.status, serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap(), stderr(&out))
    })
    .await;
    // Stopped by SIGTERM: 143, as every command says it, with a whole file.
    assert_eq!(status.code(), Some(143), "{err}");
    // Requests in flight at the signal (300 ms each) were waited for, not cut off.
    assert_eq!(v["success"], 1.0, "{v}");
    assert!(v["requests"].as_u64().unwrap() >= 20, "{v}");
}

#[test]
fn bad_input_is_one_line_naming_the_place_and_exits_2() {
    let dir = tempdir("bad");
    let junk = dir.join("junk.llr");
    std::fs::write(&junk, "GET http://127.0.0.1/\n").unwrap();
    let o = run(loadlab().arg("report").arg(&junk));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), format!("loadlab: {}: not a loadlab results file (bad magic at byte 0)\n", junk.display()));

    let targets = dir.join("targets.txt");
    std::fs::write(&targets, "GET http://127.0.0.1:1/\nX-Ok: 1\nbroken header line\n").unwrap();
    let o = run(loadlab().args(["attack", "--rate", "1", "--duration", "1s", "--targets"]).arg(&targets));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.starts_with(&format!("loadlab: {}:3: expected a header", targets.display())), "{err}");
    assert_eq!(err.lines().count(), 1);

    for (args, want) in [
        (&["report", "--type", "pie"][..], "--type: unknown report type \"pie\""),
        (&["attack", "http://127.0.0.1:1/", "--rate", "fast", "--duration", "1s"], "--rate: bad rate \"fast\""),
        (&["attack", "http://127.0.0.1:1/", "--rate", "10"], "--rate needs --duration"),
        (
            &["attack", "http://127.0.0.1:1/", "--connections", "2", "--streams", "4", "--requests", "1"],
            "--streams above 1 needs HTTP/2",
        ),
        (&["encode", "--to", "xml", "-"], "--to: unknown format \"xml\""),
        (
            &["attack", "http://127.0.0.1:1/", "--connections", "2", "--requests", "1", "--pace-tick", "1ms"],
            "--pace-tick paces an open model",
        ),
        (
            &["attack", "http://127.0.0.1:1/", "-rate", "1", "-duration", "1s", "-pace-tick", "2s"],
            "--pace-tick must be at most",
        ),
    ] {
        let o = run(loadlab().args(args).stdin(Stdio::null()));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
    // clap's own usage errors exit 2 too.
    assert_eq!(run(loadlab().args(["attack", "--no-such-flag"])).status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_merge_files_and_concatenations() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("merge");
    let (a, b) = (dir.join("a.llr"), dir.join("b.llr"));
    let url = server.url("/");
    let (a2, b2) = (a.clone(), b.clone());
    blocking(move || {
        for (f, n) in [(&a2, "100"), (&b2, "50")] {
            let o = run(loadlab().args(["attack", &url, "--connections", "2", "--requests", n, "-o"]).arg(f));
            assert!(o.status.success(), "{}", stderr(&o));
        }
    })
    .await;
    assert_eq!(report_json(&[&a, &b])["requests"], 150);
    let cat = dir.join("cat.llr");
    let mut bytes = std::fs::read(&a).unwrap();
    bytes.extend(std::fs::read(&b).unwrap());
    std::fs::write(&cat, bytes).unwrap();
    assert_eq!(report_json(&[&cat])["requests"], 150);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encode_round_trips_through_vegeta_formats() {
    let server = TestServer::start(Behaviour { status: 503, ..Default::default() }).await;
    let dir = tempdir("encode");
    let llr = dir.join("run.llr");
    let (url, f) = (server.url("/x"), llr.clone());
    blocking(move || {
        let o = run(loadlab().args(["attack", &url, "--connections", "1", "--requests", "20", "-o"]).arg(&f));
        assert!(o.status.success(), "{}", stderr(&o));
    })
    .await;
    let json = run(loadlab().args(["encode", "--to", "json"]).arg(&llr));
    assert!(json.status.success());
    let first: serde_json::Value = serde_json::from_str(stdout(&json).lines().next().unwrap()).unwrap();
    assert_eq!(first["code"], 503);
    assert_eq!(first["error"], "503 Service Unavailable");
    assert_eq!(first["url"], server.url("/x"));
    for (to, from) in [("json", "vegeta-json"), ("csv", "csv")] {
        let exported = dir.join(format!("run.{to}"));
        assert!(run(loadlab().args(["encode", "--to", to, "-o"]).arg(&exported).arg(&llr)).status.success());
        let back = dir.join(format!("back-{to}.llr"));
        let o = run(loadlab().args(["encode", "--from", from, "-o"]).arg(&back).arg(&exported));
        assert!(o.status.success(), "{}", stderr(&o));
        let (orig, again) = (report_json(&[&llr]), report_json(&[&back]));
        for field in ["requests", "status_codes", "errors", "bytes_in", "duration"] {
            assert_eq!(orig[field], again[field], "{to}: {field}");
        }
        assert_eq!(orig["latencies"]["99th"], again["latencies"]["99th"], "{to}");
        // What vegeta does not record is unknown, not a number.
        let text = stdout(&run(loadlab().arg("report").arg(&back)));
        assert!(
            text.contains("unknown (not recorded by vegeta)") && !text.contains("[opened]                          0"),
            "{text}"
        );
    }
    // A closed model has no schedule to lag behind: no schedule-lag line.
    let text = stdout(&run(loadlab().arg("report").arg(&llr)));
    assert!(!text.contains("Schedule Lag") && text.contains("Connections   [opened]"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_every_follows_a_growing_file() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("every");
    let file = dir.join("live.llr");
    let (url, f) = (server.url("/"), file.clone());
    let out = blocking(move || {
        let mut attack =
            loadlab().args(["attack", &url, "--rate", "100", "--duration", "2s", "-o"]).arg(&f).spawn().unwrap();
        while !f.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let report = run(loadlab().args(["report", "--every", "500ms"]).arg(&f));
        assert!(attack.wait().unwrap().success());
        assert!(report.status.success(), "{}", stderr(&report));
        stdout(&report)
    })
    .await;
    let reports: Vec<&str> = out.split("Requests      [total, rate, throughput]").skip(1).collect();
    assert!(reports.len() >= 3, "{out}");
    assert!(reports.last().unwrap().trim_start().starts_with("200,"), "{out}");
    let first: u64 = reports[0].trim_start().split(',').next().unwrap().parse().unwrap();
    assert!(first < 200, "the first report came before the run ended: {first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_and_hdr_reports() {
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(20), ..Default::default() }).await;
    let dir = tempdir("hist");
    let file = dir.join("run.llr");
    let (url, f) = (server.url("/"), file.clone());
    blocking(move || {
        assert!(run(loadlab().args(["attack", &url, "--connections", "4", "--requests", "40", "-o"]).arg(&f))
            .status
            .success());
    })
    .await;
    let o = run(loadlab().args(["report", "--type", "hist[0,10ms,1s]"]).arg(&file));
    let text = stdout(&o);
    assert!(text.contains("[10ms,  1s]    40  100.00%"), "{text}");
    let o = run(loadlab().args(["report", "--type", "hdr"]).arg(&file));
    let text = stdout(&o);
    assert!(text.starts_with("       Value     Percentile TotalCount 1/(1-Percentile)\n\n"), "{text}");
    assert!(text.contains("Total count    =           40]"), "{text}");
}

#[test]
fn demo_runs_end_to_end_and_leaves_nothing_running() {
    let dir = tempdir("demo");
    let t = std::time::Instant::now();
    let o = run(loadlab().args(["demo", "--out"]).arg(dir.join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(60));
    let text = stdout(&o);
    assert_eq!(text.matches("Requests      [total, rate, throughput]").count(), 3, "{text}");
    let html = std::fs::read_to_string(dir.join("out").join("report.html")).unwrap();
    assert!(html.contains("demo--r800-http1--1 (4000 requests)"), "the HTML report has every step");
    assert!(std::fs::read_to_string(dir.join("out").join("report.md")).unwrap().contains("## Summary"));
    for (i, rate, n) in [(1, "200", 1000), (2, "400", 2000), (3, "800", 4000)] {
        let file = dir.join("out").join(format!("steps/{i}-demo--r{rate}-http1--1.llr"));
        assert!(text.contains(&file.display().to_string()), "{text}");
        let v = report_json(&[&file]);
        assert_eq!(v["requests"], n);
        assert_eq!(v["success"], 1.0, "{rate}: {v}");
        // The recipe's 100 ms shows in every step's median.
        let p50 = v["latencies"]["50th"].as_u64().unwrap();
        assert!((100_000_000..150_000_000).contains(&p50), "{rate}: p50 {p50}");
    }
}

/// Starts `loadlab origin` with `args` and `env`, waits for its "serving on" line, returns the
/// child and the address it serves on.
pub(crate) fn start_origin(args: &[&str], env: &[(&str, &str)]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child =
        loadlab().arg("origin").args(args).envs(env.iter().copied()).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().rsplit("://").next().unwrap_or_default().to_owned();
    assert!(line.contains("serving on"), "{line}");
    (child, addr)
}

#[test]
fn origin_listens_on_port_or_listen_and_rejects_a_bad_recipe_file() {
    let port = free_port().to_string();
    let (mut child, addr) = start_origin(&[], &[("PORT", &port)]);
    assert_eq!(addr, format!("127.0.0.1:{port}"));
    child.kill().unwrap();
    child.wait().unwrap();

    let other = free_port();
    let (mut child, addr) = start_origin(&["--listen", &format!("127.0.0.1:{other}")], &[("PORT", &port)]);
    assert_eq!(addr, format!("127.0.0.1:{other}"));
    child.kill().unwrap();
    child.wait().unwrap();

    let dir = tempdir("recipe");
    let recipe = dir.join("bad.json");
    std::fs::write(&recipe, r#"{"route": "/x", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "100"}]}"#)
        .unwrap();
    let o = run(loadlab().args(["origin", "--listen", "127.0.0.1:0", "--recipe"]).arg(&recipe));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "loadlab: {}: recipe.stages[0].latency: \"100\" is not a latency (use 0, \"<int>s\", \"10.5ms\" or \"<int>us\")\n",
            recipe.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_serves_a_recipe_file_to_an_attack() {
    let dir = tempdir("origin-attack");
    let recipe = dir.join("r.json");
    std::fs::write(
        &recipe,
        r#"[{"route": "/news", "random_content": "10kb", "stages": [{"at": 0, "status": 200, "latency": "20ms"}]}]"#,
    )
    .unwrap();
    let (mut child, addr) = start_origin(&["--listen", "127.0.0.1:0", "--recipe", recipe.to_str().unwrap()], &[]);
    let url = format!("http://{addr}/news");
    let v = blocking(move || {
        let o = run(loadlab().args(["attack", &url, "--rate", "50", "--duration", "1s"]));
        let file = std::env::temp_dir().join(format!("loadlab-cli-{}-origin.llr", std::process::id()));
        std::fs::write(&file, &o.stdout).unwrap();
        report_json(&[&file])
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(v["requests"], 50);
    assert_eq!(v["success"], 1.0);
    assert_eq!(v["bytes_in"]["mean"], 10240.0);
    assert!(v["latencies"]["50th"].as_u64().unwrap() >= 20_000_000);
}

#[test]
fn typed_flags_refuse_bad_values_in_one_line_naming_the_flag() {
    for (args, want) in [
        (
            &["attack", "http://127.0.0.1:1/", "--rate", "10", "--duration", "10"][..],
            "--duration: bad duration \"10\": missing unit",
        ),
        (&["attack", "http://127.0.0.1:1/", "--rate", "1e300", "--duration", "1s"], "--rate: bad rate \"1e300\""),
        (
            &["attack", "http://127.0.0.1:1/", "--rate", "10", "--duration", "1s", "--timeout", "0s"],
            "--timeout: must be longer than 0",
        ),
        (
            &["attack", "http://127.0.0.1:1/", "--rate", "10", "--h2c", "--http2", "--duration", "1s"],
            "cannot be used with",
        ),
        (&["plot", "x.llr", "-o", "x.svg", "--chart", "pie"], "--chart: unknown chart \"pie\""),
        (&["report", "--every=-1s"], "--every: bad duration \"-1s\": negative"),
    ] {
        let o = run(loadlab().args(args).stdin(Stdio::null()));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    let o = run(loadlab().args(["completions", "bash"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let script = stdout(&o);
    assert!(
        script.contains("_loadlab()") && script.contains("--rate-steps") && script.contains("vegeta-json"),
        "{script}"
    );
    let o = run(loadlab().arg("man"));
    assert!(o.status.success(), "{}", stderr(&o));
    let man = stdout(&o);
    assert!(man.starts_with(".ie") || man.contains(".TH loadlab"), "{man}");
    assert!(man.contains("attack"), "{man}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_generator_recovers_and_keeps_its_connections_bounded() {
    let server = std::sync::Arc::new(TestServer::start(Behaviour::default()).await);
    let dir = tempdir("sigstop");
    let f = dir.join("paused.llr");
    let url = server.url("/");
    let (file, s) = (f.clone(), server.clone());
    blocking(move || {
        let mut child = loadlab()
            .args(["attack", &url, "--rate", "1000", "--duration", "4s", "--max-workers", "200", "-o"])
            .arg(&file)
            .spawn()
            .unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        // Paused once the load flows, for one second: the pause is the stimulus.
        until_received(&s, 500, &mut child);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
        assert!(child.wait().unwrap().success());
    })
    .await;
    let mut reader = results::Reader::new(std::fs::File::open(&f).unwrap(), "paused");
    let mut records = Vec::new();
    while let Some(item) = reader.next().unwrap() {
        if let results::Item::Record(r) = item {
            records.push(r);
        }
    }
    // Every scheduled request was sent (the pause's backlog right after it), none was lost.
    assert_eq!(records.len(), 4000);
    assert!(records.iter().all(|r| r.status == 200));
    // The pause shows as lag for the requests due in it, and the generator is back on time after.
    // (A 1 s pause at 1,000/s: about 500 requests wait half a second or more, however late the
    // child started its schedule.)
    let waited = records.iter().filter(|r| r.lag_us >= 500_000).count();
    assert!(waited >= 300, "requests due in the pause were sent after it: {waited} waited 0.5 s or more");
    let after = records.iter().filter(|r| r.scheduled_us >= 3_000_000).collect::<Vec<_>>();
    let late = after.iter().filter(|r| r.lag_us >= 5_000).count();
    assert!(late * 10 < after.len(), "{late} of {} late in the last second", after.len());
    assert!(server.connections() <= 200, "{} connections", server.connections());
}

#[test]
fn binary_results_are_not_written_to_a_terminal() {
    let pty = nix::pty::openpty(None, None).unwrap();
    let o = loadlab()
        .args(["attack", "http://127.0.0.1:1/", "--rate", "1", "--duration", "1s"])
        .stdout(Stdio::from(pty.slave))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("refusing to write binary results to a terminal"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_progress_bar_says_when_the_target_is_the_limit() {
    let server = TestServer::start(Behaviour { delay: Duration::from_millis(200), ..Default::default() }).await;
    let dir = tempdir("progress-limit");
    let url = server.url("/");
    let seen = blocking(move || {
        let (status, seen) = stderr_on_pty(|stderr| {
            loadlab()
                .args(["attack", &url, "--rate", "100", "--duration", "2500ms", "--max-workers", "2", "--output"])
                .arg(dir.join("limit.llr"))
                .stderr(stderr)
                .status()
                .unwrap()
        });
        assert!(status.success());
        seen
    })
    .await;
    assert!(seen.contains("all 2 workers busy: the target is the limit"), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_by_step_splits_a_rate_steps_run() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = tempdir("by-step");
    let f = dir.join("steps.llr");
    let url = server.url("/");
    let file = f.clone();
    let o =
        blocking(move || run(loadlab().args(["attack", &url, "--rate-steps", "50,100,200@1s", "-o"]).arg(&file))).await;
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(loadlab().args(["report", "--by-step"]).arg(&f));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for (i, (rate, n)) in [(50, 50), (100, 100), (200, 200)].iter().enumerate() {
        let head = format!("== step {}: {rate} req/s [{i}s, {}s)", i + 1, i + 1);
        let block = text.split(&head).nth(1).unwrap_or_else(|| panic!("{head} missing: {text}"));
        assert!(block.contains(&format!("Requests      [total, rate, throughput]         {n}, ")), "{head}: {block}");
    }
    let o = run(loadlab().args(["report", "--by-step", "--type", "json"]).arg(&f));
    let counts: Vec<u64> = stdout(&o)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [50, 100, 200]);
    // The steps come from the header's typed plan, written by the attack itself.
    let mut reader = results::Reader::new(std::fs::File::open(&f).unwrap(), "steps");
    let Some(results::Item::Run(h)) = reader.next().unwrap() else { panic!("no header") };
    let plan = h.plan();
    assert_eq!(h.run_plan.as_ref(), Some(&plan));
    assert_eq!(plan.steps, Some(results::RateStepsPlan { step_us: 1_000_000, rates: vec![50.0, 100.0, 200.0] }));
    assert!(plan.open && plan.rate.is_none() && plan.shard.is_none());
    assert_eq!(plan.protocol, "http1");
    assert!(!h.settings.contains_key("step_s"), "settings are only the flags as given: {:?}", h.settings);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_reports_received_and_decoded_bytes() {
    let body = bytes::Bytes::from("a".repeat(10_000));
    let server = TestServer::start(Behaviour { body, ..Default::default() }).await;
    let dir = tempdir("gzip");
    let url = server.url("/gzip");
    let file = dir.join("gz.llr");
    let f = file.clone();
    let o = blocking(move || {
        run(loadlab().args(["attack", &url, "-compressed", "-connections", "1", "-requests", "4", "-output"]).arg(&f))
    })
    .await;
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&run(loadlab().arg("report").arg(&file)));
    let line = |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_owned();
    assert!(line("Bytes In decoded").ends_with("40000, 10000.00"), "{text}");
    let wire: u64 = line("Bytes In ").split_whitespace().nth(4).unwrap().trim_end_matches(',').parse().unwrap();
    assert!(wire < 1000, "{text}");
    let json = report_json(&[&file]);
    assert_eq!(json["bytes_in_decoded"]["total"], 40000);
    assert_eq!(json["bytes_in"]["total"], wire);
}
