//! Every command that runs for a while ends the same way on a signal: the first SIGINT or
//! SIGTERM stops it (after writing what it has), the second at once, and the exit status is 130
//! or 143, 128 plus the signal's number, as a shell reports a process killed by it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal::{self, SIGINT, SIGTERM};

use crate::support::{loadlab, origin, origin_metric, origin_served, stdout, tempdir, Watched};

/// A command as a case: how to start it, and when it is busy enough to be stopped.
struct Case {
    name: &'static str,
    command: fn(&str, &Path) -> Command,
    ready: fn(&Watched, &str, &Path) -> bool,
    /// What it wrote, checked after it stopped.
    wrote: fn(&Watched, &Path),
}

fn attack(url: &str, dir: &Path) -> Command {
    let mut c = loadlab();
    c.args(["attack", url, "--rate", "50", "--duration", "60s", "-o"]).arg(dir.join("out.llr"));
    c
}

fn lab(url: &str, dir: &Path) -> Command {
    let plan = dir.join("plan.toml");
    let text = format!("[targets.web]\nurl = \"{url}\"\n[load]\nrate = [20, 40]\nduration = \"60s\"\n");
    std::fs::write(&plan, text).unwrap();
    let mut c = loadlab();
    c.args(["lab", "run"]).arg(&plan).arg("--out").arg(dir.join("out"));
    c
}

fn calibrate(url: &str, dir: &Path) -> Command {
    let plan = dir.join("plan.toml");
    let text = format!("[targets.web]\nurl = \"{url}\"\n[load]\nrate = 20\nduration = \"60s\"\n");
    std::fs::write(&plan, text).unwrap();
    let mut c = loadlab();
    c.args(["lab", "calibrate"]).arg(&plan).args(["--runs", "3", "--out"]).arg(dir.join("out"));
    c
}

fn demo(_: &str, dir: &Path) -> Command {
    let mut c = loadlab();
    c.args(["demo", "--rates", "20", "--step", "60s", "--out"]).arg(dir.join("out"));
    c
}

fn follow(_: &str, _: &Path) -> Command {
    // Its input is a pipe nobody writes to: it reports (nothing yet) every 100 ms until stopped.
    let mut c = loadlab();
    c.args(["report", "--every", "100ms", "-"]).stdin(std::process::Stdio::piped());
    c
}

fn serve(_: &str, _: &Path) -> Command {
    let mut c = loadlab();
    c.args(["origin", "--listen", "127.0.0.1:0"]);
    c
}

/// An attack or lab is ready once the origin has answered some of its requests.
fn sending(_: &Watched, url: &str, _: &Path) -> bool {
    origin_served(url) >= 10
}

fn nothing(_: &Watched, _: &Path) {}

/// The results file is whole: every record read, and the end of the run marked.
fn whole_results(_: &Watched, dir: &Path) {
    let mut reader = results::Reader::new(std::fs::File::open(dir.join("out.llr")).unwrap(), "out");
    let (mut records, mut ended) = (0, false);
    while let Some(item) = reader.next().unwrap() {
        match item {
            results::Item::Record(_) => records += 1,
            results::Item::End(_) => ended = true,
            results::Item::Run(_) => {}
        }
    }
    assert!(records >= 10 && ended, "{records} records, ended {ended}");
}

fn reports(_: &Watched, dir: &Path) {
    let md = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(md.contains("**Interrupted"), "{md}");
}

/// The lab running has its reports; no calibration is made of labs cut short, and it says so once.
fn first_lab(w: &Watched, dir: &Path) {
    let md = std::fs::read_to_string(dir.join("out/lab-1/report.md")).unwrap();
    assert!(md.contains("**Interrupted"), "{md}");
    assert!(!dir.join("out/lab-2").exists() && !dir.join("out/calibration.json").exists());
    assert!(w.stderr().contains("calibration stopped in lab 1 of 3: no calibration.json"), "{}", w.stderr());
    assert_eq!(w.stderr().matches("stopping after").count(), 1, "{}", w.stderr());
}

fn last_report(w: &Watched, _: &Path) {
    assert!(w.stdout().matches("Requests").count() >= 2, "{}", w.stdout());
}

const CASES: &[Case] = &[
    Case { name: "attack", command: attack, ready: sending, wrote: whole_results },
    Case { name: "lab run", command: lab, ready: sending, wrote: reports },
    Case { name: "lab calibrate", command: calibrate, ready: sending, wrote: first_lab },
    Case { name: "demo", command: demo, ready: |w, _, _| w.stdout().contains("running demo"), wrote: reports },
    Case {
        name: "report --every",
        command: follow,
        ready: |w, _, _| w.stdout().contains("Requests"),
        wrote: last_report,
    },
    Case { name: "origin", command: serve, ready: |w, _, _| w.stderr().contains("serving on"), wrote: nothing },
];

#[test]
fn every_long_command_exits_130_on_sigint_and_143_on_sigterm_after_writing_what_it_has() {
    for case in CASES {
        for (signal, code) in [(SIGINT, 130), (SIGTERM, 143)] {
            let what = format!("{} on {signal}", case.name);
            let (_origin, url) = origin(None);
            let dir = tempdir("signals");
            let mut w = Watched::spawn((case.command)(&url, &dir));
            w.wait_until(&what, |w| (case.ready)(w, &url, &dir));
            let sent = Instant::now();
            w.signal(signal);
            assert_eq!(w.exit_code(), Some(code), "{what}: {}", w.stderr());
            assert!(sent.elapsed() < Duration::from_secs(20), "{what}: took {:?}", sent.elapsed());
            (case.wrote)(&w, &dir);
        }
    }
}

#[test]
fn a_second_signal_stops_at_once() {
    // Requests that take a minute: the first signal would wait for them, the second does not.
    let dir = tempdir("second-signal");
    let recipe = dir.join("slow.json");
    std::fs::write(&recipe, r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "60s"}]}"#)
        .unwrap();
    for (case, signals) in [(&CASES[0], [SIGINT, SIGINT]), (&CASES[1], [SIGTERM, SIGINT])] {
        let what = format!("{} on {signals:?}", case.name);
        let (_slow, url) = origin(Some(&recipe));
        let mut w = Watched::spawn((case.command)(&url, &dir));
        w.wait_until(&what, |_| origin_metric(&url, "loadlab_origin_in_flight") >= 5);
        let sent = Instant::now();
        for (i, s) in signals.iter().enumerate() {
            w.signal(*s);
            // The second once the first was heard (the command says so).
            if i + 1 < signals.len() {
                w.wait_until(&what, |w| w.stderr().contains("again to stop at once"));
            }
        }
        let first: Signal = signals[0];
        assert_eq!(w.exit_code(), Some(if first == SIGINT { 130 } else { 143 }), "{what}: {}", w.stderr());
        assert!(sent.elapsed() < Duration::from_secs(20), "{what}: took {:?}", sent.elapsed());
    }
}

#[test]
fn a_closed_stderr_does_not_keep_a_signal_from_stopping_the_command() {
    // Whoever started the origin read its address and closed the pipe: what it says on the
    // signal goes nowhere, and it must stop all the same.
    use std::io::{BufRead, BufReader};
    let mut child =
        loadlab().args(["origin", "--listen", "127.0.0.1:0"]).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("serving on"), "{line}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), SIGINT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running 20 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
}

#[test]
fn a_closed_models_stall_is_said_with_the_percentiles_it_hid() {
    // Four connections back to back against an origin stopped for 1 s mid-run: four requests
    // wait a second and no other is sent meanwhile, so the raw p99 hides it. The report says
    // so, with the latencies corrected for the requests the stall kept from being sent.
    let d = tempdir("closed-stall");
    std::fs::write(d.join("fast.json"), r#"{"route": "/*", "body": "x"}"#).unwrap();
    let (origin, url) = origin(Some(&d.join("fast.json")));
    let run = d.join("run.llr");
    let mut attack = loadlab()
        .args(["attack", &url, "--connections", "4", "--duration", "4s", "-o"])
        .arg(&run)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while origin_served(&url) < 200 {
        assert!(std::time::Instant::now() < deadline, "the origin never answered");
        assert!(attack.try_wait().unwrap().is_none(), "the attack ended before the stall");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    origin.signal(nix::sys::signal::Signal::SIGSTOP);
    // The pause is the stimulus.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    origin.signal(nix::sys::signal::Signal::SIGCONT);
    assert!(attack.wait().unwrap().success());
    let o = loadlab().arg("report").arg(&run).output().unwrap();
    let text = stdout(&o);
    assert!(text.contains("no answers for 1.") && text.contains("a closed model's percentiles hide a stall"), "{text}");
    let corrected = text.lines().find(|l| l.starts_with("Corrected")).unwrap_or_else(|| panic!("{text}"));
    // The corrected p99 is hundreds of milliseconds; the raw one is not.
    let o = loadlab().args(["report", "--type", "json"]).arg(&run).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let raw_p99 = json["latencies"]["99th"].as_u64().unwrap();
    let fixed_p99 = json["hidden_stall"]["corrected_latencies"]["99th"].as_u64().unwrap();
    assert!(
        raw_p99 < 100_000_000 && fixed_p99 > 100_000_000,
        "raw {raw_p99} ns, corrected {fixed_p99} ns: {corrected}"
    );
    assert!(json["hidden_stall"]["would_have_waited"].as_u64().unwrap() > 100, "{json}");
}

#[test]
fn connections_a_full_accept_queue_held_are_said_in_the_report() {
    // A server with a listen queue of 2, stopped for 1.5 s under an open model: the new
    // connections meanwhile overflow its queue and wait for their SYN's retransmission. The
    // report says that is what the tail is made of.
    let d = tempdir("accept-queue");
    std::fs::write(
        d.join("server.py"),
        "import sys\nfrom http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n\
         class H(BaseHTTPRequestHandler):\n    protocol_version = 'HTTP/1.1'\n    def do_GET(self):\n\
         \x20       self.send_response(200); self.send_header('Content-Length', '1'); self.end_headers(); self.wfile.write(b'x')\n\
         \x20       open(sys.argv[1], 'a').close()\n\
         \x20   def log_message(self, *a): pass\n\
         class S(ThreadingHTTPServer):\n    request_queue_size = 2\n    daemon_threads = True\n\
         s = S(('127.0.0.1', 0), H)\nprint(s.server_address[1], flush=True)\ns.serve_forever()\n",
    )
    .unwrap();
    let mut server = Command::new("python3")
        .arg(d.join("server.py"))
        .arg(d.join("served"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut port).unwrap();
    let url = format!("http://127.0.0.1:{}/", port.trim());
    let run = d.join("run.llr");
    let mut attack = loadlab()
        .args(["attack", &url, "--rate", "100", "--duration", "4s", "--timeout", "20s", "-o"])
        .arg(&run)
        .spawn()
        .unwrap();
    // Once the server has answered (it marks its first answer), stop it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.join("served").exists() {
        assert!(Instant::now() < deadline, "the server never answered");
        assert!(attack.try_wait().unwrap().is_none(), "the attack ended before the stall");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(server.id() as i32);
    nix::sys::signal::kill(pid, Signal::SIGSTOP).unwrap();
    // The pause is the stimulus.
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(pid, Signal::SIGCONT).unwrap();
    assert!(attack.wait().unwrap().success());
    let _ = server.kill();
    let _ = server.wait();
    let text = stdout(&loadlab().arg("report").arg(&run).output().unwrap());
    let line = text.lines().find(|l| l.starts_with("Connect ")).unwrap_or_else(|| panic!("no Connect line: {text}"));
    assert!(line.contains("for the target to accept: its listen queue overflowed"), "{line}");
}
