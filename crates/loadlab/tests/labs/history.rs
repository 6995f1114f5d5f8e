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
    // The first lab: recorded with its commit, branch, tag and machine; its gate cannot tell yet.
    let (first, code, err) = recorded_lab(&d.join("lab0"), &db, "10ms", "c0", Some("p50>+5%"));
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("recorded lab 1 in") && err.contains("history too short to tell"), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(first.join("lab.json")).unwrap()).unwrap();
    let p = &json["provenance"];
    assert_eq!((p["commit"].as_str(), p["branch"].as_str()), (Some("c0"), Some("main")), "{p}");
    assert_eq!(p["tags"]["version"], "1.4");
    assert!(p["machine"]["cores"].as_u64().unwrap() >= 1, "{p}");
    for i in 1..5 {
        let (_, code, err) = recorded_lab(&d.join(format!("lab{i}")), &db, "10ms", &format!("c{i}"), None);
        assert_eq!(code, 0, "{err}");
    }
    // Added again: refused, nothing counted twice.
    let o = loadlab().args(["history", "add"]).arg(&first).arg("--history").arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("in the history already"), "{}", stderr(&o));
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
    // A sixth lab at the same level holds its gate. A 30% slower one alone is a warning (one lab
    // can be a busy machine's outlier); its rerun agrees and fails the gate (exit 3).
    let (_, code, err) = recorded_lab(&d.join("lab5"), &db, "10ms", "c5", Some("p50>+5%"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("over 4 labs since the series' start") && err.contains(": ok"), "{err}");
    let (_, code, err) = recorded_lab(&d.join("lab6"), &db, "13ms", "c6", Some("p50>+5%"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: this lab alone is beyond its level"), "{err}");
    let (_, code, err) = recorded_lab(&d.join("lab6-rerun"), &db, "13ms", "c6", Some("p50>+5%"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("worse than its history: api / svc @ 50 req/s, http1: p50 (p50>+5%)"), "{err}");
    // `history check` judges the newest lab the same way; without --fail-on, on the stated
    // default gates (the embedded origin has no process: no target_cpu series to gate).
    let o = loadlab().args(["history", "check", "--fail-on", "p50>+5%", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = loadlab().args(["history", "check", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("gates: p50>+5%,p99>+5%,target_cpu>+5% (the default"), "{err}");
    assert!(err.contains("p50 [p50>+5%]") && err.contains("held to the level's own spread (6 labs): WORSE"), "{err}");
    assert!(err.contains("(the lab before +"), "{err}");
    // Accepting the change: a commit the history does not know is refused; c6 is kept with who
    // and why, and the lab of c6 now starts a level of its own (too short to tell: exit 4).
    let accept = |commit: &str| {
        loadlab()
            .args(["history", "accept", commit, "--reason", "a slower codec, on purpose", "--by", "ana", "--history"])
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
    let o = loadlab().args(["history", "check", "--fail-on", "p50>+5%", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 lab at the current level; needs 3"), "{}", stderr(&o));
    let o = loadlab().args(["history", "show", "--metric", "p50", "--history"]).arg(&db).output().unwrap();
    assert!(stdout(&o).contains("accepted by ana on "), "{}", stdout(&o));
    let o = loadlab()
        .args(["history", "show", "--json", "--history"])
        .arg(&db)
        .arg("--out")
        .arg(d.join("pages"))
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json["series"].as_array().unwrap().len() >= 5, "{json}");
    let html = std::fs::read_to_string(d.join("pages/history.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("api / svc @ 50 req/s, http1: p50"), "self-contained charts");
    assert!(std::fs::read_to_string(d.join("pages/history.md")).unwrap().contains("| 8 |"));
    // No history given: a clear error, exit 2.
    let o = loadlab().args(["history", "show"]).env_remove("LOADLAB_HISTORY").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no history: give --history FILE"), "{}", stderr(&o));
}
