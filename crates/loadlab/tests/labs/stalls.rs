//! Who a stall is blamed on, both ways, with real processes stopped by SIGSTOP: a generator that
//! stops is the generator's (inconclusive, exit 4), even when its catch-up burst fills the cap on
//! requests in flight, unless what the target took for the requests sent already breaks the SLO;
//! a target that stops or slows until every worker waits is the target's (its SLO broken, exit 3).

use crate::support::{free_port, origin_served, pid_of, signal, spawn_lab, stderr, tempdir, wait_for};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// Who is stopped mid-step.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Generator,
    Target,
    Nobody,
}

struct Case {
    name: &'static str,
    /// The started origin's latency.
    latency: &'static str,
    /// The plan's `[load]` lines besides the duration and warm-up.
    load: &'static str,
    stop: Stop,
    exit: i32,
    /// Said on the lab's terminal.
    says: &'static str,
}

/// Runs the case's lab (a started origin, one 4 s step after 500 ms of warm-up, p99 < 500ms);
/// once the origin has answered 100 requests (past the warm-up), stops `case.stop` for 1.5 s.
fn run(case: &Case) -> (i32, String, String) {
    let d = tempdir(case.name);
    let port = free_port();
    std::fs::write(
        d.join("origin.json"),
        format!(
            r#"{{"route": "/*", "body": "x", "stages": [{{"at": 0, "status": 200, "latency": "{}"}}]}}"#,
            case.latency
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("plan.toml"),
        format!(
            "[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\nstart = [\"{bin}\", \"origin\", \"--listen\", \
             \"127.0.0.1:{port}\", \"--recipe\", \"origin.json\"]\n[load]\n{load}\nduration = \"4s\"\n\
             warmup = \"500ms\"\n[slo]\np99 = \"< 500ms\"\n",
            bin = env!("CARGO_BIN_EXE_loadlab"),
            load = case.load,
        ),
    )
    .unwrap();
    let out = d.join("out");
    let child = spawn_lab(&d.join("plan.toml"), &out);
    let deadline = Instant::now() + Duration::from_secs(60);
    while origin_served(&format!("http://127.0.0.1:{port}")) < 100 {
        assert!(Instant::now() < deadline, "{}: the origin never answered", case.name);
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = match case.stop {
        Stop::Generator => Some(child.id() as i32),
        Stop::Target => Some(pid_of(&["origin", &format!("127.0.0.1:{port}")]).expect("the started origin")),
        Stop::Nobody => None,
    };
    if let Some(pid) = stopped {
        signal(pid, Signal::SIGSTOP);
        // The pause is the stimulus.
        std::thread::sleep(Duration::from_millis(1500));
        signal(pid, Signal::SIGCONT);
    }
    let o = child.wait_with_output().unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    (o.status.code().unwrap_or(-1), stderr(&o), md)
}

fn check(case: Case) {
    let (code, err, md) = run(&case);
    assert_eq!(code, case.exit, "{}: {err}", case.name);
    assert!(err.contains(case.says), "{}: wanted {:?} in {err}", case.name, case.says);
    if case.exit == 4 {
        assert!(!err.contains("SLO failed") && !md.contains("FAIL"), "{}: {err}", case.name);
        assert!(md.contains("the generator stalled 1."), "{}: the report names the stall: {md}", case.name);
    } else {
        assert!(!err.contains("generator-limited"), "{}: {err}", case.name);
    }
}

#[test]
fn a_generator_stopped_with_workers_free_is_inconclusive() {
    check(Case {
        name: "generator-free",
        latency: "1ms",
        load: "rate = 40\nmax_workers = 1024",
        stop: Stop::Generator,
        exit: 4,
        says: "svc--r40-http1--1: generator-limited: the generator stalled 1.",
    });
}

#[test]
fn a_generator_stopped_is_inconclusive_though_its_catch_up_fills_the_cap() {
    // 100 ms answers at 100/s keep 10 in flight under a cap of 16; the 150 sends overdue after
    // the stall fill the cap at once, which the rule before this one read as the target's.
    check(Case {
        name: "generator-capped",
        latency: "100ms",
        load: "rate = 100\nmax_workers = 16",
        stop: Stop::Generator,
        exit: 4,
        says: "loadlab: inconclusive: svc at all: generator-limited: the generator stalled 1.",
    });
}

#[test]
fn a_generator_stopped_before_a_target_that_breaks_the_slo_alone_is_the_targets() {
    // 600 ms answers against p99 < 500ms: the requests the generator did send took 600 ms at the
    // target alone, so the SLO failed whatever its stall kept from being sent.
    check(Case {
        name: "generator-stopped-slow-target",
        latency: "600ms",
        load: "rate = 40\nmax_workers = 1024",
        stop: Stop::Generator,
        exit: 3,
        says: "SLO failed: svc",
    });
}

#[test]
fn a_target_stopped_until_every_worker_waits_is_the_targets() {
    check(Case {
        name: "target-stopped",
        latency: "100ms",
        load: "rate = 100\nmax_workers = 16",
        stop: Stop::Target,
        exit: 3,
        says: "SLO failed: svc",
    });
}

#[test]
fn a_target_slower_than_the_cap_allows_is_the_targets() {
    // 300 ms answers with 16 in flight at most serve 53/s of the 100/s asked.
    check(Case {
        name: "target-slow",
        latency: "300ms",
        load: "rate = 100\nmax_workers = 16",
        stop: Stop::Nobody,
        exit: 3,
        says: "SLO failed: svc",
    });
}

#[test]
fn a_closed_models_stall_is_judged_on_the_percentiles_it_hid() {
    // Four connections back to back: the raw p99 of a 1 ms origin stopped for 1.5 s is a few
    // milliseconds (four slow answers among thousands); the corrected one breaks the SLO.
    check(Case {
        name: "closed-stall",
        latency: "1ms",
        load: "connections = 4",
        stop: Stop::Target,
        exit: 3,
        says: "a closed model's percentiles hide a stall",
    });
}

#[test]
fn a_stalled_generator_is_inconclusive_never_the_targets_failure() {
    // The lab is stopped (SIGSTOP) for 1.5 s in the middle of its only step: when it resumes,
    // its sends leave seconds late and the responses read late. That is the generator's doing,
    // not the target's: exit 4, and nothing calls it an SLO failure or a ceiling.
    let d = tempdir("stalled");
    std::fs::write(d.join("fast.json"), r#"{"route": "/*", "body": "x"}"#).unwrap();
    std::fs::write(
        d.join("plan.toml"),
        "[targets.svc]\norigin = \"fast.json\"\n[load]\nrate = [20, 40]\nduration = \"4s\"\npause = \"100ms\"\n\
         [slo]\np99 = \"< 500ms\"\n",
    )
    .unwrap();
    let out = d.join("out");
    let child = spawn_lab(&d.join("plan.toml"), &out);
    let pid = child.id() as i32;
    wait_for(&out.join("steps/1-svc--r20-http1--1.llr"));
    std::thread::sleep(std::time::Duration::from_millis(800));
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    signal(pid, nix::sys::signal::Signal::SIGCONT);
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("svc--r20-http1--1: generator-limited: the generator stalled 1."), "{err}");
    assert!(err.contains("loadlab: inconclusive: svc at 20 req/s: generator-limited"), "{err}");
    assert!(!err.contains("SLO failed"), "{err}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let summary = &md[md.find("## Summary").unwrap()..];
    assert!(summary.starts_with("## Summary\n\n**Inconclusive: 1 verdict could not be reached.**"), "{summary}");
    assert!(!md.contains("FAIL") && !md.contains("broke the SLO"), "{md}");
    assert!(md.contains("At 20 req/s the generator was the limit"), "{md}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let cell = &lab["findings"]["cells"][0];
    assert_eq!(cell["slo"]["verdict"], "generator_limited", "{cell}");
    assert!(cell["metrics"].as_object().unwrap().is_empty(), "no numbers of the target: {cell}");
    // The step itself still says what was measured, and the generator's CPU wait was read.
    let step = &lab["steps"][0]["numbers"];
    assert!(step["lag_p99"].as_f64().unwrap() > 500.0, "{step}");
    assert!(step["cpu_wait"].as_f64().is_some(), "{step}");
}
