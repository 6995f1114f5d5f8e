//! `loadlab lab ab`: does this branch make it slower?

use super::args::LabAbArgs;
use crate::bad;
use crate::shutdown::{Second, Shutdown};

pub fn run(a: LabAbArgs) -> anyhow::Result<()> {
    let mut given = lab::Given::default();
    for t in &a.tags {
        given.add_tag(t).map_err(|e| bad(format!("--tag: {e}")))?;
    }
    if a.build.as_deref().is_some_and(|b| b.trim().is_empty()) {
        return Err(bad("--build: give the command that builds a commit (e.g. 'go build -o svc .'), or leave it out"));
    }
    let repeats = match a.repeats.trim() {
        "auto" => ab::Repeats::Auto { most: a.most_repeats as usize },
        n => match n.parse::<usize>() {
            Ok(n) if (ab::MIN_PAIRS..=1000).contains(&n) => ab::Repeats::Fixed(n),
            _ => {
                return Err(bad(format!("--repeats {n:?}: a number of pairs from {} to 1000, or auto", ab::MIN_PAIRS)))
            }
        },
    };
    let gates = lab::Gate::parse_list(a.fail_on.as_deref().unwrap_or(lab::AB_DEFAULT))
        .map_err(|e| bad(format!("--fail-on: {e}")))?;
    let out = match a.out.clone() {
        Some(out) => out,
        None => lab::new_dir(&format!("ab-{}", chrono::Local::now().format("%Y%m%d-%H%M%S"))).map_err(bad)?,
    };
    let undecided_ok = a.undecided_ok;
    let request = ab::Request {
        plan: a.plan,
        base: a.base,
        head: a.head,
        build: a.build,
        build_timeout: a.build_timeout,
        plan_from_working_tree: a.plan_from_working_tree,
        repeats,
        gates,
        history: a.history,
        branch: a.branch,
        tags: given.tags,
        out: out.clone(),
        lab_charts: a.lab_charts,
        one_at_a_time: a.one_at_a_time,
    };
    // The first signal stops the lab running after its current step, and the run with it;
    // worktrees are removed and targets stopped either way.
    let shutdown = Shutdown::watch("stopping after the current step; lab ab ends there", Second::Abandon)?;
    let signals = ab::Signals { stop: shutdown.stop(), abort: shutdown.now() };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let say = |line: &str| eprintln!("loadlab: {line}");
    let (base, head) = (request.base.clone(), request.head.clone());
    let report = match runtime.block_on(ab::ab(&request, &signals, &say)) {
        Ok(r) => r,
        Err(ab::Failure::Input(why)) => return shutdown.outcome(Err(bad(why))),
        Err(ab::Failure::Failed(why)) => {
            // A build that failed still leaves ab.md and ab.json, saying which.
            let (md, json) = ab::failed(&base, &head, &why);
            if std::fs::create_dir_all(&out).is_ok() {
                let _ = results::files::put(&out.join("ab.md"), md.as_bytes());
                let _ = results::files::put(&out.join("ab.json"), json.as_bytes());
            }
            return shutdown.outcome(Err(anyhow::anyhow!(why)));
        }
    };
    let md = out.join("ab.md");
    results::files::put(&md, ab::markdown(&report).as_bytes())?;
    results::files::put(&out.join("ab.json"), ab::json(&report).as_bytes())?;
    eprintln!("loadlab: wrote {}", md.display());
    for d in &report.profiles {
        eprint!("{}", lab::differential_text(d));
    }
    let line = ab::last_line(&report);
    println!("{line}");
    shutdown.outcome(crate::exit::ab(&report.ending, line, undecided_ok))
}
