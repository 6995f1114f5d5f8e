//! What a vegeta user meets in the first hour: their command lines, their tools after ours, and
//! the errors of a newcomer.

use std::process::Stdio;
use std::time::Duration;

use attack::testing::{Behaviour, TestServer};
use bytes::Bytes;

use crate::cli::{blocking, report_json};
use crate::support::{loadlab, stderr, stdout, tempdir};

#[test]
fn a_boolean_given_as_a_word_of_its_own_is_refused_with_what_vegeta_would_do() {
    // Write-up 000's command as pasted: vegeta reads it as -http2=true and drops the rest.
    let o = loadlab()
        .args(["attack", "-duration=1s", "-rate=1", "-http2", "false", "-max-body=0", "-timeout=30s"])
        .arg("http://127.0.0.1:1/")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "loadlab: -http2 false: give booleans as -http2=false; vegeta reads this line as -http2=true and \
         ignores every flag after 'false'\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_body_0_keeps_connections_alive_as_vegeta_does() {
    // 100 KiB bodies, headers counted only: the rest is read and dropped, and the connections
    // are reused (a connection per request made 420,000 of them in a 600 s run).
    let server = TestServer::start(Behaviour { body: Bytes::from(vec![b'x'; 100_000]), ..Default::default() }).await;
    let url = server.url("/");
    let dir = tempdir("maxbody");
    let file = dir.join("run.llr");
    let f = file.clone();
    let o = blocking(move || {
        loadlab()
            .args(["attack", &url, "-rate=50", "-duration=2s", "-max-body=0", "-http2=false", "-o"])
            .arg(&f)
            .output()
    })
    .await
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = report_json(&[&file]);
    assert_eq!(v["requests"], 100, "{v}");
    assert_eq!(v["bytes_in"]["total"], 0, "{v}");
    // The open model starts 10 workers, each with its connection when first used.
    assert!(server.connections() <= 10, "{} connections for 100 requests", server.connections());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vegetas_own_tools_read_what_attack_writes() {
    // vegeta is built by scripts/test-all (as by ../shared's install script): this test needs it.
    let server = TestServer::start(Behaviour::default()).await;
    let url = server.url("/");
    let text = blocking(move || {
        let mut attack = loadlab()
            .args(["attack", &url, "--rate", "40", "--duration", "1s", "--output-format", "vegeta-json"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let report = std::process::Command::new("vegeta")
            .args(["report", "-type", "json"])
            .stdin(attack.stdout.take().unwrap())
            .output()
            .expect("vegeta is needed for this test (scripts/test-all builds it)");
        assert!(attack.wait().unwrap().success());
        assert!(report.status.success(), "{}", stderr(&report));
        stdout(&report)
    })
    .await;
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["requests"], 40, "{v}");
    assert_eq!(v["success"], 1.0, "{v}");
    assert_eq!(v["status_codes"]["200"], 40, "{v}");
}

#[test]
fn usage_errors_name_what_is_missing_and_suggest_the_nearest() {
    for (args, want) in [
        (&["lab", "run"][..], "loadlab: missing <PLAN> (see --help)\n"),
        (&["plot", "x.llr"], "loadlab: missing --output <OUTPUT> (see --help)\n"),
        (&["completions"], "loadlab: missing <SHELL> (see --help)\n"),
        (&["attak"], "loadlab: unknown subcommand 'attak'; did you mean 'attack'? (see --help)\n"),
    ] {
        let o = loadlab().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&o), want, "{args:?}");
    }
    // A value's syntax reads as a syntax.
    let help = stdout(&loadlab().args(["report", "--help"]).output().unwrap());
    assert!(help.contains("hist[EDGES]") && !help.contains("possible values: text"), "{help}");
}

#[test]
fn man_writes_a_page_per_subcommand_that_man_reads() {
    let dir = tempdir("man");
    let o = loadlab().args(["man", "--dir"]).arg(dir.join("man1")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for page in ["loadlab", "loadlab-attack", "loadlab-lab-run", "loadlab-lab-compare", "loadlab-report"] {
        assert!(dir.join(format!("man1/{page}.1")).exists(), "{page}");
    }
    let o = std::process::Command::new("man")
        .env("MANPATH", &dir)
        .args(["-P", "cat", "loadlab-attack"])
        .output()
        .expect("man (Debian's man-db) is needed for this test");
    let page = stdout(&o);
    assert!(page.contains("loadlab-attack") && page.contains("--rate"), "{page}{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_closed_early_ends_quietly() {
    let server = TestServer::start(Behaviour::default()).await;
    let url = server.url("/");
    let dir = tempdir("pipe");
    let file = dir.join("run.llr");
    let f = file.clone();
    blocking(move || {
        let o = loadlab().args(["attack", &url, "--rate", "500", "--duration", "2s", "-o"]).arg(&f).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    })
    .await;
    for args in [&["encode", "--to", "json"][..], &["encode", "--to", "csv"], &["report", "--type", "json"]] {
        // `| head -c 10`: the reader takes a few bytes and goes.
        let mut child = loadlab().args(args).arg(&file).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut few = [0u8; 10];
        std::io::Read::read_exact(&mut out, &mut few).unwrap();
        drop(out);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}
