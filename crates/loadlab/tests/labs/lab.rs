//! `loadlab lab` as a user runs it: real processes started and stopped by the plan, exit codes.

use crate::support::{
    chromium, free_port, loadlab, origin_served, pid_of, signal, spawn_lab, stderr, tempdir, wait_for,
};
use std::path::{Path, PathBuf};

/// Whether any process still runs `loadlab origin --listen 127.0.0.1:PORT`.
fn origin_running(port: u16) -> bool {
    let needle = format!("127.0.0.1:{port}");
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.contains("origin") && c.contains(&needle)
        })
    })
}

/// The port the lab gave a started target's `{port}`, read back from the report's targets.
fn given_port(out: &Path) -> u16 {
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let at = md.find("`http://127.0.0.1:").expect("a target url in report.md") + "`http://127.0.0.1:".len();
    md[at..].split(['/', '`']).next().unwrap().parse().unwrap()
}

#[test]
fn a_started_target_is_sampled_and_stopped_and_a_failing_slo_exits_3() {
    // Its port is the lab's to pick: `{port}` in the url, the command and the metrics.
    let d = tempdir("started");
    std::fs::write(
        d.join("slow.json"),
        r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "20ms"}]}"#,
    )
    .unwrap();
    let plan = format!(
        r#"
name = "started origin"
[targets.origin]
url = "http://127.0.0.1:{{port}}/"
start = ["{bin}", "origin", "--listen", "127.0.0.1:{{port}}", "--recipe", "slow.json"]
metrics = "http://127.0.0.1:{{port}}/_admin/metrics"
series = ["loadlab_origin_in_flight"]
[load]
rate = 50
duration = "3s"
[slo]
p99 = "< 5ms"
"#,
        bin = env!("CARGO_BIN_EXE_loadlab")
    );
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("SLO failed: origin"), "{}", stderr(&o));
    // The started process was sampled every second, and is gone.
    let csv = std::fs::read_to_string(out.join("samples/origin.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(rows.len() >= 3, "{csv}");
    assert_eq!(csv.lines().next().unwrap(), "t_s,cpu_pct,rss_mb,loadlab_origin_in_flight", "{csv}");
    assert!(rows.iter().skip(1).all(|r| r.split(',').nth(1).is_some_and(|c| !c.is_empty())), "CPU in every row: {csv}");
    let port = given_port(&out);
    assert!(port > 0 && !origin_running(port), "the started origin must be stopped");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("FAIL: p99 < 5"), "{md}");
    assert!(md.contains("started by the lab"), "{md}");
    // Latency over time, and CPU, memory and the scraped series beside it.
    assert!(md.contains("(charts/latency.png)") && md.contains("(charts/resources.png)"), "{md}");
    for png in ["latency", "resources"] {
        let bytes = std::fs::read(out.join(format!("charts/{png}.png"))).unwrap();
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "{png}: {} bytes", bytes.len());
    }
    // report.html renders in a browser with every chart drawn and no script error.
    let url = format!("file://{}", out.join("report.html").display());
    let dom = chromium(&["--virtual-time-budget=8000", "--dump-dom", &url], &d.join("profile"));
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(dom.contains("data-runs-drawn=\"4\""), "interactive charts not drawn: {}", &dom[..dom.len().min(600)]);
    assert!(!dom.contains("data-errors=\""), "script errors: {dom}");
    assert_eq!(dom.matches("<figure class=\"chart\"><svg").count(), 2, "inline charts");
}

#[test]
fn bad_plans_exit_2_naming_file_and_line_and_dead_targets_exit_1() {
    let d = tempdir("bad");
    let plan = d.join("plan.toml");
    std::fs::write(&plan, "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = \"fast\"\n").unwrap();
    let o = loadlab().args(["lab", "run"]).arg(&plan).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with(&format!("loadlab: {}:4: load.rate: bad rate", plan.display())), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
    // A command that exits at once never becomes ready.
    std::fs::write(
        &plan,
        "[targets.a]\nurl = \"http://127.0.0.1:1/\"\nstart = [\"false\"]\n[load]\nrate = 1\nduration = \"1s\"\n",
    )
    .unwrap();
    let o = loadlab().args(["lab", "run"]).arg(&plan).arg("--out").arg(d.join("out")).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("target a: \"false\" exited"), "{}", stderr(&o));
    assert!(Path::new(&d.join("out")).exists());
}

#[test]
fn a_started_target_on_a_taken_port_is_refused_naming_the_holder() {
    let d = tempdir("taken");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    std::fs::write(
        d.join("plan.toml"),
        format!(
            "[targets.web]\nurl = \"http://127.0.0.1:{port}/\"\nstart = [\"{bin}\", \"origin\", \"--listen\", \
             \"127.0.0.1:{port}\"]\n[load]\nrate = 10\nduration = \"1s\"\n",
            bin = env!("CARGO_BIN_EXE_loadlab")
        ),
    )
    .unwrap();
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(d.join("out")).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let me = std::process::id();
    assert!(
        stderr(&o).contains(&format!(
            "target web: port {port} of http://127.0.0.1:{port}/ already answers (held by pid {me}"
        )),
        "{}",
        stderr(&o)
    );
    assert!(!origin_running(port), "the command was never started");
    drop(taken);
}

#[test]
fn a_target_killed_mid_run_is_named_with_its_step_and_the_rest_is_target_down() {
    let d = tempdir("killed");
    let port = free_port();
    std::fs::write(
        d.join("plan.toml"),
        format!(
            "[targets.web]\nurl = \"http://127.0.0.1:{port}/\"\nstart = [\"{bin}\", \"origin\", \"--listen\", \
             \"127.0.0.1:{port}\"]\n[load]\nrate = [20, 40, 60]\nduration = \"2s\"\npause = \"100ms\"\n\
             [slo]\nsuccess = \">= 99%\"\n",
            bin = env!("CARGO_BIN_EXE_loadlab")
        ),
    )
    .unwrap();
    let out = d.join("out");
    let child = spawn_lab(&d.join("plan.toml"), &out);
    wait_for(&out.join("steps/1-web--r20-http1--1.llr"));
    // Killed once it has answered some of the first step's requests.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while origin_served(&format!("http://127.0.0.1:{port}")) < 5 {
        assert!(std::time::Instant::now() < deadline, "the started origin never answered");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let target = pid_of(&["origin", &format!("127.0.0.1:{port}")]).expect("the started origin");
    signal(target, nix::sys::signal::Signal::SIGKILL);
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    // The step it died in failed (its requests were refused): that is the target's; the two
    // after it never ran.
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("inconclusive: web at 40 req/s: target down: target web exited (signal: 9 (SIGKILL)) during or after step web--r20-http1--1"), "{err}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("**target web exited (signal: 9 (SIGKILL)) during or after step web--r20-http1--1"), "{md}");
    assert!(md.contains("### web--r60-http1--1 (target down: target web exited"), "{md}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    assert_eq!(lab["deaths"][0]["target"], "web");
    assert_eq!(lab["findings"]["cells"][2]["slo"]["verdict"], "target_down");
    assert!(!out.join("steps/3-web--r60-http1--1.llr").exists(), "a step on a dead target is not run");
    // In a history, the step it died in measured its death, not its level: no series holds it.
    let db = d.join("history.db");
    let o = loadlab().args(["history", "add"]).arg(&out).arg("--history").arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = loadlab().args(["history", "--history"]).arg(&db).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("no series yet"), "{}", String::from_utf8_lossy(&o.stdout));
}

/// A plan whose started origin answers after `latency`, at rates 20, 40 and 60 for 3 s each
/// after `warmup`.
fn started_origin_plan(d: &Path, latency: &str, warmup: &str) -> PathBuf {
    std::fs::write(
        d.join("r.json"),
        format!(r#"{{"route": "/*", "body": "x", "stages": [{{"at": 0, "status": 200, "latency": "{latency}"}}]}}"#),
    )
    .unwrap();
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[targets.web]\nurl = \"http://127.0.0.1:{{port}}/\"\nstart = [\"{bin}\", \"origin\", \"--listen\", \
             \"127.0.0.1:{{port}}\", \"--recipe\", \"r.json\"]\n[load]\nrate = [20, 40, 60]\nduration = \"3s\"\n\
             timeout = \"20s\"\nwarmup = \"{warmup}\"\n[slo]\np99 = \"< 1s\"\n",
            bin = env!("CARGO_BIN_EXE_loadlab")
        ),
    )
    .unwrap();
    plan
}

/// The URL of the origin a lab started for a plan in `dir` (the process running `origin` from
/// there), once it runs.
fn started_origin_url(dir: &Path) -> Option<String> {
    let dir = dir.canonicalize().ok()?;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        if std::fs::read_link(e.path().join("cwd")).ok()? != dir {
            return None;
        }
        let c = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<String> = c.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let at = args.iter().position(|a| a == "--listen")?;
        let listen = args.get(at + 1)?;
        args.iter().any(|a| a == "origin").then(|| format!("http://{listen}"))
    })
}

#[test]
fn sigterm_and_a_second_sigint_stop_the_targets_and_write_reports_marked_interrupted() {
    use nix::sys::signal::Signal;
    let all = ["web--r20-http1--1", "web--r40-http1--1", "web--r60-http1--1"];
    for (name, latency, warmup, signals, code, ran) in [
        // The step in progress ends its requests in flight, and counts; the others never run.
        ("term", "5ms", "0s", vec![Signal::SIGTERM], 143, 1),
        // Stopped in its warm-up, the step measured nothing: not run, rather than a target that
        // answered none of its counted requests.
        ("term-warmup", "5ms", "30s", vec![Signal::SIGTERM], 143, 0),
        // Requests that take 10 s: the first SIGINT would wait for them; the second abandons
        // the step (its file is left without its end marker) and stops at once.
        ("int-int", "10s", "0s", vec![Signal::SIGINT, Signal::SIGINT], 130, 0),
    ] {
        let d = tempdir(name);
        let plan = started_origin_plan(&d, latency, warmup);
        let out = d.join("out");
        let mut lab = crate::support::Watched::spawn({
            let mut c = loadlab();
            c.args(["lab", "run"]).arg(&plan).arg("--out").arg(&out);
            c
        });
        wait_for(&out.join("steps/1-web--r20-http1--1.llr"));
        // Signalled once the first step is under way: answers given, or (10 s each) requests
        // held in flight.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let url = started_origin_url(&d);
            let going = url.is_some_and(|u| {
                crate::support::origin_served(&u) >= 5
                    || crate::support::origin_metric(&u, "loadlab_origin_in_flight") >= 5
            });
            if going {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{name}: the first step never got going");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let sent = std::time::Instant::now();
        for (i, s) in signals.iter().enumerate() {
            lab.signal(*s);
            // A second signal is sent once the first was heard: the lab says so.
            if i + 1 < signals.len() {
                lab.wait_until("the first signal heard", |w| w.stderr().contains("again to stop at once"));
            }
        }
        let (exit, err) = lab.finish();
        assert_eq!(exit, Some(code), "{name}: {err}");
        assert!(sent.elapsed() < std::time::Duration::from_secs(8), "{name}: took {:?}", sent.elapsed());
        assert!(err.contains(&format!("interrupted after {ran} of 3 steps")), "{name}: {err}");
        assert!(!origin_running(given_port(&out)), "{name}: the started origin must be stopped");
        let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
        assert_eq!(lab["interrupted"], true, "{name}");
        assert_eq!(lab["not_run"], serde_json::json!(all[ran..]), "{name}");
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains(&format!("**Interrupted: {} of 3 steps did not run", 3 - ran)), "{name}: {md}");
        assert!(!md.contains("FAIL") && lab["findings"]["slo_failed"] == false, "{name}: {md}");
        assert!(out.join("report.html").exists(), "{name}");
    }
}

#[test]
fn plans_are_read_from_their_folder_and_refused_with_file_line_and_field() {
    let d = tempdir("paths");
    started_origin_plan(&d, "1ms", "0s");
    // Named without a folder, from its own folder: the command starts there, r.json is found.
    let text = std::fs::read_to_string(d.join("plan.toml")).unwrap().replace("[20, 40, 60]", "20").replace("3s", "1s");
    std::fs::write(d.join("plan.toml"), text).unwrap();
    // A busy machine (a build beside it) can leave the generator late: exit 4, run again.
    let mut o = loadlab().current_dir(&d).args(["lab", "run", "plan.toml", "--out", "out"]).output().unwrap();
    for _ in 0..2 {
        if o.status.code() != Some(4) {
            break;
        }
        o = loadlab().current_dir(&d).args(["lab", "run", "plan.toml", "--out", "out", "--force"]).output().unwrap();
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("loadlab: 1 step (1 target x 1 load point x 1 repeat, 1.0s each after 0.0s of warm-up), about 1.0s; writing to out"), "{}", stderr(&o));
    // The same --out again holds a lab: refused unless --force.
    let o = loadlab().current_dir(&d).args(["lab", "run", "plan.toml", "--out", "out"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--out out: holds a previous lab"), "{}", stderr(&o));
    // Without --out, each run gets a folder of its own.
    let o = loadlab().current_dir(&d).args(["lab", "run", "plan.toml"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("writing to lab-plan-20"), "{}", stderr(&o));
    let bad = |name: &str, text: &str, expect: &str| {
        std::fs::write(d.join(name), text).unwrap();
        let o = loadlab().current_dir(&d).args(["lab", "run", name]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(&format!("loadlab: {expect}")), "{name}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    };
    bad(
        "missing.toml",
        "[targets.a]\norigin = \"nope.json\"\n[load]\nrate = 1\n",
        "missing.toml:2: targets.a.origin: nope.json: No such file or directory",
    );
    bad(
        "twice.toml",
        "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = [30, \"30/s\", \"1800/m\"]\n",
        "twice.toml:4: load.rate: 30 req/s is given twice",
    );
    bad(
        "case.toml",
        "[targets.Svc]\nurl = \"http://127.0.0.1:1/\"\n[targets.svc]\nurl = \"http://127.0.0.1:2/\"\n[load]\nrate = 1\n",
        "case.toml:3: targets.svc: \"svc\" and \"Svc\" would share the results files",
    );
    bad(
        "long.toml",
        "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = [1, 2, 3]\nduration = \"10h\"\n",
        "the plan would run about 30h00m (3 steps (1 target x 3 load points x 1 repeat, 10h00m each after",
    );
    let huge = format!("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = [{}1]\n", "1, ".repeat(600_000));
    bad("huge.toml", &huge, "huge.toml: larger than the limit of 1024 KiB");
    // Raised explicitly, the long plan is accepted (and stopped at once by its dead target).
    let o =
        loadlab().current_dir(&d).args(["lab", "run", "long.toml", "--max-time", "31h", "--quick"]).output().unwrap();
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn an_origin_whose_log_cannot_be_written_still_serves() {
    // A plan's started origin logs to a file in the lab's folder: a full disk must not kill it.
    use std::io::{Read, Write};
    let port = free_port();
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut child = loadlab().args(["origin", "--listen", &format!("127.0.0.1:{port}")]).stderr(full).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let answer = loop {
        if let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut bytes = Vec::new();
            let _ = c.read_to_end(&mut bytes);
            break String::from_utf8_lossy(&bytes).into_owned();
        }
        assert!(child.try_wait().unwrap().is_none(), "the origin exited");
        assert!(std::time::Instant::now() < deadline, "the origin never listened");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Runs a lab in `dir` against an embedded origin answering after `latency`, at 50/s with the
/// `[load]` lines `load`; asserts its exit code and returns its output directory.
fn origin_lab(dir: &Path, latency: &str, load: &str, code: i32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let svc =
        format!(r#"{{"route": "/*", "body": "x", "stages": [{{"at": 0, "status": 200, "latency": "{latency}"}}]}}"#);
    std::fs::write(dir.join("svc.json"), svc).unwrap();
    let plan = format!("name = \"svc\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 50\n{load}");
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    // A lab the generator could not carry (a busy machine: its sends late) counted nothing: it
    // is run again, up to three times in all, when another ending was expected.
    let mut o;
    let mut tries = 0;
    loop {
        tries += 1;
        o = loadlab()
            .args(["lab", "run"])
            .arg(dir.join("plan.toml"))
            .arg("--out")
            .arg(dir.join("out"))
            .arg("--force")
            .output()
            .unwrap();
        let limited = o.status.code() == Some(4) && stderr(&o).contains("generator-limited");
        if !(limited && code != 4 && tries < 3) {
            break;
        }
    }
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    dir.join("out")
}

#[test]
fn compare_reads_h3_steps_as_any_other() {
    // Two labs over HTTP/3 against an embedded origin, the second 30% slower: the comparison
    // names the h3 cells and calls them worse, as it does over TCP. One run a side is too few
    // to gate on (A/A pairs of nginx failed such a gate 6 times in 16): not judged, exit 4.
    let d = tempdir("compare-h3");
    let lab =
        |name: &str, latency: &str| origin_lab(&d.join(name), latency, "duration = \"3s\"\nprotocol = [\"h3\"]\n", 0);
    let (old, new) = (lab("old", "10ms"), lab("new", "13ms"));
    let o = loadlab()
        .args(["lab", "compare"])
        .arg(&old)
        .arg(&new)
        .args(["--fail-on", "p50>+10%,generator_cpu>+50%"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(4), "{table}{}", stderr(&o));
    assert!(table.contains("svc at 50 req/s, h3"), "{table}");
    // CPU, read once a step, has no test at all with one run a side.
    assert!(table.contains("generator_cpu>+50%: svc at 50 req/s, h3: NOT JUDGED (CPU is read once a step"), "{table}");
    assert!(table.contains("p50>+10%: svc at 50 req/s, h3: NOT JUDGED (one run a side"), "{table}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(new.join("compare.json")).unwrap()).unwrap();
    let p50 = json["rows"].as_array().unwrap().iter().find(|r| r["measure"] == "p50").unwrap();
    assert_eq!(p50["verdict"], "worse", "{p50}");
    let change = p50["change_pct"].as_f64().unwrap();
    assert!((15.0..45.0).contains(&change), "{p50}");
}

#[test]
fn compare_names_a_30_percent_slower_origin_and_gates_on_it_and_a_rerun_reads_as_no_change() {
    let d = tempdir("compare");
    // Three repeats a side: the spread between labs of one build is measured, and gated on.
    let lab = |name: &str, latency: &str, extra: &str, code: i32| {
        origin_lab(&d.join(name), latency, &format!("duration = \"2s\"\nrepeats = 3\n{extra}"), code)
    };
    let old = lab("old", "10ms", "", 0);
    // The new build's plan compares itself with the old lab as it ends, and fails on the gate.
    let new = lab("new", "13ms", "[baseline]\npath = \"../old/out\"\nfail_on = \"p50>+10%\"\n", 3);
    assert!(new.join("compare.md").exists());
    let rerun = lab("rerun", "10ms", "", 0);
    let o = loadlab()
        .args(["lab", "compare"])
        .arg(&old)
        .arg(&new)
        .args(["--fail-on", "p50>+10%,throughput<-3%"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(3), "{table}{}", stderr(&o));
    assert!(stderr(&o).contains("regression beyond --fail-on: p50>+10%: svc at 50 req/s, http1: +"), "{}", stderr(&o));
    assert!(table.contains("svc at 50 req/s, http1"), "{table}");
    // What the gates were held to, said: both throughput and p50 rows watched, at 5%.
    assert!(table.contains("held to a family-wise 5% over the 2 rows they watch (Holm)"), "{table}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(new.join("compare.json")).unwrap()).unwrap();
    let p50 = json["rows"].as_array().unwrap().iter().find(|r| r["measure"] == "p50").unwrap();
    assert_eq!(p50["verdict"], "worse", "{p50}");
    assert_eq!(p50["basis"], "repeats", "{p50}");
    let change = p50["change_pct"].as_f64().unwrap();
    assert!((20.0..40.0).contains(&change), "{p50}");
    assert!(p50["ci_pct"][0].as_f64().unwrap() > 0.0, "the interval excludes 0: {p50}");
    let throughput = json["rows"].as_array().unwrap().iter().find(|r| r["measure"] == "throughput").unwrap();
    assert_eq!(throughput["verdict"], "same", "{throughput}");
    let md = std::fs::read_to_string(new.join("compare.md")).unwrap();
    assert!(md.contains("**Failed the gate**") && md.contains("(charts/compare-1.png)"), "{md}");
    // The two sides, one plan, told apart by their folders (and commit and start, when known).
    let (old_dir, new_dir) = (old.display().to_string(), new.display().to_string());
    assert!(md.contains(&format!("Old: `svc ({old_dir}")) && md.contains(&format!("New: `svc ({new_dir}")), "{md}");
    let html = std::fs::read_to_string(new.join("compare.html")).unwrap();
    assert!(html.contains("<figure class=\"chart\"><svg") && !html.contains("charts/compare-1.png"), "self-contained");
    // The same lab against a rerun of itself: its gate holds, exit 0, and nothing moved far.
    let o = loadlab().args(["lab", "compare"]).arg(&old).arg(&rerun).args(["--fail-on", "p50>+10%"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(rerun.join("compare.json")).unwrap()).unwrap();
    // (The tail is left out: a p99 of 200 requests is about their second-slowest, and a busy
    // machine moves it by a third between two runs of one build; the gate is on p50. On a quiet
    // machine the origin's p50 moves under 1% between runs and reads `~`; with the whole suite
    // running beside it, 5% was seen, past the floor of 3% and 100 µs: a true difference between
    // the two runs, not a large one. loadlab's own CPU per request is left out too: a debug
    // build at 50 req/s spends most of it waking up, and two runs read 584 and 406 µs once.)
    let rows = json["rows"].as_array().unwrap();
    let near = |r: &&serde_json::Value| r["verdict"] == "same" || r["change_pct"].as_f64().unwrap().abs() < 10.0;
    assert!(
        rows.iter().filter(|r| r["measure"] != "p99" && r["measure"] != "generator_cpu").all(|r| near(&r)),
        "{json}"
    );
    // Two plain results files: the same table.
    let o = loadlab()
        .args(["report", "--compare"])
        .arg(old.join("steps/1-svc--r50-http1--1.llr"))
        .arg(new.join("steps/1-svc--r50-http1--1.llr"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(table.lines().any(|l| l.trim_start().starts_with("p50") && l.trim_end().ends_with("worse")), "{table}");
    // Bad input: exit 2, named.
    let o = loadlab().args(["lab", "compare"]).arg(&old).arg(d.join("nope")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope: No such file or directory"), "{}", stderr(&o));
}

#[test]
fn lab_json_reads_back_into_its_types_and_a_changed_layout_is_named() {
    let d = tempdir("roundtrip");
    let out = origin_lab(&d.join("a"), "5ms", "duration = \"2s\"\n", 0);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    assert_eq!(json["format"], 1);
    let compare = |a: &Path, b: &Path, to: &str| {
        loadlab().args(["lab", "compare", "--out"]).arg(d.join(to)).arg(a).arg(b).output().unwrap()
    };
    // Compared with itself: `~` everywhere, with the numbers the lab wrote.
    let o = compare(&out, &out, "self");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cmp: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("self/compare.json")).unwrap()).unwrap();
    let rows = cmp["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["verdict"] == "same"), "{cmp}");
    let p50 = rows.iter().find(|r| r["measure"] == "p50").unwrap();
    assert_eq!(p50["old"], json["steps"][0]["numbers"]["latency"]["p50"], "{p50}");
    assert_eq!(p50["new"], json["steps"][0]["numbers"]["latency"]["p50"], "{p50}");
    // A field added since (a newer loadlab): still read.
    let edited = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let dir = d.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut j = json.clone();
        edit(&mut j);
        std::fs::write(dir.join("lab.json"), serde_json::to_vec(&j).unwrap()).unwrap();
        std::os::unix::fs::symlink(out.join("steps"), dir.join("steps")).unwrap();
        dir
    };
    let added = edited("added", &|j| j["steps"][0]["numbers"]["p42"] = 1.0.into());
    let o = compare(&out, &added, "added-cmp");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A field removed: refused by its path, exit 2.
    let removed = edited("removed", &|j| {
        j["steps"][0]["numbers"]["latency"].as_object_mut().unwrap().remove("p99");
    });
    let o = compare(&out, &removed, "removed-cmp");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("lab.json field steps[0].numbers.latency: missing field `p99`"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    // Another layout, or none: named.
    let other = edited("format", &|j| j["format"] = 99.into());
    let o = compare(&out, &other, "format-cmp");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("lab.json format 99; this loadlab reads format 1"), "{}", stderr(&o));
    let old = edited("old", &|j| {
        j.as_object_mut().unwrap().remove("format");
    });
    let o = compare(&out, &old, "old-cmp");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("without a format number"), "{}", stderr(&o));
}

#[test]
fn a_step_file_reads_as_the_lab_counted_it_without_its_warm_up() {
    let d = tempdir("warmup-files");
    std::fs::write(
        d.join("svc.json"),
        r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "2ms"}]}"#,
    )
    .unwrap();
    let plan = "name = \"w\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 40\nduration = \"1s\"\nwarmup = \"500ms\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    assert!(o.status.code().is_some_and(|c| c == 0 || c == 4), "{}", stderr(&o));
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let step = &lab["steps"][0];
    let (counted, warmup) = (step["numbers"]["requests"].as_u64().unwrap(), step["warmup_requests"].as_u64().unwrap());
    assert!(counted > 0 && warmup > 0, "{step}");
    let file = out.join(step["file"].as_str().unwrap());
    let report = |extra: &[&str]| {
        let o = loadlab().args(["report", "--type", "json"]).args(extra).arg(&file).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        (serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap(), stderr(&o))
    };
    // The same requests as the lab's table, and the same p99 (the same records).
    let (r, err) = report(&[]);
    assert_eq!(r["requests"].as_u64(), Some(counted), "{r}");
    assert!(err.contains(&format!("left out the warm-up the step files name ({warmup} requests")), "{err}");
    let p99_ms = r["latencies"]["99th"].as_f64().unwrap() / 1e6;
    let lab_p99 = step["numbers"]["latency"]["p99"].as_f64().unwrap();
    assert!((p99_ms - lab_p99).abs() <= lab_p99 * 0.01 + 0.01, "report {p99_ms} ms, lab {lab_p99} ms");
    let (all, _) = report(&["--with-warmup"]);
    assert_eq!(all["requests"].as_u64(), Some(counted + warmup), "{all}");
}
