//! `lab ab` on a real repository: the Go service of examples/007-which-commit, whose work per
//! request is a constant in one file; a commit that changes only a comment, one that doubles the
//! work, one that does not build, and one whose target dies under load.

use std::path::Path;
use std::process::Command;

use crate::bisect::{git, source};
use crate::support::*;

const PLAN: &str = "name = \"svc\"\n[targets.svc]\nurl = \"http://127.0.0.1:{port}/\"\n\
                    start = [\"./svc\", \"127.0.0.1:{port}\"]\n[load]\nrate = 40\nduration = \"1s\"\nwarmup = \"300ms\"\n";

/// Commits: 0 the service, 1 a comment, 2 twice the work per request, 3 does not build; and
/// 4 (on 1) a plan whose target dies a second after it starts. Returns the hashes.
fn repository(repo: &Path, plan: &str) -> Vec<String> {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["config", "user.email", "ci@example.com"]);
    git(repo, &["config", "user.name", "CI"]);
    let write = |name: &str, text: &str| std::fs::write(repo.join(name), text).unwrap();
    let (main, work) = (source("main.go"), source("work.go"));
    write("go.mod", &source("go.mod"));
    write("main.go", &main);
    write("work.go", &work);
    write(".gitignore", "svc\n");
    write("plan.toml", plan);
    let mut hashes = Vec::new();
    let mut commit = |subject: &str| {
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", subject]);
        hashes.push(git(repo, &["rev-parse", "HEAD"]));
    };
    commit("svc: a service that hashes");
    write("work.go", &work.replace("// How many SHA-256 rounds", "// How many rounds of SHA-256"));
    commit("work: a comment reworded");
    write("work.go", &work.replace("rounds = 10000", "rounds = 20000"));
    commit("work: twice the rounds");
    write("main.go", &main.replace("func main() {", "func main( {"));
    commit("main: a typo that does not build");
    git(repo, &["checkout", "-q", "HEAD~2"]);
    write("plan.toml", &plan.replace("start = [\"./svc\"", "start = [\"timeout\", \"1\", \"./svc\""));
    commit("plan: a service that stops after a second");
    git(repo, &["checkout", "-q", "main"]);
    hashes
}

fn ab(repo: &Path, base: &str, head: &str, out: &Path, extra: &[&str]) -> Command {
    let mut c = loadlab();
    c.current_dir(repo)
        .args(["lab", "ab", "plan.toml", base, head, "--build", "go build -o svc .", "--fail-on", "target_cpu>+5%"])
        .arg("--out")
        .arg(out)
        .args(extra)
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .env_remove("LOADLAB_HISTORY");
    c
}

/// Nothing left behind: no worktree, no service, the repository's tree and HEAD as they were.
fn nothing_left(repo: &Path) {
    assert_eq!(git(repo, &["worktree", "list"]).lines().count(), 1, "{}", git(repo, &["worktree", "list"]));
    assert_eq!(pid_of(&["loadlab-ab-", "127.0.0.1:"]), None, "a service still runs");
    assert_eq!(git(repo, &["status", "--porcelain"]), "", "the tree was touched");
    assert_eq!(git(repo, &["rev-parse", "--abbrev-ref", "HEAD"]), "main");
}

#[test]
fn ab_fails_a_head_that_does_more_work_passes_a_comment_and_leaves_nothing_behind() {
    let d = tempdir("ab");
    let repo = d.join("repo");
    let h = repository(&repo, PLAN);
    let db = d.join("history.db");

    // Twice the work per request: red, on the gate's metric, with its interval, in a few pairs
    // (the looks stop at the first that shows it). Every lab recorded with its commit, off the
    // line.
    let slower = d.join("slower");
    let db_arg = db.to_string_lossy().into_owned();
    let o = ab(&repo, &h[0], &h[2], &slower, &["--most-repeats", "8", "--history", &db_arg]).output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(3), "{out}\n{err}");
    assert!(out.starts_with("head is slower: target_cpu +"), "{out}");
    assert!(out.contains("at 40 req/s") && out.contains("(gate +5%)"), "{out}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(slower.join("ab.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], "worse", "{json}");
    assert_eq!(json["base"]["commit"], h[0].as_str());
    assert_eq!(json["head"]["commit"], h[2].as_str());
    let cpu = json["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "target_cpu").unwrap();
    assert!(cpu["change_pct"].as_f64().unwrap() > 30.0, "{cpu}");
    assert_eq!(cpu["said"], "worse");
    // Both builds at once (their targets are commands the plan starts), which one started first
    // alternating: base in the first pair, head in the second.
    assert_eq!(json["pairing"]["how"], "at_once", "{json}");
    let sides: Vec<&str> = json["labs"].as_array().unwrap().iter().map(|l| l[0].as_str().unwrap()).collect();
    assert_eq!(&sides[..4], ["base", "head", "head", "base"], "{sides:?}");
    // A pair's two labs took each step at the same moments, and each counted the other's
    // service as part of the run, not as other processes keeping the machine busy.
    let lab = |n: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(slower.join("labs").join(n).join("lab.json")).unwrap()).unwrap()
    };
    let step_at =
        |l: &serde_json::Value| l["started_unix_s"].as_f64().unwrap() + l["steps"][0]["started_s"].as_f64().unwrap();
    let (a, b) = (lab("01-base"), lab("02-head"));
    assert!((step_at(&a) - step_at(&b)).abs() < 0.25, "{} against {}", step_at(&a), step_at(&b));
    assert_eq!(a["placement"], b["placement"], "one placement for both");
    for l in [&a, &b] {
        let m = &l["steps"][0]["machine"];
        assert!(m["target_pct"].as_f64().is_some_and(|t| t > 0.0), "{m}");
    }
    assert!(slower.join("build-base.log").is_file() && slower.join("build-head.log").is_file());
    // Each lab brief (report.md and lab.json, no charts): ab.md is the run's report.
    let first = slower.join("labs/01-base");
    assert!(first.join("report.md").is_file() && first.join("lab.json").is_file());
    assert!(!first.join("charts").exists() && !first.join("report.html").exists());
    let md = std::fs::read_to_string(slower.join("ab.md")).unwrap();
    assert!(md.contains("**WORSE**") && md.contains("paired t"), "{md}");
    assert!(md.contains("**How it was judged.** Both builds at once: each pair is one lab of each"), "{md}");
    assert!(md.contains("## What next") && md.contains("`profile = true` in the plan"), "{md}");
    let show = |extra: &[&str]| {
        let o = loadlab()
            .args(["history", "show", "--json", "--metric", "target_cpu", "--history"])
            .arg(&db)
            .args(extra)
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    assert!(show(&[])["series"].as_array().unwrap().is_empty(), "ab's labs are not a line");
    let commits: Vec<String> = show(&["--off-line"])["series"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["commit"].as_str().map(str::to_owned))
        .collect();
    assert!(commits.contains(&h[0]) && commits.contains(&h[2]), "{commits:?}");
    // ABBA pairs are not a line of commits: shown, never a change point.
    for s in show(&["--off-line"])["series"].as_array().unwrap() {
        assert!(s["changes"].as_array().is_none_or(|c| c.is_empty()), "{s}");
    }
    nothing_left(&repo);

    // The same --out again: refused, the first run's labs kept.
    let o = ab(&repo, &h[0], &h[2], &slower, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds a previous lab ab"), "{}", stderr(&o));
    assert!(slower.join("ab.json").is_file());

    // A commit that changes only a comment: nothing past the gate, and what it could see. At 3
    // pairs a noisy cell may still be undecided: never green by default (exit 4), 0 when asked.
    let same = d.join("same");
    let o = ab(&repo, &h[0], &h[1], &same, &["--repeats", "3"]).output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    let decided = out.starts_with("no change past the gates (this run would have seen +");
    let undecided = out.starts_with("could not decide ") && out.contains("in 3 pairs: ");
    assert!(decided || undecided, "{out}\n{err}");
    assert_eq!(o.status.code(), Some(if decided { 0 } else { 4 }), "{out}\n{err}");
    assert!(!undecided || out.contains("nothing past the gates so far"), "{out}");
    let md = std::fs::read_to_string(same.join("ab.md")).unwrap();
    assert!(!undecided || md.contains("is undecided after 3 pairs: "), "{md}");
    assert!(!decided || out.contains("or more in target_cpu"), "{out}");
    let ab_json: serde_json::Value = serde_json::from_slice(&std::fs::read(same.join("ab.json")).unwrap()).unwrap();
    assert_eq!(ab_json["verdict"], if decided { "no_change" } else { "undecided" });
    // One lab at a time, as asked, five pairs: enough for loadlab's own CPU per request to serve
    // as the machine's measure.
    let same_ok = d.join("same-ok");
    let args = ["--repeats", "5", "--undecided-ok", "--lab-charts", "--one-at-a-time"];
    let o = ab(&repo, &h[0], &h[1], &same_ok, &args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(same_ok.join("ab.json")).unwrap()).unwrap();
    let cpu = json["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "target_cpu").unwrap();
    let machine = &cpu["machine"];
    assert!(machine["used"].as_bool().unwrap() || machine["not_used"].is_string(), "{cpu}");
    assert!(machine["unadjusted_change_pct"].is_number() && machine["own_change_pct"].is_number(), "{cpu}");
    let md = std::fs::read_to_string(same_ok.join("ab.md")).unwrap();
    assert!(md.contains("## The machine's moment") && md.contains("- target_cpu at 40 req/s"), "{md}");
    assert!(
        md.contains("One build at a time: pairs of labs in ABBA order") && md.contains("(--one-at-a-time)"),
        "{md}"
    );
    assert!(same_ok.join("labs/01-base/report.html").is_file() && same_ok.join("labs/01-base/charts").is_dir());
    nothing_left(&repo);

    // A head that does not build: exit 1, naming its log.
    let o = ab(&repo, &h[0], &h[3], &d.join("broken"), &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("its build failed") && stderr(&o).contains("build-head.log"), "{}", stderr(&o));
    // Its ab.md and ab.json say so, for the CI job that prints them whatever happened.
    let md = std::fs::read_to_string(d.join("broken/ab.md")).unwrap();
    assert!(md.contains("**no verdict: ") && md.contains("its build failed"), "{md}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("broken/ab.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], "failed");
    nothing_left(&repo);

    // Stopped by SIGTERM in its second pair: 143, and nothing left behind.
    let mut stopped = Watched::spawn(ab(&repo, &h[0], &h[2], &d.join("stopped"), &[]));
    stopped.wait_until("its second pair starts", |w| w.stderr().contains("ab: pair 2 at once"));
    stopped.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, err) = stopped.finish();
    assert_eq!(code, Some(143), "{err}");
    nothing_left(&repo);
}

#[test]
fn ab_says_it_could_not_tell_when_a_target_dies_and_refuses_bad_input() {
    let d = tempdir("ab-dies");
    let repo = d.join("repo");
    let h = repository(&repo, PLAN);
    let o = ab(&repo, "nosuchrev", &h[1], &d.join("x"), &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("BASE nosuchrev: git knows no such commit"), "{}", stderr(&o));
    let o = ab(&repo, &h[0], &h[1], &d.join("x"), &["--repeats", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--repeats"), "{}", stderr(&o));
    // The head's target stops a second after it starts, in its first step.
    let o = ab(&repo, &h[1], &h[4], &d.join("dies"), &["--repeats", "3"]).output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(4), "{out}\n{err}");
    assert!(out.starts_with("could not tell: head's target died"), "{out}");
    let md = std::fs::read_to_string(d.join("dies/ab.md")).unwrap();
    assert!(md.contains("plan differs between base and head"), "{md}");
    nothing_left(&repo);
}

#[test]
fn ab_runs_one_build_at_a_time_where_both_at_once_would_crowd_the_cpus() {
    // 600 req/s of the service: about two thirds of a CPU for one build, more than the one CPU
    // both builds' targets share at once.
    let d = tempdir("ab-crowded");
    let repo = d.join("repo");
    let h = repository(&repo, &PLAN.replace("rate = 40", "rate = 600"));
    let out = d.join("out");
    let o = ab(&repo, &h[0], &h[1], &out, &["--repeats", "3", "--undecided-ok"]).output().unwrap();
    let (said, err) = (stdout(&o), stderr(&o));
    assert!(matches!(o.status.code(), Some(0 | 3)), "{said}\n{err}");
    assert!(err.contains("ab: both builds at once used ") && err.contains("one build at a time instead"), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("ab.json")).unwrap()).unwrap();
    assert_eq!(json["pairing"]["how"], "one_at_a_time", "{json}");
    assert!(json["pairing"]["why"].as_str().unwrap().contains("each would wait for the other's work"), "{json}");
    // The pair run at once is kept, not counted: three pairs one at a time after it.
    assert_eq!(json["pairs"], 3, "{json}");
    let sides: Vec<&str> = json["labs"].as_array().unwrap().iter().map(|l| l[0].as_str().unwrap()).collect();
    assert_eq!(sides.len(), 8, "{sides:?}");
    let md = std::fs::read_to_string(out.join("ab.md")).unwrap();
    assert!(
        md.contains("One build at a time: pairs of labs in ABBA order") && md.contains("its labs are 01 and 02"),
        "{md}"
    );
    nothing_left(&repo);
}

#[test]
fn ab_with_profiles_says_where_the_cpu_per_request_grew() {
    crate::profile::perf_works();
    let d = tempdir("ab-profile");
    let repo = d.join("repo");
    // Sampled often enough that a 1 s step of a light service holds a profile.
    let h = repository(&repo, &PLAN.replace("[load]", "profile = true\n[profile]\nfrequency = 499\n[load]"));
    let out = d.join("out");
    let o = ab(&repo, &h[0], &h[2], &out, &["--repeats", "3"]).output().unwrap();
    let (said, err) = (stdout(&o), stderr(&o));
    assert!(matches!(o.status.code(), Some(0 | 3 | 4)), "{said}\n{err}");
    // The differential of head's first profile against base's: the hashing grew. Among the
    // first three, not first: a step holds a few dozen samples, and on a busy machine the
    // kernel's switch back to the target (`finish_task_switch`) can take the first row.
    let md = std::fs::read_to_string(out.join("ab.md")).unwrap();
    let diff = md.split("### What changed: svc at ").nth(1).unwrap_or_else(|| panic!("{md}"));
    let rows: Vec<&str> = diff.lines().filter(|l| l.starts_with("| `")).take(3).collect();
    assert!(
        rows.iter().any(|r| r.contains("sha256") && r.split('|').nth(4).is_some_and(|c| c.contains('+'))),
        "{diff}"
    );
    let svg = diff.split("[differential flame graph](").nth(1).unwrap().split(')').next().unwrap();
    assert!(out.join(svg).is_file(), "{svg}");
    assert!(err.contains("CPU per request by function"), "{err}");
    nothing_left(&repo);
}
