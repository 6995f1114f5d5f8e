//! A history of labs as a CI job keeps one: each lab recorded with its commit, series and change
//! points shown, and a gate judged against the series' level.

use std::path::{Path, PathBuf};

use crate::support::*;

/// A lab of plan `api` against an embedded origin answering in `latency`, recorded into the
/// history `db` as `commit`; `gate` adds `[history] fail_on`. Returns the lab's folder and exit.
fn recorded_lab(dir: &Path, db: &Path, latency: &str, commit: &str, gate: Option<&str>) -> (PathBuf, i32, String) {
    std::fs::create_dir_all(dir).unwrap();
    let svc =
        format!(r#"{{"route": "/*", "body": "x", "stages": [{{"at": 0, "status": 200, "latency": "{latency}"}}]}}"#);
    std::fs::write(dir.join("svc.json"), svc).unwrap();
    let history = gate.map_or(String::new(), |g| format!("[history]\nfail_on = \"{g}\"\n"));
    let plan = format!(
        "name = \"api\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 50\nduration = \"1s\"\nwarmup = \"200ms\"\n{history}"
    );
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let out = dir.join("out");
    let o = loadlab()
        .args(["lab", "run"])
        .arg(dir.join("plan.toml"))
        .arg("--out")
        .arg(&out)
        .arg("--history")
        .arg(db)
        .args(["--commit", commit, "--branch", "main", "--tag", "version=1.4"])
        .env_remove("LOADLAB_HISTORY")
        .output()
        .unwrap();
    (out, o.status.code().unwrap_or(-1), stderr(&o))
}

#[test]
fn labs_recorded_into_a_history_show_their_series_and_a_slower_commit_fails_its_gate() {
    let d = tempdir("history");
    let db = d.join("history.db");
    // The first lab: recorded with its commit, branch, tag and machine; a new series is not
    // judged yet, and that is not a failure (a history's first merges are not red).
    let (first, code, err) = recorded_lab(&d.join("lab0"), &db, "10ms", "c0", Some("p50>+5%"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("recorded lab 1 in") && err.contains("not judged yet: lab 1 of the 6"), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(first.join("lab.json")).unwrap()).unwrap();
    let p = &json["provenance"];
    assert_eq!((p["commit"].as_str(), p["branch"].as_str()), (Some("c0"), Some("main")), "{p}");
    assert_eq!(p["tags"]["version"], "1.4");
    assert!(p["machine"]["cores"].as_u64().unwrap() >= 1, "{p}");
    // loadlab's machine during each step (the target runs inside loadlab, so the rest of the
    // machine's time was other processes'), which the history keeps as `machine_other`.
    let machine = &json["steps"][0]["machine"];
    let other = machine["other_pct"].as_f64().unwrap_or(f64::NAN);
    assert!((0.0..=100.0).contains(&other) && machine["cpus"].as_u64() >= Some(1), "{machine}");
    for i in 1..5 {
        let (_, code, err) = recorded_lab(&d.join(format!("lab{i}")), &db, "10ms", &format!("c{i}"), None);
        assert_eq!(code, 0, "{err}");
    }
    // Added again: refused, nothing counted twice. A folder that is not a lab between two that
    // are: said, the others still tried, and the exit says one was not added.
    let o = loadlab().args(["history", "add"]).arg(&first).arg("--history").arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("in the history already"), "{}", stderr(&o));
    let broken = d.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    let o = loadlab()
        .args(["history", "add"])
        .arg(&first)
        .arg(&broken)
        .arg(d.join("lab4/out"))
        .arg("--history")
        .arg(&db)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("broken: not added") && err.contains("lab4/out is in the history already"), "{err}");
    assert!(err.contains("1 of 3 lab folders could not be added"), "{err}");
    // A mistyped history is not read as an empty one.
    let o = loadlab().args(["history", "show", "--history"]).arg(d.join("histroy.db")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("histroy.db: no such file"), "{}", stderr(&o));
    assert!(!d.join("histroy.db").exists());
    // The list, a series as a table, and Otava's CSV.
    let o = loadlab().args(["history", "--history"]).arg(&db).output().unwrap();
    assert!(
        stdout(&o).contains("api / svc @ 50 req/s, http1: p50") && stdout(&o).contains("      5 "),
        "{}",
        stdout(&o)
    );
    let o = loadlab()
        .args(["history", "show", "--metric", "p50", "--load", "50"])
        .env("LOADLAB_HISTORY", &db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("c4") && stdout(&o).contains("no change point"), "{}", stdout(&o));
    let o = loadlab().args(["history", "show", "--csv", "--metric", "p50", "--history"]).arg(&db).output().unwrap();
    let csv = stdout(&o);
    assert!(csv.starts_with("time,commit,p50\n") && csv.lines().count() == 6, "{csv}");
    let o = loadlab().args(["history", "show", "--metric", "machine_other", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("machine_other") && stdout(&o).contains("c4"), "{}", stdout(&o));
    assert!(stdout(&o).contains("%\n") && !stdout(&o).contains("µs/req"), "{}", stdout(&o));
    // A sixth lab at the same level holds its gate. A 14% slower one (past the 5% gate, not 4
    // times it; and past what a machine up to 8% slower could explain, as a busy runner's was by
    // 6%) is a warning (a busy machine makes outliers and short spells) that says when it
    // turns red, and so is its first rerun; the second agrees: three in a row fail the gate
    // (exit 3).
    let (_, code, err) = recorded_lab(&d.join("lab5"), &db, "10ms", "c5", Some("p50>+5%"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("over 3 labs since the series' start") && err.contains(": ok"), "{err}");
    for run in ["lab6", "lab6-rerun"] {
        let (_, code, err) = recorded_lab(&d.join(run), &db, "11.5ms", "c6", Some("p50>+5%"));
        assert_eq!(code, 0, "{err}");
        // (Or held as the machine's, as below.)
        let machine = err.contains("can explain it");
        assert!(machine || err.contains("warning: this lab is beyond its level"), "{err}");
        assert!(machine || err.contains("if it stays"), "{err}");
    }
    // A warning passes (exit 0); a CI job that reruns on one asks for an exit of its own.
    let o = loadlab()
        .args(["history", "check", "--fail-on", "p50>+5%", "--warning-exit", "5", "--history"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("passed with a warning (--warning-exit 5)"), "{}", stderr(&o));
    // (Another process may take a third of the machine during a lab, or the host slow its CPUs
    // in a spell of seconds (the speed probe reads +28%): the check then holds the lab as the
    // machine's ("a busy machine can explain it", "the machine is slower, and can explain it"),
    // and a CI job reruns a little later, as here.)
    let mut last = "lab6-rerun2".to_owned();
    let (mut code, mut err) = (0, String::new());
    for rerun in 2..7 {
        if rerun > 2 {
            std::thread::sleep(std::time::Duration::from_secs(5));
        }
        last = format!("lab6-rerun{rerun}");
        (_, code, err) = recorded_lab(&d.join(&last), &db, "11.5ms", "c6", Some("p50>+5%"));
        if !(code == 0 && err.contains("can explain it")) {
            break;
        }
    }
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("worse than its history: api / svc @ 50 req/s, http1: p50 (p50>+5%)"), "{err}");
    // `history check` judges the newest lab the same way; without --fail-on, on the stated
    // default gates (the embedded origin has no process: no target_cpu series to gate).
    let o = loadlab().args(["history", "check", "--fail-on", "p50>+5%", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = loadlab().args(["history", "check", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // The lab named by its folder, as bench/gate.sh checks it: the lab it recorded (its
    // figures read back from lab.json, which may differ in the last bit), not a conflict.
    let named = loadlab()
        .args(["history", "check"])
        .arg(d.join(&last).join("out"))
        .args(["--fail-on", "p50>+5%", "--history"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(named.status.code(), Some(3), "{}", stderr(&named));
    assert!(!stderr(&named).contains("conflicts"), "{}", stderr(&named));
    let err = stderr(&o);
    assert!(err.contains("gates: p50>+5%,p99>+5%,target_cpu>+5% (the default"), "{err}");
    // (5 or 6 labs: a busy machine may make one an outlier, left out. c6's labs rerun as the
    // machine's may be enough to start a level of their own, held to the one before it.)
    let held =
        err.contains("held to the level's own spread (") || err.contains("held to the spread of the level before it (");
    assert!(err.contains("p50 [p50>+5%]") && held, "{err}");
    assert!(err.contains(" labs): WORSE") || err.contains(" labs: this level is new): WORSE"), "{err}");
    assert!(err.contains("(the 2 labs before, from c6: +"), "{err}");
    // Accepting the change: a commit the history does not know is refused; c6 is kept with who
    // and why, and the lab of c6 now starts a level of its own (too short to tell: exit 4).
    // The reason ends in a long unbroken word (a pasted link): the page must wrap it.
    let reason = format!("a slower codec, on purpose: https://tracker.example/{}", "x".repeat(400));
    let accept = |commit: &str| {
        loadlab()
            .args(["history", "accept", commit, "--reason", &reason, "--by", "ana", "--history"])
            .arg(&db)
            .output()
            .unwrap()
    };
    let o = accept("c9");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no lab of commit \"c9\" in the history"), "{}", stderr(&o));
    let o = accept("c6");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("c6 accepted by ana on "), "{}", stderr(&o));
    // The new level holds 2 labs: it borrows the spread of the level before it, so the check
    // judges (exit 0) instead of "cannot tell"; as JSON too, for a CI script.
    let o =
        loadlab().args(["history", "check", "--json", "--fail-on", "p50>+5%", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("held to the spread of the level before it ("), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["check"]["judged"][0]["outcome"], "held", "{json}");
    assert!(json["warnings"].as_array().unwrap().is_empty(), "{json}");
    let o = loadlab().args(["history", "show", "--metric", "p50", "--history"]).arg(&db).output().unwrap();
    assert!(stdout(&o).contains("accepted by ana on "), "{}", stdout(&o));
    // ... and ends with what changed, newest first, where the terminal leaves the reader.
    assert!(
        stdout(&o).contains("changes, newest first:\n  accepted   api / svc @ 50 req/s, http1: p50  at c6"),
        "{}",
        stdout(&o)
    );
    let o = loadlab()
        .args(["history", "show", "--json", "--history"])
        .arg(&db)
        .arg("--out")
        .arg(d.join("pages"))
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json["series"].as_array().unwrap().len() >= 5, "{json}");
    // The page a team opens: the overview first (the change at c6, accepted; the last check),
    // then every series drawn by the page's script in a real browser, without a script error.
    let html = std::fs::read_to_string(d.join("pages/history.html")).unwrap();
    let overview = &html[..html.find("<section id=\"series\"").expect("the series follow the overview")];
    assert!(overview.contains("Changes, newest first") && overview.contains("accepted by ana on "), "{overview}");
    assert!(
        overview.contains("Last check: api (commit <code>c6</code>") && overview.contains("p50&gt;+5%"),
        "{overview}"
    );
    // Self-contained: nothing to fetch (the SVG namespace is a name, not a request).
    assert!(!html.contains(" src=") && !html.contains("<link") && !html.contains("url("), "self-contained");
    let url = format!("file://{}", d.join("pages/history.html").display());
    let dom = chromium(&["--virtual-time-budget=8000", "--dump-dom", &url], &d.join("profile"));
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let drawn = json["series"].as_array().unwrap().len();
    assert!(
        dom.contains(&format!("data-charts-drawn=\"{drawn}\"")),
        "charts not drawn: {}",
        &dom[..dom.len().min(600)]
    );
    assert!(!dom.contains("data-errors=\""), "script errors: {dom}");
    assert!(dom.contains("<figcaption>p50 (ms)</figcaption>"), "units on every chart");
    // A pointer over a chart shows its nearest lab (value, commit, branch, tags); the switch
    // groups the charts by metric. Driven by a script appended to a copy of the page.
    let probe = html.replace(
        "</body>",
        "<script>const svg = document.querySelector('figure svg'); const b = svg.getBoundingClientRect();\
         svg.dispatchEvent(new MouseEvent('mousemove', {clientX: b.right - 20, clientY: b.top + 20}));\
         document.body.setAttribute('data-tip', document.getElementById('tip').innerText.replace(/\\n/g, ' | ') +\
         (document.getElementById('tip').hidden ? ' (hidden)' : ''));\
         document.body.setAttribute('data-wider', document.documentElement.scrollWidth > window.innerWidth);\
         document.querySelector('input[value=metric]').click();\
         document.body.setAttribute('data-groups', document.querySelectorAll('#groups h3').length);</script></body>",
    );
    std::fs::write(d.join("pages/probe.html"), probe).unwrap();
    let url = format!("file://{}", d.join("pages/probe.html").display());
    let dom = chromium(&["--virtual-time-budget=8000", "--dump-dom", &url], &d.join("profile-probe"));
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let tip = dom.split("data-tip=\"").nth(1).and_then(|t| t.split('"').next()).unwrap_or_default();
    assert!(
        tip.contains("commit c6, ") && tip.contains("branch main, version=1.4") && !tip.contains("(hidden)"),
        "{tip}"
    );
    assert!(dom.contains(&format!("data-groups=\"{}\"", drawn)), "one group a metric: {}", &dom[..dom.len().min(300)]);
    assert!(dom.contains("data-wider=\"false\""), "a long accept reason pushed the page wider than the window");
    // history.md for a CI summary: the overview, and every lab only with --all.
    let md = std::fs::read_to_string(d.join("pages/history.md")).unwrap();
    assert!(
        md.contains("## Changes, newest first") && md.contains("## Last check: api") && !md.contains("| 9 |"),
        "{md}"
    );
    let o = loadlab()
        .args(["history", "show", "--all", "--history"])
        .arg(&db)
        .arg("--out")
        .arg(d.join("all"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(d.join("all/history.md")).unwrap().contains("| 9 |"));
    // No history given: a clear error, exit 2.
    let o = loadlab().args(["history", "show"]).env_remove("LOADLAB_HISTORY").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no history: give --history FILE"), "{}", stderr(&o));
}

#[test]
fn a_lab_that_fails_its_slo_still_says_the_history_did_not_take_it() {
    let d = tempdir("history-unusable");
    std::fs::write(
        d.join("svc.json"),
        r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "10ms"}]}"#,
    )
    .unwrap();
    std::fs::write(
        d.join("plan.toml"),
        "name = \"api\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 20\nduration = \"1s\"\nwarmup = \"200ms\"\n\
         [slo]\np50 = \"< 1ms\"\n",
    )
    .unwrap();
    // Not a database: said before the lab runs (exit 2, nothing run).
    let db = d.join("history.db");
    std::fs::write(&db, "this is not a database, and it is long enough to have a header of its own\n".repeat(20))
        .unwrap();
    let o = loadlab()
        .args(["lab", "run"])
        .arg(d.join("plan.toml"))
        .arg("--out")
        .arg(d.join("early"))
        .arg("--history")
        .arg(&db)
        .env_remove("LOADLAB_HISTORY")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("(nothing was run)") && !d.join("early/lab.json").exists(), "{err}");
    // Unusable only by the time the lab ends (replaced while it ran): the SLO's failure is the
    // exit, and the lost record is said beside it.
    let good = d.join("good.db");
    let swap = std::thread::spawn({
        let (good, db) = (good.clone(), db.clone());
        move || {
            // The lab opens the history first, creating it; it is then replaced by junk.
            let t = std::time::Instant::now();
            while !good.exists() && t.elapsed() < std::time::Duration::from_secs(30) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            std::fs::copy(&db, &good).unwrap();
        }
    });
    let db = good;
    let o = loadlab()
        .args(["lab", "run"])
        .arg(d.join("plan.toml"))
        .arg("--out")
        .arg(d.join("out"))
        .arg("--history")
        .arg(&db)
        .env_remove("LOADLAB_HISTORY")
        .output()
        .unwrap();
    swap.join().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("SLO failed") && err.contains("the lab was not recorded: history"), "{err}");
}

#[test]
fn a_postgres_history_that_never_answers_is_given_up_on_and_its_password_never_shown() {
    // A server that accepts connections and says nothing, held open until the test ends.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    let started = std::time::Instant::now();
    let o = loadlab()
        .args(["history", "show", "--history", &format!("postgres://ci:s3cret@127.0.0.1:{port}/labs")])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("postgres://ci:***@127.0.0.1") && err.contains("connecting: no answer in 10 s"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(50), "{:?}", started.elapsed());
}

#[test]
fn labs_started_together_are_all_recorded_and_a_locked_history_yields_to_a_signal() {
    let d = tempdir("history-together");
    std::fs::write(
        d.join("svc.json"),
        r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "2ms"}]}"#,
    )
    .unwrap();
    std::fs::write(
        d.join("plan.toml"),
        "name = \"api\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 20\nduration = \"1s\"\nwarmup = \"200ms\"\n",
    )
    .unwrap();
    let db = d.join("history.db");
    let lab = |out: &str| {
        let mut c = loadlab();
        c.args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(d.join(out)).arg("--history").arg(&db);
        c.env_remove("LOADLAB_HISTORY");
        c
    };
    // Three labs of one plan at once (a CI matrix on one runner): same plan, machine and, most
    // likely, start second; each is a lab of its own in the history.
    let mut together: Vec<Watched> = (0..3).map(|i| Watched::spawn(lab(&format!("lab{i}")))).collect();
    for w in &mut together {
        let (code, err) = w.finish();
        assert_eq!(code, Some(0), "{err}");
    }
    let count = |db: &Path| -> i64 {
        rusqlite::Connection::open(db).unwrap().query_row("SELECT COUNT(*) FROM labs", [], |r| r.get(0)).unwrap()
    };
    assert_eq!(count(&db), 3);
    // Another writer holds the history's lock when the lab ends: it waits, and a signal ends
    // the wait at once (not after SQLite's 30 s), saying the lab was not recorded.
    let out = d.join("locked");
    let mut w = Watched::spawn(lab("locked"));
    w.wait_until("its folder is made", |_| out.exists());
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    w.wait_until("its reports are written", |w| w.stderr().contains("report.html"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let asked = std::time::Instant::now();
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, err) = w.finish();
    assert!(asked.elapsed() < std::time::Duration::from_secs(10), "{:?}: {err}", asked.elapsed());
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("the lab was not recorded: history") && err.contains("history.db"), "{err}");
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(count(&db), 3);
}
