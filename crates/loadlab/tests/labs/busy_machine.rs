//! A lab beside a busy neighbour: loadlab reads its own machine at each step's edges
//! (`/proc/stat`), says how much of it other processes used, and keeps the figure for a history
//! (where a slower latency on a busy machine is a warning, not a regression).

use std::process::Command;

use crate::support::{loadlab, stderr, tempdir, Watched};

#[test]
fn a_lab_beside_two_spinners_says_its_machine_was_busy() {
    let d = tempdir("busy-machine");
    std::fs::write(
        d.join("svc.json"),
        r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "1ms"}]}"#,
    )
    .unwrap();
    std::fs::write(
        d.join("plan.toml"),
        "name = \"busy\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 20\nduration = \"2s\"\nwarmup = \"300ms\"\n",
    )
    .unwrap();
    // One busy loop per core, each ending by itself after a minute (and killed when dropped).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners: Vec<Watched> = (0..cores)
        .map(|_| {
            let mut c = Command::new("python3");
            c.args(["-c", "import time\nend = time.time() + 60\nwhile time.time() < end: pass"]);
            Watched::spawn(c)
        })
        .collect();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    drop(spinners);
    // Whatever the lab concluded (a generator that shared its cores may have been late), it
    // says what its machine did.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o))))
            .unwrap();
    let machine = &json["steps"][0]["machine"];
    let other = machine["other_pct"].as_f64().unwrap_or(f64::NAN);
    // Each spinner takes its core but for the share loadlab wins: well over half the machine.
    assert!(other > 40.0, "{machine}");
    assert!(machine["neighbour"].as_str().unwrap_or_default().starts_with("loadlab's machine was busy"), "{machine}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("loadlab's machine was busy in 1 of 1 steps: other processes used up to"), "{report}");
}

#[test]
fn a_target_on_this_machine_whose_processes_are_not_named_gets_no_figure() {
    // A running origin given by URL only: its CPU would pass for another process's.
    let (_origin, url) = crate::support::origin(None);
    let d = tempdir("busy-machine-unnamed");
    std::fs::write(
        d.join("plan.toml"),
        format!("name = \"unnamed\"\n[targets.svc]\nurl = \"{url}/\"\n[load]\nrate = 20\nduration = \"1s\"\nwarmup = \"200ms\"\n"),
    )
    .unwrap();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let step = &json["steps"][0];
    assert!(step["numbers"]["requests"].as_u64() > Some(0), "{step}");
    assert!(step.get("machine").is_none(), "{step}");
}
