//! `loadlab lab` as a user runs it: real processes started and stopped by the plan, exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::chromium;

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loadlab-labcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

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

#[test]
fn a_started_target_is_sampled_and_stopped_and_a_failing_slo_exits_3() {
    let d = tempdir("started");
    let port = free_port();
    std::fs::write(
        d.join("slow.json"),
        r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "20ms"}]}"#,
    )
    .unwrap();
    let plan = format!(
        r#"
name = "started origin"
[targets.origin]
url = "http://127.0.0.1:{port}/"
start = ["{bin}", "origin", "--listen", "127.0.0.1:{port}", "--recipe", "slow.json"]
metrics = "http://127.0.0.1:{port}/_admin/metrics"
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
    assert!(!origin_running(port), "the started origin must be stopped");
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
