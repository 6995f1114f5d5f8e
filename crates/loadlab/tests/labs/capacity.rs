//! `lab capacity`: a search built from flags, against an origin process on loopback.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use crate::support::{free_port, loadlab, stderr, tempdir};

/// An origin serving 5 at once, 20 ms each (a knee near 250/s), over TLS when given a
/// certificate and key.
fn origin(d: &Path, port: u16, tls: Option<(&Path, &Path)>) -> Child {
    std::fs::write(
        d.join("svc.json"),
        r#"{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200, "latency": "20ms", "concurrency": 5, "queue": 50}]}"#,
    )
    .unwrap();
    let mut cmd = loadlab();
    cmd.args(["origin", "--listen", &format!("127.0.0.1:{port}"), "--recipe"]).arg(d.join("svc.json"));
    if let Some((cert, key)) = tls {
        cmd.arg("--tls-cert").arg(cert).arg("--tls-key").arg(key);
    }
    cmd.stderr(Stdio::null()).spawn().unwrap()
}

fn stop(mut origin: Child) {
    let _ = origin.kill();
    let _ = origin.wait();
}

#[test]
fn lab_capacity_ends_with_its_answer_and_reports_the_search_it_ran() {
    let d = tempdir("capacity");
    let port = free_port();
    let origin = origin(&d, port, None);
    let out = d.join("out");
    let o = loadlab()
        .args(["lab", "capacity", &format!("http://127.0.0.1:{port}/"), "--slo", "p99<100ms,success>=99%"])
        .args(["--start", "100", "--max", "2000", "--precision", "10%", "--probe", "2s", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    stop(origin);
    let err = stderr(&o);
    let last = err.lines().rfind(|l| !l.starts_with("loadlab: wrote")).unwrap();
    // A busy machine may leave a confirmation at the knee unsendable (the origin and the
    // generator fill both CPUs there): "could not tell" (exit 4), still with the rate that held.
    let limited = last.contains("The generator could not send") && last.contains("The boundary is not confirmed.");
    assert!(o.status.code() == Some(0) || (limited && o.status.code() == Some(4)), "{err}");
    assert!(last.starts_with("loadlab: Capacity of target: holds ") && last.contains(" req/s, breaks at "), "{err}");
    assert!(last.contains("(p99 < 100.0ms (measured") || last.contains("(success >= 99.00% (measured"), "{last}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Capacity search: open model over http1"), "{md}");
    assert!(md.contains("probes in"), "{md}");
    for empty in ["0 steps", "held in 0 of 0", "## Results", "## Steps", "connections ;"] {
        assert!(!md.contains(empty), "{empty:?} in {md}");
    }
    // Probe files sort in the order they ran.
    let mut probes: Vec<String> = std::fs::read_dir(out.join("steps"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    probes.sort();
    assert!(probes.len() >= 4 && probes[0] == "capacity--target--01.llr", "{probes:?}");
}

#[test]
fn lab_capacity_over_https_trusts_what_it_is_told_and_names_the_error_when_nothing_holds() {
    let d = tempdir("capacity-tls");
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let (cert, key) = (d.join("cert.pem"), d.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    let port = free_port();
    let origin = origin(&d, port, Some((&cert, &key)));
    // Far under the knee: the search holds at its maximum in a few short probes.
    let search = |out: &str, trust: &[&str]| -> (Output, PathBuf) {
        let out = d.join(out);
        let o = loadlab()
            .args(["lab", "capacity", &format!("https://127.0.0.1:{port}/"), "--slo", "p99<500ms,success>=99%"])
            .args(["--start", "20", "--max", "40", "--precision", "50%", "--probe", "1s", "--timeout", "5s", "--out"])
            .arg(&out)
            .args(trust)
            .output()
            .unwrap();
        (o, out)
    };
    // Searched once the origin listens.
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the origin never listened");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A root that cannot be read is bad input, refused by name before anything runs.
    let missing = d.join("missing.pem");
    let (o, out) = search("missing", &["--root-certs", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("--root-certs: {}: ", missing.display())), "{}", stderr(&o));
    assert!(!out.exists(), "nothing written for bad input");
    let (trusted, _) = search("trusted", &["--root-certs", cert.to_str().unwrap()]);
    let (untrusted, untrusted_out) = search("untrusted", &[]);
    stop(origin);
    let (ok, refused) = (stderr(&trusted), stderr(&untrusted));
    // (A machine busy past its two cores may leave the generator late even at 20 req/s: said,
    // exit 4, and still no request refused.)
    let late = trusted.status.code() == Some(4) && ok.contains("The generator could not send 20 req/s");
    assert!(trusted.status.code() == Some(0) || late, "{ok}");
    assert!(late || ok.contains("Capacity of target: beyond the search's maximum (40 req/s held)"), "{ok}");
    assert!(!ok.contains("tls:"), "{ok}");
    // Without the root: every request fails, and the answer says with what, not "noisy".
    let last = refused.lines().rfind(|l| !l.starts_with("loadlab: wrote")).unwrap();
    assert!(last.contains("no rate held"), "{refused}");
    assert!(last.contains("Requests failed, most often with tls: invalid peer certificate"), "{last}");
    assert!(!last.contains("noisy"), "{last}");
    assert!(refused.contains("breaks: success >= 99.00% (measured 0.00%); most often tls:"), "{refused}");
    let md = std::fs::read_to_string(untrusted_out.join("report.md")).unwrap();
    assert!(md.contains("; most often tls: invalid peer certificate"), "{md}");
}

#[test]
fn lab_capacity_sends_the_request_it_is_given() {
    // A capacity search of an endpoint that needs a header and a POST body, as `attack` sends
    // them: every probe's request carries them.
    let d = tempdir("capacity-request");
    std::fs::write(d.join("order.json"), r#"{"item": 7}"#).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(attack::testing::TestServer::start(Default::default()));
    let o = loadlab()
        .args(["lab", "capacity", &server.url("/orders"), "--slo", "p99<500ms,success>=99%"])
        .args(["--method", "POST", "-H", "Accept-Encoding: gzip", "--body"])
        .arg(d.join("order.json"))
        .args(["--start", "20", "--max", "40", "--precision", "50%", "--probe", "1s", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(o.status.code().is_some_and(|c| c == 0 || c == 4), "{}", stderr(&o));
    let got = server.captured();
    assert!(got.len() >= 20, "{} requests", got.len());
    assert!(got.iter().all(|r| r.method == "POST" && r.path == "/orders"), "{:?}", got[0]);
    assert!(got.iter().all(|r| r.headers.get("accept-encoding").is_some_and(|v| v == "gzip")));
    assert!(got.iter().all(|r| &r.body[..] == br#"{"item": 7}"#));
    // A header that is not one is refused before anything is sent.
    let o =
        loadlab().args(["lab", "capacity", &server.url("/"), "--slo", "p99<500ms", "-H", "no colon"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--header"), "{}", stderr(&o));
}

#[test]
fn a_target_past_its_knee_on_this_machine_is_the_targets_and_the_search_finds_its_knee() {
    // The profiling tests' Go server burning about 8 ms of CPU a request on both cores, started
    // by the plan on loadlab's own machine, ahead of loadlab for the CPUs (nice -10): past its
    // knee (some 200/s) it takes them, so loadlab's threads wait for one (the machine is busy);
    // its latency, seconds of queue, is still its own. The search ends with a knee (exit 0),
    // never "generator-limited" (exit 4).
    let d = tempdir("capacity-knee");
    let burn = crate::profile::burn(false);
    let plan = format!(
        "name = \"knee\"\n[targets.burn]\nurl = \"http://127.0.0.1:{{port}}/\"\n\
         start = [\"nice\", \"-n\", \"-10\", \"{}\", \"127.0.0.1:{{port}}\"]\n\
         [load]\nheaders = [\"X-Alpha: 6000\"]\ntimeout = \"10s\"\n[slo]\np99 = \"< 200ms\"\n\
         [capacity]\nstart = 25\nmax = 1600\nprecision = \"30%\"\nprobe = \"3s\"\n",
        burn.display()
    );
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    // A machine busy with something else can hold the generator back below the knee, where
    // the target leaves CPU to spare: that search is run again (up to three). Held back past
    // the knee is what this test is about, and fails at once.
    let mut attempt = 0;
    let (err, lab) = loop {
        attempt += 1;
        let out = d.join(format!("out{attempt}"));
        let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
        let err = stderr(&o);
        let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
        let limited = lab["capacity"][0]["generator_limited_at"].as_f64();
        if o.status.code() == Some(4) && limited.is_some_and(|r| r <= 100.0) && attempt < 3 {
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{err}");
        break (err, lab);
    };
    let last = err.lines().rfind(|l| !l.starts_with("loadlab: wrote")).unwrap();
    assert!(last.contains("Capacity of burn: holds ") && last.contains(" req/s, breaks at "), "{err}");
    let found = &lab["capacity"][0];
    let holds = found["holds_up_to"].as_f64().unwrap_or_else(|| panic!("{found}"));
    assert!((25.0..800.0).contains(&holds), "{found}");
    // The confirmation at the knee itself may find the generator late (the target fills both
    // CPUs there); never a rate above what held.
    let limited = found["generator_limited_at"].as_f64();
    assert!(limited.is_none_or(|g| g <= holds), "{found}");
}
