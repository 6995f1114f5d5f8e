//! A target's exporter written by someone hostile, or broken: values no counter or gauge can
//! hold, a series twice, escapes in a label. Each leaves that step's figure unmeasured with its
//! reason on the console, in report.md and in lab.json; none becomes a number, and no text from
//! it reaches the terminal raw.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::{free_port, loadlab, stderr, tempdir};

/// A server answering `/metrics` with whatever `body` holds when asked, and `ok` elsewhere (the
/// target itself); killed when dropped.
struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const SERVER: &str = r#"
import http.server, sys
body = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = open(body, "rb").read() if self.path.startswith("/metrics") else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

fn exporter(dir: &Path) -> (Exporter, u16) {
    let port = free_port();
    let child = Command::new("python3")
        .args(["-c", SERVER, &port.to_string()])
        .arg(dir.join("metrics"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the exporter never listened");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (Exporter(child), port)
}

#[test]
fn a_value_no_counter_can_hold_is_no_figure_and_says_why_everywhere() {
    let dir = tempdir("lying-source");
    let (_server, port) = exporter(&dir);
    std::fs::write(
        dir.join("plan.toml"),
        format!(
            "[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\n[targets.svc.measure]\n\
             metrics = \"http://127.0.0.1:{port}/metrics\"\nmemory = \"process_resident_memory_bytes\"\n\
             [load]\nrate = 20\nduration = \"1s\"\nwarmup = \"500ms\"\n"
        ),
    )
    .unwrap();
    let good_memory = "process_resident_memory_bytes 2e7\n";
    for (name, metrics, says) in [
        ("nan", format!("process_cpu_seconds_total NaN\n{good_memory}"), "process_cpu_seconds_total{} is NaN"),
        ("inf", format!("process_cpu_seconds_total +Inf\n{good_memory}"), "process_cpu_seconds_total{} is inf"),
        ("negative-memory", "process_cpu_seconds_total 5\nprocess_resident_memory_bytes -5e9\n".into(), "below zero"),
        ("huge-memory", "process_cpu_seconds_total 5\nprocess_resident_memory_bytes 1e308\n".into(), "past"),
    ] {
        std::fs::write(dir.join("metrics"), &metrics).unwrap();
        let out = dir.join(name);
        let o = loadlab().args(["lab", "run"]).arg(dir.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
        let said = stderr(&o);
        let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}\n{said}"));
        let step = &lab["steps"][0];
        assert!(step["target_cpu_pct"].is_null(), "{name}: {step}");
        // A memory no process can have makes the whole answer untrusted.
        assert_eq!(step["target_rss_mb"].is_null(), name.ends_with("memory"), "{name}: {step}");
        let why = step["target_cpu_unmeasured"].as_str().unwrap_or_else(|| panic!("{name}: {step}"));
        assert!(why.contains(says), "{name}: {why}");
        assert!(said.contains("target CPU not measured") && said.contains(says), "{name}: {said}");
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains(&format!("not measured: {}", why.replace('|', "\\|"))), "{name}: {report}");
        let samples = std::fs::read_to_string(out.join("samples/svc.csv")).unwrap_or_default();
        for figure in ["NaN%", "inf%", "NaN MiB", "inf MiB", "-4768", "e301"] {
            assert!(!report.contains(figure), "{name}: {figure} in {report}");
        }
        assert!(
            !samples.contains("NaN") && !samples.contains("inf") && !samples.contains("-4768"),
            "{name}: {samples}"
        );
    }
    // The same series twice, as Prometheus refuses it: refused before the first step.
    std::fs::write(
        dir.join("metrics"),
        format!("process_cpu_seconds_total 5\nprocess_cpu_seconds_total 5\n{good_memory}"),
    )
    .unwrap();
    let o =
        loadlab().args(["lab", "run"]).arg(dir.join("plan.toml")).arg("--out").arg(dir.join("twice")).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2: the series of line 1 again: process_cpu_seconds_total{}"), "{}", stderr(&o));
    // An exporter's label holding a terminal's escapes, and 2,000,000 characters: shown plain, in
    // one short line.
    let title = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    std::fs::write(
        dir.join("metrics"),
        format!(
            "namedprocess_namegroup_cpu_seconds_total{{groupname=\"{title}\",mode=\"user\"}} 1\n\
             namedprocess_namegroup_cpu_seconds_total{{groupname=\"{}\",mode=\"user\"}} 1\n",
            "x".repeat(2_000_000)
        ),
    )
    .unwrap();
    let o = loadlab()
        .args(["lab", "run"])
        .arg(dir.join("plan.toml"))
        .arg("--out")
        .arg(dir.join("escapes"))
        .output()
        .unwrap();
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("the process exporter's own CPU") && said.contains("?]0;pwned??[2J"), "{said}");
    assert!(!said.contains('\u{1b}') && !said.contains('\u{7}') && said.len() < 4_000, "{} bytes", said.len());
}
