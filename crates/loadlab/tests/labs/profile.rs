//! Profiles of real processes under load: a Go target built here, profiled with linux-perf and
//! over its pprof endpoint, and the conditions that keep a profile from being taken.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::support::{loadlab, stderr, tempdir};

/// The burn target (burn/burn.go), built once with Go (frame pointers, symbols), and a
/// stripped build of it.
pub(crate) fn burn(stripped: bool) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let dir = tempdir("burn-build");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/labs/burn/burn.go");
        for (name, flags) in [("burn", ""), ("burn-stripped", "-s -w")] {
            let o = std::process::Command::new("go")
                .args(["build", "-ldflags", flags, "-o"])
                .arg(dir.join(name))
                .arg(&src)
                .current_dir(&dir)
                .output()
                .expect("go is needed for this test (scripts/test-all installs golang-go)");
            assert!(o.status.success(), "go build: {}", stderr(&o));
        }
        dir.keep()
    });
    dir.join(if stripped { "burn-stripped" } else { "burn" })
}

/// Checks that perf can profile here at all, and says loudly why not.
pub(crate) fn perf_works() {
    let o = std::process::Command::new("perf").args(["record", "-q", "-o", "/dev/null", "--", "true"]).output();
    let o = o.expect("perf is needed for this test (scripts/test-all installs linux-perf)");
    assert!(
        o.status.success(),
        "this machine refuses perf (a container without CAP_PERFMON?): {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `plan` (with `{burn}` filled) in `dir`; returns the exit code, lab.json and the out dir.
fn run_lab(dir: &Path, plan: &str, stripped: bool) -> (i32, serde_json::Value, PathBuf) {
    let (code, lab, out, _) = run_lab_said(dir, plan, stripped);
    (code, lab, out)
}

/// As [`run_lab`], with what the lab said on stderr.
fn run_lab_said(dir: &Path, plan: &str, stripped: bool) -> (i32, serde_json::Value, PathBuf, String) {
    let plan = plan.replace("{burn}", &burn(stripped).display().to_string());
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let out = dir.join("out");
    let o = loadlab().args(["lab", "run"]).arg(dir.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    let json = std::fs::read(out.join("lab.json")).unwrap_or_else(|e| panic!("no lab.json ({e}): {}", stderr(&o)));
    (o.status.code().unwrap_or(-1), serde_json::from_slice(&json).unwrap(), out, stderr(&o))
}

const TARGET: &str = "[targets.burn]\nurl = \"http://127.0.0.1:{port}/\"\nstart = [\"{burn}\", \"127.0.0.1:{port}\"]\n";

/// µs of CPU per request in functions whose name contains `name`, from a step's top table.
fn cost(step: &serde_json::Value, name: &str) -> f64 {
    let top = step["profile"]["top"].as_array().unwrap_or_else(|| panic!("no profile: {step}"));
    top.iter().filter(|f| f["name"].as_str().unwrap().contains(name)).map(|f| f["total_us"].as_f64().unwrap()).sum()
}

fn step<'a>(lab: &'a serde_json::Value, variant: &str) -> &'a serde_json::Value {
    let points = lab["matrix"]["points"].as_array().unwrap();
    let p = points.iter().position(|p| p["variant"] == variant).unwrap();
    lab["steps"].as_array().unwrap().iter().find(|s| s["point"] == p).unwrap()
}

#[test]
fn perf_profiles_name_the_function_that_costs_and_the_differential_names_it_first() {
    perf_works();
    let d = tempdir("profile-perf");
    let plan = format!(
        "name = \"burn\"\n{TARGET}profile = true\n[load]\nrate = 40\nduration = \"3s\"\nwarmup = \"500ms\"\npause = \"200ms\"\n\
         [profile]\nfrequency = 499\n\
         [[variants]]\nname = \"even\"\nheaders = [\"X-Alpha: 1500\", \"X-Beta: 1500\"]\n\
         [[variants]]\nname = \"beta4\"\nheaders = [\"X-Alpha: 1500\", \"X-Beta: 6000\"]\n\
         [[hypotheses]]\nclaim = \"even spends less in burnBeta\"\nmetric = \"p50\"\nlower = \"even\"\nthan = \"beta4\"\nwhere = \"burnBeta\"\n"
    );
    let (code, lab, out, said) = run_lab_said(&d, &plan, false);
    assert_eq!(code, 0, "{}", lab["findings"]);
    // The answer is the lab's last line, as in the report's summary.
    let last = said.lines().rfind(|l| !l.starts_with("loadlab: wrote")).unwrap();
    assert!(last.starts_with("loadlab: \"even spends less in burnBeta\": "), "{said}");
    assert!(
        last.contains(" In burnBeta: supported (e.g. ") && last.contains(" of CPU per request, ratio 0."),
        "{last}"
    );
    let (even, beta4) = (step(&lab, "even"), step(&lab, "beta4"));
    for s in [even, beta4] {
        let p = &s["profile"];
        assert_eq!(p["source"], "perf", "{s}");
        assert!(p["samples"].as_u64().unwrap() > 50, "{p}");
        assert!(out.join(p["svg"].as_str().unwrap()).exists() && out.join(p["folded"].as_str().unwrap()).exists());
        // The two functions are where the CPU goes.
        let burnt = cost(s, "main.burnAlpha") + cost(s, "main.burnBeta");
        assert!(burnt > 0.6 * p["us_per_request"].as_f64().unwrap(), "{p}");
    }
    // Built in: beta does four times alpha's rounds in beta4, as many in even.
    let even_ratio = cost(even, "main.burnBeta") / cost(even, "main.burnAlpha");
    assert!((0.6..1.7).contains(&even_ratio), "even: beta/alpha {even_ratio}");
    let across = cost(beta4, "main.burnBeta") / cost(even, "main.burnBeta");
    assert!((2.5..6.0).contains(&across), "burnBeta beta4/even {across}");
    let alpha = cost(beta4, "main.burnAlpha") / cost(even, "main.burnAlpha");
    assert!((0.6..1.7).contains(&alpha), "burnAlpha beta4/even {alpha}");
    // The hypothesis, judged on the function it names.
    let f = &lab["findings"]["hypotheses"][0]["function"];
    assert_eq!(f["finding"], "supported", "{f}");
    // The report: the differential names burnBeta first; the flame graphs are embedded.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let diff = md.split("### What changed").nth(1).unwrap_or_else(|| panic!("{md}"));
    let first = diff.lines().find(|l| l.starts_with("| `")).unwrap();
    assert!(first.contains("main.burnBeta"), "{diff}");
    assert!(md.contains("burnBeta: ") && md.contains("supported"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.matches("<iframe class=\"flame\" src=\"data:image/svg+xml;base64,").count() >= 3,
        "two profiles and a diff"
    );
    // lab compare of two labs: the one whose requests burn beta four times names it first.
    let one = |name: &str, beta: u32| {
        let dir = d.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let plan = format!(
            "{TARGET}profile = true\n[load]\nrate = 40\nduration = \"3s\"\nwarmup = \"500ms\"\n\
             headers = [\"X-Alpha: 1500\", \"X-Beta: {beta}\"]\n[profile]\nfrequency = 499\n"
        );
        let (code, _, out) = run_lab(&dir, &plan, false);
        assert_eq!(code, 0);
        out
    };
    let (old, new) = (one("old", 1500), one("new", 6000));
    let o = loadlab().args(["lab", "compare"]).arg(&old).arg(&new).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("CPU per request by function"), "{text}");
    let cmp: serde_json::Value = serde_json::from_slice(&std::fs::read(new.join("compare.json")).unwrap()).unwrap();
    let changes = &cmp["profiles"][0]["changes"];
    assert_eq!(changes[0]["name"], "main.burnBeta", "{changes}");
    assert!(changes[0]["new_us"].as_f64().unwrap() > 2.5 * changes[0]["old_us"].as_f64().unwrap(), "{changes}");
    assert!(new.join(cmp["profiles"][0]["svg"].as_str().unwrap()).exists());
}

#[test]
fn a_pprof_endpoint_is_read_as_go_writes_it() {
    let d = tempdir("profile-pprof");
    let plan = format!(
        "{TARGET}profile = \"http://127.0.0.1:{{port}}/debug/pprof/profile\"\n[load]\nrate = 40\nduration = \"3s\"\n\
         warmup = \"300ms\"\nheaders = [\"X-Alpha: 1500\", \"X-Beta: 6000\"]\n"
    );
    let (code, lab, _) = run_lab(&d, &plan, false);
    assert_eq!(code, 0);
    let s = &lab["steps"][0];
    assert_eq!(s["profile"]["source"], "pprof", "{s}");
    let (a, b) = (cost(s, "main.burnAlpha"), cost(s, "main.burnBeta"));
    // Go samples at 100 Hz: about 100 samples here, so the built-in 4 is read loosely.
    assert!(s["profile"]["samples"].as_u64().unwrap() > 40, "{s}");
    // Go's SIGPROF profile reads burnAlpha low (perf reads both alike: the test above), so only
    // the order is asked of it here.
    assert!(a > 0.0 && b > 2.0 * a, "alpha {a} beta {b}: {s}");
}

#[test]
fn a_profile_not_taken_is_one_line_and_the_lab_still_judges() {
    perf_works();
    let d = tempdir("profile-bad");
    let load = "[load]\nrate = 20\nduration = \"1s\"\nheaders = [\"X-Alpha: 3000\"]\n[slo]\nsuccess = \">= 99%\"\n";
    let case = |name: &str, target: &str, extra: &str, stripped: bool| {
        let dir = d.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        // A busy machine may leave the generator late (exit 4, said): run again, up to three times.
        let mut tries = 0;
        let (code, lab, out) = loop {
            tries += 1;
            let (code, lab, out) = run_lab(&dir, &format!("{TARGET}{target}\n{load}{extra}"), stripped);
            let limited = code == 4 && lab["findings"]["inconclusive"].to_string().contains("generator-limited");
            if !limited || tries == 3 {
                break (code, lab, out);
            }
            let _ = std::fs::remove_dir_all(&out);
        };
        assert_eq!(code, 0, "{name}: the verdict stands: {}", lab["findings"]);
        assert_eq!(lab["findings"]["cells"][0]["slo"]["verdict"], "pass", "{name}");
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        (lab["steps"][0].clone(), md)
    };
    // No perf.
    let (s, md) = case("no-perf", "profile = true", "[profile]\nperf = \"/nonexistent/perf\"\n", false);
    let why = s["profile_missing"].as_str().unwrap();
    assert!(
        why.starts_with("profile of burn not taken: perf not found") && why.contains("install linux-perf"),
        "{why}"
    );
    assert!(md.contains(why), "{md}");
    // perf refused by kernel.perf_event_paranoid (perf's own message, from a stand-in).
    let fake = d.join("perf-refused");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'Error:' >&2\necho 'Access to performance monitoring and observability operations is limited.' >&2\n\
         echo 'Consider adjusting /proc/sys/kernel/perf_event_paranoid setting' >&2\nexit 255\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (s, _) = case("paranoid", "profile = true", &format!("[profile]\nperf = \"{}\"\n", fake.display()), false);
    let why = s["profile_missing"].as_str().unwrap();
    assert!(why.contains("kernel.perf_event_paranoid is") && why.contains("set it to 1 or lower"), "{why}");
    // A pprof endpoint that answers 404, and one that answers garbage.
    let (s, _) = case("pprof-404", "profile = \"http://127.0.0.1:{port}/nope/profile\"", "", false);
    assert!(s["profile_missing"].as_str().unwrap().contains("answered 404 Not Found"), "{s}");
    let (s, _) = case("pprof-garbage", "profile = \"http://127.0.0.1:{port}/garbage\"", "", false);
    assert!(s["profile_missing"].as_str().unwrap().contains("not a pprof profile"), "{s}");
    // A stripped binary: the profile is taken, and says its symbols are missing.
    let (s, _) = case("stripped", "profile = true", "[profile]\nfrequency = 499\n", true);
    let notes = s["profile"]["notes"].to_string();
    assert!(notes.contains("symbols missing"), "{s}");
    // perf.data bounded: the profile says samples were dropped.
    let (s, _) = case("bounded", "profile = true", "[profile]\nfrequency = 999\nmax_size = \"8K\"\n", false);
    assert!(s["profile"]["notes"].to_string().contains("reached its limit of 8 KiB"), "{s}");
}

#[test]
fn a_running_target_is_profiled_by_its_process_name() {
    perf_works();
    // A process the lab did not start, found by name (a copy of burn under a name of its own,
    // so the other tests' burns are not taken with it).
    let d = tempdir("profile-process");
    let bin = d.join("burnbyname");
    std::fs::copy(burn(false), &bin).unwrap();
    let port = crate::support::free_port();
    let mut child = std::process::Command::new(&bin).arg(format!("127.0.0.1:{port}")).spawn().unwrap();
    let up = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(up.elapsed().as_secs() < 10, "burn did not listen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let plan = format!(
        "[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\nprofile = true\nprocess = \"burnbyname\"\n\
         [load]\nrate = 20\nduration = \"2s\"\nheaders = [\"X-Beta: 3000\"]\n[profile]\nfrequency = 499\n"
    );
    let (code, lab, _) = run_lab(&d, &plan, false);
    // A name no process has: one line, and the lab goes on.
    let d2 = d.join("none");
    std::fs::create_dir_all(&d2).unwrap();
    let (code2, none, _) = run_lab(&d2, &plan.replace("burnbyname", "nosuchprocess"), false);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!((code, code2), (0, 0), "{}", none["findings"]);
    let s = &lab["steps"][0];
    assert!(cost(s, "main.burnBeta") > 0.5 * s["profile"]["us_per_request"].as_f64().unwrap(), "{s}");
    // The process named is sampled too: its CPU per request from its CPU clock, over the counted
    // part, of the order the profile saw.
    let cpu_s = s["target_cpu_s"].as_f64().unwrap();
    let per_request = cpu_s * 1e6 / s["numbers"]["successes"].as_f64().unwrap();
    let profiled = s["profile"]["us_per_request"].as_f64().unwrap();
    assert!(per_request > 0.5 * profiled && per_request < 3.0 * profiled, "{per_request} against {profiled}: {s}");
    let why = none["steps"][0]["profile_missing"].as_str().unwrap();
    assert!(why.contains("no process named \"nosuchprocess\" is running"), "{why}");
}
