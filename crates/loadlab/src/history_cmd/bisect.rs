//! `loadlab history bisect`: which commit made it slower.

use super::args::HistoryBisectArgs;
use crate::bad;
use crate::shutdown::{Second, Shutdown};

pub fn run(a: HistoryBisectArgs) -> anyhow::Result<()> {
    let mut given = lab::Given::default();
    for t in &a.tags {
        given.add_tag(t).map_err(|e| bad(format!("--tag: {e}")))?;
    }
    if a.build.as_deref().is_some_and(|b| b.trim().is_empty()) {
        return Err(bad("--build: give the command that builds a commit (e.g. 'go build -o svc .'), or leave it out"));
    }
    if a.max_labs == Some(0) {
        return Err(bad("--max-labs: at least 1"));
    }
    if let Some(m) = &a.metric {
        lab::Metric::parse(m).map_err(|e| bad(format!("--metric: {e}")))?;
    }
    let history = a.at.history.clone().ok_or_else(|| {
        bad(format!(
            "no history: bisect records its labs; give --history FILE (or a postgres:// URL) or set {}",
            history::ENV
        ))
    })?;
    let out = match a.out.clone() {
        Some(out) => out,
        // Unique per run, as a lab's is: two bisects started in the same second never share one.
        None => lab::new_dir(&format!("bisect-{}", chrono::Local::now().format("%Y%m%d-%H%M%S"))).map_err(bad)?,
    };
    let request = bisect::Request {
        plan: a.plan,
        good: a.good,
        bad: a.bad,
        build: a.build,
        build_timeout: a.build_timeout,
        plan_from_working_tree: a.plan_from_working_tree,
        history,
        out: out.clone(),
        merged: a.no_first_parent,
        metric: a.metric,
        load: a.load,
        max_labs: a.max_labs,
        branch: a.branch,
        tags: given.tags,
        quick: a.quick,
    };
    // The first signal stops the lab running after its current step, and the bisect with it;
    // worktrees are removed and targets stopped either way.
    let shutdown = Shutdown::watch("stopping after the current step; the bisect ends there", Second::Abandon)?;
    let signals = bisect::Signals { stop: shutdown.stop(), abort: shutdown.now() };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let say = |line: &str| eprintln!("loadlab: {line}");
    let report = match runtime.block_on(bisect::bisect(&request, &signals, &say)) {
        Ok(r) => r,
        Err(bisect::Failure::Input(why)) => return shutdown.outcome(Err(bad(why))),
        Err(bisect::Failure::Endpoint(why)) => return shutdown.outcome(Err(anyhow::anyhow!(why))),
    };
    let md = out.join("bisect.md");
    results::files::put(&md, bisect::markdown(&report).as_bytes())?;
    eprintln!("loadlab: wrote {}", md.display());
    println!("{}", bisect::last_line(&report));
    shutdown.outcome(crate::exit::bisect(&report.ending))
}
