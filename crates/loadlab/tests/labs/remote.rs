//! A target measured where it runs: its CPU and memory read from what it exports (Debian's
//! prometheus-process-exporter, and the Go target's own `process_cpu_seconds_total`), the
//! target started by the test and unknown to the lab but by its URLs.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::{free_port, loadlab, stderr, tempdir};

/// A process started by the test, killed (by pid) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Go target on a port of its own, and the process exporter watching it as group `svc`;
/// their ports.
fn target_and_exporter(dir: &Path) -> (Running, Running, u16, u16) {
    let port = free_port();
    let target = Command::new(crate::profile::burn(false))
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let config = dir.join("process-exporter.yml");
    std::fs::write(&config, format!("process_names:\n  - name: svc\n    cmdline:\n    - '127\\.0\\.0\\.1:{port}$'\n"))
        .unwrap();
    let exporter_port = free_port();
    let exporter = Command::new("prometheus-process-exporter")
        .arg("-config.path")
        .arg(&config)
        .args(["-web.listen-address", &format!("127.0.0.1:{exporter_port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus-process-exporter is needed (scripts/test-all installs it)");
    let (target, exporter) = (Running(target), Running(exporter));
    for p in [port, exporter_port] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", p)).is_err() {
            assert!(std::time::Instant::now() < deadline, "port {p} never opened");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    (target, exporter, port, exporter_port)
}

/// CPU seconds per request of `target`'s counted steps, from lab.json.
fn cpu_per_request(lab: &serde_json::Value, target: usize) -> f64 {
    let steps: Vec<&serde_json::Value> =
        lab["steps"].as_array().unwrap().iter().filter(|s| s["target"] == target).collect();
    let cpu: f64 = steps.iter().map(|s| s["target_cpu_s"].as_f64().unwrap_or_else(|| panic!("{s}"))).sum();
    let ok: f64 = steps.iter().map(|s| s["numbers"]["successes"].as_f64().unwrap()).sum();
    cpu / ok
}

#[test]
fn a_target_on_another_machine_is_measured_by_its_exporters_as_a_local_one_by_its_clocks() {
    let dir = tempdir("remote");
    let (target, _exporter, port, exporter_port) = target_and_exporter(&dir);
    // One server, measured three ways: its process here (the truth), the process exporter, and
    // its own /metrics. Each request burns about 2.5 ms; 100/s is a quarter of a core.
    let plan = format!(
        r#"name = "remote"
[targets.local]
url = "http://127.0.0.1:{port}/"
pid = {pid}
[targets.exporter]
url = "http://127.0.0.1:{port}/"
[targets.exporter.measure]
metrics = "http://127.0.0.1:{exporter_port}/metrics"
cpu = 'namedprocess_namegroup_cpu_seconds_total{{groupname="svc"}}'
memory = 'namedprocess_namegroup_memory_bytes{{groupname="svc",memtype="resident"}}'
[targets.own]
url = "http://127.0.0.1:{port}/"
[targets.own.measure]
metrics = "http://127.0.0.1:{port}/metrics"
[load]
rate = 100
duration = "3s"
warmup = "1s"
headers = {{ X-Alpha = "1000" }}
"#,
        pid = target.0.id()
    );
    std::fs::write(dir.join("plan.toml"), &plan).unwrap();
    let out = dir.join("out");
    let o = loadlab().args(["lab", "run"]).arg(dir.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    // A busy machine may leave a step generator-limited (exit 4): its CPU is still read.
    let said = stderr(&o);
    assert!(o.status.code() == Some(0) || (o.status.code() == Some(4) && said.contains("generator-limited")), "{said}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let by = &lab["targets"][1]["measured_by"];
    assert_eq!(by["source"], format!("exporter http://127.0.0.1:{exporter_port}/metrics"), "{by}");
    assert_eq!(by["resolution_s"], 0.01);
    assert_eq!(lab["targets"][2]["measured_by"]["cpu"], "process_cpu_seconds_total");
    assert!(lab["targets"][0].get("measured_by").is_none());
    let (local, exporter, own) = (cpu_per_request(&lab, 0), cpu_per_request(&lab, 1), cpu_per_request(&lab, 2));
    // Each step's CPU, in 10 ms ticks, is within 5% of a second's reading; steps on a busy
    // machine burn a little more or less: the two exporters agree with the clock to 25%.
    for (name, v) in [("process exporter", exporter), ("own /metrics", own)] {
        assert!((v / local - 1.0).abs() < 0.25, "{name}: {:.0} µs/req against {:.0} locally", v * 1e6, local * 1e6);
    }
    let step = lab["steps"].as_array().unwrap().iter().find(|s| s["target"] == 1).unwrap();
    let rss = step["target_rss_mb"].as_f64().unwrap();
    assert!(rss > 1.0 && rss < 500.0, "{step}");
    assert!(step["target_cpu_pct"].as_f64().unwrap() > 5.0, "{step}");
    // The samples chart it as a local target's: CPU % and memory from the exporter each second.
    let csv = std::fs::read_to_string(out.join("samples/exporter.csv")).unwrap();
    assert!(
        csv.lines().skip(2).any(|l| l.split(',').nth(1).is_some_and(|c| c.parse::<f64>().is_ok_and(|c| c > 5.0))),
        "{csv}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("exporter http://127.0.0.1"), "{report}");
}

#[test]
fn a_selector_that_selects_nothing_or_a_silent_exporter_stops_the_lab_before_its_first_step() {
    let dir = tempdir("remote-bad");
    let (_target, _exporter, port, exporter_port) = target_and_exporter(&dir);
    let run = |measure: &str| {
        let plan = format!(
            "[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\n[targets.svc.measure]\n{measure}\n[load]\nrate = 5\nduration = \"1s\"\n"
        );
        std::fs::write(dir.join("plan.toml"), plan).unwrap();
        let o = loadlab()
            .args(["lab", "run"])
            .arg(dir.join("plan.toml"))
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap();
        (o.status.code(), stderr(&o))
    };
    let (code, said) =
        run(&format!("metrics = \"http://127.0.0.1:{exporter_port}/metrics\"\ncpu = 'namedprocess_namegroup_cpu_seconds_total{{groupname=\"nginx\"}}'"));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(r#"groupname="nginx"} selects no series"#) && said.contains(r#"groupname="svc""#), "{said}");
    assert!(!dir.join("out/steps").exists() || std::fs::read_dir(dir.join("out/steps")).unwrap().next().is_none());
    // The default selector on the process exporter would read the exporter's own CPU.
    let (code, said) = run(&format!("metrics = \"http://127.0.0.1:{exporter_port}/metrics\""));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("the process exporter's own CPU") && said.contains("its groups: \"svc\""), "{said}");
    let silent = free_port();
    let (code, said) = run(&format!("metrics = \"http://127.0.0.1:{silent}/metrics\""));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&format!("127.0.0.1:{silent}/metrics")) && said.lines().count() <= 3, "{said}");
    // Not the format: a page of HTML.
    let (code, said) = run(&format!("metrics = \"http://127.0.0.1:{port}/garbage\""));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("not the Prometheus text format: line 1"), "{said}");
    // `lab capacity URL` takes the same, as flags.
    let o = loadlab()
        .args([
            "lab",
            "capacity",
            &format!("http://127.0.0.1:{port}/"),
            "--slo",
            "p99<1s",
            "--start",
            "20",
            "--max",
            "40",
        ])
        .args(["--probe", "1s", "--measure-metrics", &format!("http://127.0.0.1:{port}/metrics"), "--out"])
        .arg(dir.join("capacity"))
        .output()
        .unwrap();
    assert!(o.status.code() == Some(0) || o.status.code() == Some(4), "{}", stderr(&o));
    let lab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("capacity/lab.json")).unwrap()).unwrap();
    assert_eq!(lab["targets"][0]["measured_by"]["cpu"], "process_cpu_seconds_total", "{}", lab["targets"]);
    let o = loadlab()
        .args(["lab", "capacity", "http://127.0.0.1:1/", "--slo", "p99<1s", "--measure-cpu", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("need --measure-metrics or --measure-prometheus"), "{}", stderr(&o));
    // A bad selector is a plan error naming the field.
    let (code, said) = run("metrics = \"http://127.0.0.1:1/metrics\"\ncpu = 'x{job=svc}'");
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("targets.svc.measure.cpu") && said.contains("not a quoted string"), "{said}");
}

#[test]
fn a_step_on_a_host_busy_with_a_neighbour_is_marked_and_not_counted() {
    let dir = tempdir("remote-host");
    let (_target, _exporter, port, exporter_port) = target_and_exporter(&dir);
    let node_port = free_port();
    let _node = Running(
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{node_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus-node-exporter is needed (scripts/test-all installs it)"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", node_port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "node_exporter never listened");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let plan = format!(
        r#"[targets.svc]
url = "http://127.0.0.1:{port}/"
[targets.svc.measure]
metrics = "http://127.0.0.1:{exporter_port}/metrics"
cpu = 'namedprocess_namegroup_cpu_seconds_total{{groupname="svc"}}'
host = "http://127.0.0.1:{node_port}/metrics"
host_busy = "30%"
host_steal = "90%"
[load]
rate = [50, 100]
duration = "3s"
warmup = "1s"
headers = {{ X-Alpha = "1000" }}
[slo]
p99 = "< 5s"
"#
    );
    std::fs::write(dir.join("plan.toml"), &plan).unwrap();
    let run = |out: &str| {
        let o =
            loadlab().args(["lab", "run"]).arg(dir.join("plan.toml")).arg("--out").arg(dir.join(out)).output().unwrap();
        let lab: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(out).join("lab.json")).unwrap()).unwrap();
        (o.status.code(), lab, stderr(&o))
    };
    // The host as it is: its CPU by mode recorded with the step.
    let (_, lab, said) = run("quiet");
    // At 100/s: enough CPU for a measurement (the 50/s step may use under 0.2 s).
    let host = &lab["steps"][1]["host"];
    assert!(host["cpus"].as_u64().unwrap() >= 1 && host["by_mode"]["idle"].as_f64().is_some(), "{said}\n{host}");
    assert!(host["target_pct"].as_f64().unwrap() > 0.0, "{host}");
    assert_eq!(lab["targets"][0]["measured_by"]["host_busy_pct"], 30.0);
    assert_eq!(lab["targets"][0]["measured_by"]["host_steal_pct"], 90.0);
    assert!(lab["started_unix_s"].is_f64(), "to the millisecond: {}", lab["started_unix_s"]);
    // A neighbour spinning a core of the host: the step measured it too, and is not counted.
    let spinner = Running(Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap());
    let (code, lab, said) = run("busy");
    drop(spinner);
    let step = &lab["steps"][1];
    let why = step["uncounted"].as_str().unwrap_or_else(|| panic!("{said}\n{step}"));
    // node_exporter on loadlab's own machine: loadlab's CPU is known there, not a neighbour's.
    let host = "the target's host (loadlab's own machine) was busy";
    assert!(why.contains(host) && why.contains("outside the target and loadlab (over 30%)"), "{why}");
    assert_eq!(code, Some(4), "inconclusive, as a generator-limited lab: {said}");
    assert!(said.contains(&format!("not counted: {host}")) && !said.contains("generator-limited"), "{said}");
    let report = std::fs::read_to_string(dir.join("busy/report.md")).unwrap();
    assert!(!report.contains("held the SLO at every rate") && !report.contains("generator-limited"), "{report}");
    assert!(report.contains("req/s no step counted (the target's host (loadlab's own machine) was busy"), "{report}");
    assert!(report.contains(&format!("(not counted: {host}")), "{report}");
}

/// Every file under `dir`, as text where it is text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else if let Ok(t) = std::fs::read_to_string(&p) {
            out.push_str(&t);
        }
    }
    out
}

#[test]
fn a_target_behind_a_prometheus_server_is_measured_through_its_api() {
    let dir = tempdir("remote-prometheus");
    let (target, _exporter, port, exporter_port) = target_and_exporter(&dir);
    let prom_port = free_port();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: svc\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Running(
        Command::new("prometheus")
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is needed (scripts/test-all installs it)"),
    );
    // Until it has scraped the exporter.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let o = Command::new("curl")
            .args(["-s", &format!("http://127.0.0.1:{prom_port}/api/v1/query?query=namedprocess_namegroup_num_procs")])
            .output();
        if o.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("\"svc\"")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "prometheus never scraped the exporter");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let token = "s3cret-token-for-the-test";
    let plan = |duration: &str, extra: &str| {
        format!(
            r#"[targets.local]
url = "http://127.0.0.1:{port}/"
pid = {pid}
[targets.svc]
url = "http://127.0.0.1:{port}/"
[targets.svc.measure]
prometheus = "http://127.0.0.1:{prom_port}"
cpu = 'namedprocess_namegroup_cpu_seconds_total{{groupname="svc"}}'
memory = 'namedprocess_namegroup_memory_bytes{{groupname="svc",memtype="resident"}}'
token_env = "LOADLAB_TEST_PROMETHEUS_TOKEN"
{extra}
[load]
rate = 100
duration = "{duration}"
warmup = "1s"
headers = {{ X-Alpha = "1000" }}
"#,
            pid = target.0.id()
        )
    };
    let run_with = |duration: &str, out: &str, extra: &str| {
        std::fs::write(dir.join("plan.toml"), plan(duration, extra)).unwrap();
        let o = loadlab()
            .env("LOADLAB_TEST_PROMETHEUS_TOKEN", token)
            .args(["lab", "run"])
            .arg(dir.join("plan.toml"))
            .arg("--out")
            .arg(dir.join(out))
            .output()
            .unwrap();
        (o.status.code(), stderr(&o))
    };
    let run = |duration: &str, out: &str| run_with(duration, out, "");
    // An interval the plan gives that the server does not scrape at: said, not reported as measured.
    let (code, said) = run_with("4s", "given", "interval = \"15s\"");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("interval is 15s but the server scrapes its targets every 1s"), "{said}");
    // Steps shorter than three scrapes cannot hold a rate: said before the first.
    let (code, said) = run("2s", "short");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("scrapes every 1s") && said.contains("at least 3s"), "{said}");
    let (code, said) = run("4s", "out");
    assert!(code == Some(0) || (code == Some(4) && said.contains("generator-limited")), "{said}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("out/lab.json")).unwrap()).unwrap();
    let by = &lab["targets"][1]["measured_by"];
    assert_eq!(by["source"], format!("prometheus http://127.0.0.1:{prom_port}"), "{by}");
    assert_eq!(by["scrape_interval_s"], 1.0, "read from the server: {by}");
    assert_eq!(by["scrape_interval_from"], "the server's targets", "{by}");
    let (local, remote) = (cpu_per_request(&lab, 0), cpu_per_request(&lab, 1));
    assert!(
        (remote / local - 1.0).abs() < 0.25,
        "{:.0} µs/req through Prometheus, {:.0} locally",
        remote * 1e6,
        local * 1e6
    );
    assert!(lab["steps"][1]["target_rss_mb"].as_f64().is_some_and(|m| m > 1.0), "{}", lab["steps"][1]);
    // The token went in a header and nowhere else.
    let written = all_text(&dir.join("out"));
    assert!(!written.contains(token) && !said.contains(token));
}

/// The Go target's own CPU counter now, from its /metrics.
fn own_cpu(port: u16) -> f64 {
    let o = Command::new("curl").args(["-s", &format!("http://127.0.0.1:{port}/metrics")]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines().find_map(|l| l.strip_prefix("process_cpu_seconds_total ")).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

#[test]
fn a_target_that_restarts_mid_step_leaves_that_steps_cpu_unmeasured() {
    let dir = tempdir("remote-restart");
    let port = free_port();
    let start = || {
        Running(
            Command::new(crate::profile::burn(false))
                .arg(format!("127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let mut target = start();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the target never listened");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let plan = format!(
        "[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\n[targets.svc.measure]\nmetrics = \"http://127.0.0.1:{port}/metrics\"\n\
         [load]\nrate = 100\nduration = \"8s\"\nwarmup = \"1s\"\nheaders = {{ X-Alpha = \"1000\" }}\n"
    );
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let mut lab = crate::support::spawn_lab(&dir.join("plan.toml"), &dir.join("out"));
    // Restarted once it has worked for the lab a while (past the warm-up), well before the
    // step's end; the new process's counter starts again from zero.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while own_cpu(port) < 0.5 {
        assert!(std::time::Instant::now() < deadline, "the target never worked");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(target);
    target = start();
    let status = lab.wait().unwrap();
    drop(target);
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("out/lab.json")).unwrap()).unwrap();
    let step = &lab["steps"][0];
    assert!(step["target_cpu_s"].is_null(), "{step}");
    let why = step["target_cpu_unmeasured"].as_str().unwrap_or_default();
    assert!(why.contains("restarted"), "{status:?} {step}");
}
