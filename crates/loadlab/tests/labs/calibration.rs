//! `lab calibrate` as a user runs it: N labs of one build from a plan, their spread written to
//! calibration.json, and comparisons held to it.

use std::path::{Path, PathBuf};

use crate::support::*;

/// Writes a plan in `dir` against an embedded origin answering after `latency`, at 50/s, with
/// the extra lines `extra`; returns its path.
fn plan(dir: &Path, latency: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let svc =
        format!(r#"{{"route": "/*", "body": "x", "stages": [{{"at": 0, "status": 200, "latency": "{latency}"}}]}}"#);
    std::fs::write(dir.join("svc.json"), svc).unwrap();
    let plan = format!(
        "name = \"svc\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 50\nduration = \"2s\"\nwarmup = \"200ms\"\n{extra}"
    );
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    dir.join("plan.toml")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn p50_row(compare: &Path) -> serde_json::Value {
    json(compare).get("rows").unwrap().as_array().unwrap().iter().find(|r| r["measure"] == "p50").unwrap().clone()
}

#[test]
fn three_labs_of_one_build_calibrate_a_comparison_and_a_wide_spread_holds_a_change() {
    let d = tempdir("calibrate");
    let cal = d.join("cal");
    let o = loadlab()
        .args(["lab", "calibrate"])
        .arg(plan(&d.join("a"), "10ms", "[baseline]\npath = \"nowhere-yet\"\n"))
        .args(["--runs", "3", "--out"])
        .arg(&cal)
        .output()
        .unwrap();
    // (The plan's baseline is not needed to calibrate: a plan that names one still checks it.)
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("baseline.path") && stderr(&o).contains("nowhere-yet"), "{}", stderr(&o));
    let o = loadlab()
        .args(["lab", "calibrate"])
        .arg(plan(&d.join("a"), "10ms", ""))
        .args(["--runs", "3", "--out"])
        .arg(&cal)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("svc at 50 req/s, http1"), "{}", stdout(&o));
    let c = json(&cal.join("calibration.json"));
    // Three labs, or up to two more where a busy machine kept a step from counting.
    let labs = c["labs"].as_array().unwrap().len();
    assert!((3..=5).contains(&labs), "{c}");
    assert_eq!(labs > 3, stderr(&o).contains("in place of one whose steps did not all count"), "{}", stderr(&o));
    for i in 1..=labs {
        assert!(cal.join(format!("lab-{i}/lab.json")).exists(), "lab {i}");
    }
    let p50 = c["cells"][0]["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == "p50").unwrap().clone();
    assert_eq!(p50["values"].as_array().unwrap().len(), 3, "{p50}");
    let first = (1..=labs)
        .map(|i| format!("lab-{i}"))
        .find(|l| {
            json(&cal.join(l).join("lab.json"))["steps"].as_array().unwrap().iter().all(|s| s["uncounted"].is_null())
        })
        .unwrap();

    // A build 50% slower, compared with the first calibration lab that counted as it ends, held
    // to the spread: a 10 ms origin moves by a few percent between labs on a busy machine (with
    // 3 labs the floor is about 6 times their spread), so it is worse, and gated.
    let baseline = format!("[baseline]\npath = \"../cal/{first}\"\ncalibration = \"../cal\"\nfail_on = \"p50>+10%\"\n");
    let slower = plan(&d.join("b"), "15ms", &baseline);
    let new = d.join("b/out");
    let o = loadlab().args(["lab", "run"]).arg(&slower).arg("--out").arg(&new).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("own run-to-run spread of 3 labs of one build ("), "{}", stderr(&o));
    assert_eq!(p50_row(&new.join("compare.json"))["verdict"], "worse");
    assert!(json(&new.join("compare.json"))["calibration"].as_str().unwrap().contains("3 labs"));

    // The same comparison held to a service that moves by half between its labs: a rerun.
    let mut wide = c.clone();
    for m in wide["cells"][0]["metrics"].as_array_mut().unwrap() {
        if m["metric"] == "p50" {
            m["sd_log"] = serde_json::json!(0.4);
        }
    }
    std::fs::write(d.join("wide.json"), serde_json::to_vec(&wide).unwrap()).unwrap();
    let o = loadlab()
        .args(["lab", "compare"])
        .arg(cal.join(&first))
        .arg(&new)
        .args(["--fail-on", "p50>+10%", "--calibration"])
        .arg(d.join("wide.json"))
        .args(["--out"])
        .arg(d.join("wide"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let row = p50_row(&d.join("wide/compare.json"));
    assert_eq!(row["verdict"], "same", "{row}");
    assert!(row["note"].as_str().unwrap().starts_with("3 labs of this service's build differed by up to"), "{row}");

    // Bad input: exit 2, named.
    let o = loadlab().args(["lab", "calibrate"]).arg(cal.join("lab-1")).arg(cal.join("lab-2")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a calibration needs at least 3 labs of one build, got 2"), "{}", stderr(&o));
    let o = loadlab()
        .args(["lab", "compare"])
        .arg(cal.join("lab-1"))
        .arg(&new)
        .args(["--calibration"])
        .arg(d.join("nope.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("calibration: ") && stderr(&o).contains("nope.json"), "{}", stderr(&o));
    let o = loadlab()
        .args(["lab", "run"])
        .arg(plan(&d.join("c"), "10ms", "[baseline]\npath = \"../cal/lab-1\"\ncalibration = \"nope.json\"\n"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("baseline.calibration") && stderr(&o).contains("nope.json"), "{}", stderr(&o));
}

#[test]
fn a_lab_whose_step_did_not_count_is_run_again_up_to_two_more() {
    // The target dies 3 s after it starts, in the first or second step: the last step of every
    // lab finds it down and does not count, so three labs become five, and the calibration says
    // that cell was not calibrated.
    let d = tempdir("calibrate-down");
    std::fs::write(
        d.join("plan.toml"),
        "name = \"svc\"\n[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\n\
         start = [\"timeout\", \"3\", \"python3\", \"-m\", \"http.server\", \"--bind\", \"127.0.0.1\", \"{port}\"]\n\
         [load]\nrate = [20, 30, 40]\nduration = \"2s\"\n",
    )
    .unwrap();
    let cal = d.join("cal");
    let o = loadlab()
        .args(["lab", "calibrate"])
        .arg(d.join("plan.toml"))
        .args(["--runs", "3", "--out"])
        .arg(&cal)
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert_eq!(err.matches("in place of one whose steps did not all count").count(), 2, "{err}");
    assert_eq!(err.matches("does not count in full").count(), 5, "{err}");
    assert!(cal.join("lab-5/lab.json").exists() && !cal.join("lab-6").exists());
    assert!(out.contains("not calibrated: svc at 40 req/s, http1: counted in 0 of 5 labs"), "{out}");
}
