//! Where a lab's processes run: left to the scheduler by default, and with `--placement split`
//! loadlab and the targets it starts on disjoint CPUs (the tests run on a machine of two or
//! more), said in report.md and lab.json either way.

use crate::support::{loadlab, stderr, tempdir};

#[test]
fn a_started_target_runs_on_cpus_of_its_own_unless_told_to_share() {
    let d = tempdir("placement");
    // The started command writes the CPUs it may run on, then serves.
    let plan = r#"
[targets.svc]
url = "http://127.0.0.1:{port}/"
start = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status > cpus.txt && exec python3 -m http.server {port} --bind 127.0.0.1"]
[load]
rate = 20
duration = "1s"
"#;
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert!(cpus >= 2, "the tests run on a machine of two or more CPUs");
    for (flag, split) in [(Some("split"), true), (None, false)] {
        let out = d.join(format!("out-{split}"));
        let mut cmd = loadlab();
        cmd.args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out);
        if let Some(f) = flag {
            cmd.args(["--placement", f]);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let allowed = std::fs::read_to_string(d.join("cpus.txt")).unwrap();
        let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        if split {
            let p = &lab["placement"];
            let (generator, targets) = (p["generator"].as_array().unwrap(), p["targets"].as_array().unwrap());
            assert_eq!(generator.len() + targets.len(), cpus, "{p}");
            let listed: Vec<String> = targets.iter().map(|c| c.to_string()).collect();
            assert!(allowed.trim().ends_with(&listed.join(",")) || listed.len() > 1, "{allowed} {p}");
            assert!(md.contains("Placement: loadlab on CPU"), "{md}");
        } else {
            assert!(lab["placement"].is_null(), "{lab}");
            assert!(lab["placement_not"].as_str().unwrap().contains("shared"), "{}", lab["placement_not"]);
            assert!(allowed.contains(&format!("0-{}", cpus - 1)) || cpus > 2, "{allowed}");
            assert!(md.contains("Placement: shared: the scheduler placed"), "{md}");
        }
    }
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).args(["--placement", "half"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--placement: \"half\": split"), "{}", stderr(&o));
}
