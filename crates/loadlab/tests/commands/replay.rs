//! `attack --replay` as a user runs it: a log on disk, a server, the report.

use attack::testing::{Behaviour, TestServer};

use crate::cli::blocking;
use crate::support::{loadlab, stderr, stdout, tempdir};

/// 30 requests over 3 s (whole seconds), two lines that are not requests (lines 5 and 17).
fn access_log() -> String {
    let mut text = String::new();
    for i in 0..30 {
        if i == 4 {
            text += "not a log line\n";
        }
        if i == 15 {
            text += "10.0.0.9 - - [24/Nov/2026:09:00:01 +0000] \"-\" 400 0 \"-\" \"-\"\n";
        }
        text += &format!(
            "10.0.0.{i} - - [24/Nov/2026:09:00:{:02} +0000] \"GET /item/{i}?v=1 HTTP/1.1\" 200 9 \"-\" \"curl/8\"\n",
            i / 10
        );
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_replays_to_the_base_url_and_the_report_names_it() {
    let server = TestServer::start(Behaviour::default()).await;
    let d = tempdir("replay");
    std::fs::write(d.join("access.log"), access_log()).unwrap();
    let base = server.url("/shop");
    let (o, report, again) = blocking(move || {
        let out = d.join("out.llr");
        let o = loadlab()
            .args(["attack", "--replay"])
            .arg(d.join("access.log"))
            .args(["--base-url", &base, "--speed", "2", "-H", "replayed-traffic: true", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let report = loadlab().arg("report").arg(&out).output().unwrap();
        // The run replays in turn: each record's target (a replay names it by path) at its time.
        let again = loadlab()
            .args(["attack", "--replay"])
            .arg(&out)
            .args(["--base-url", &base, "--speed", "4", "-o", "/dev/null"])
            .output()
            .unwrap();
        (o, report, again)
    })
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("replayed 30 requests from 32 lines of access log, 2 skipped"), "{err}");
    assert!(err.contains("line 5: no [time] field: not a log line"), "{err}");
    assert!(err.contains("line 17: request is not METHOD PATH"), "{err}");
    let text = stdout(&report);
    assert!(text.contains("Replay        [source, speed]                   access.log at 2x"), "{text}");
    assert!(text.starts_with("Requests      [total, rate, throughput]         30, "), "{text}");
    let got = server.captured();
    assert_eq!(got.len(), 60);
    assert!(stderr(&again).contains("replayed 30 requests from 30 records of loadlab results, 0 skipped"));
    let (got, replayed_again) = got.split_at(30);
    let mut paths: Vec<String> = replayed_again.iter().map(|c| c.path.clone()).collect();
    paths.sort();
    let mut want: Vec<String> = (0..30).map(|i| format!("/shop/item/{i}")).collect();
    want.sort();
    assert_eq!(paths, want, "a replay's results name each request by its path, without the query");
    let mut paths: Vec<String> = got.iter().map(|c| c.path.clone()).collect();
    paths.sort();
    let mut want: Vec<String> = (0..30).map(|i| format!("/shop/item/{i}?v=1")).collect();
    want.sort();
    assert_eq!(paths, want);
    assert!(got.iter().all(|c| c.headers["replayed-traffic"] == "true"));
}

#[test]
fn strict_stops_at_the_first_bad_line_and_bad_settings_are_refused() {
    let d = tempdir("replay-strict");
    std::fs::write(d.join("access.log"), access_log()).unwrap();
    let log = d.join("access.log");
    // Nothing listens on port 9: --strict fails on line 5 before anything is sent.
    let o = loadlab()
        .args(["attack", "--replay"])
        .arg(&log)
        .args(["--base-url", "http://127.0.0.1:9/", "--strict", "-o", "/dev/null", "--timeout", "1s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("access.log:5: no [time] field: not a log line"), "{}", stderr(&o));
    for (args, want) in [
        (vec!["--replay", "missing.log", "--base-url", "http://127.0.0.1:9/"], "--replay missing.log: No such file"),
        (vec!["--replay", "x.log"], "--base-url"),
        (vec!["--replay", "x.log", "--base-url", "ftp://x/"], "--base-url: bad URL"),
        (vec!["--replay", "x.log", "--base-url", "http://127.0.0.1:9/", "--speed", "0"], "--speed 0: must be above 0"),
        (vec!["--replay", "x.log", "--base-url", "http://127.0.0.1:9/", "--rate", "5"], "cannot be used with"),
    ] {
        let o = loadlab().current_dir(&d).arg("attack").args(&args).args(["-o", "/dev/null"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
}
