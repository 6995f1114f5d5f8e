//! `loadlab lab`: runs a plan (or a capacity search built from flags) and writes its reports.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lab::experiment::{Event, RunOptions};
use lab::plan::Plan;
use tokio_util::sync::CancellationToken;

use crate::cli::{LabCapacityArgs, LabCommand, LabRunArgs, LiveArgs};
use crate::{bad, Inconclusive, VerdictFailed};

pub fn run(c: LabCommand) -> anyhow::Result<()> {
    match c {
        LabCommand::Run(a) => run_plan(a),
        LabCommand::Capacity(a) => capacity(a),
    }
}

fn run_plan(a: LabRunArgs) -> anyhow::Result<()> {
    let plan = lab::plan::load(&a.plan).map_err(|e| bad(e.to_string()))?;
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a.plan.file_stem().map_or("plan".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(format!("lab-{stem}"))
    });
    execute(&plan, &out, a.quick, &a.live)
}

fn capacity(a: LabCapacityArgs) -> anyhow::Result<()> {
    // The same plan a file would give: one running target, the SLO, a [capacity] table.
    let mut text = format!("name = \"capacity of {}\"\n[targets.target]\nurl = {:?}\n", a.url, a.url);
    text += &format!("[load]\nprotocol = {:?}\n[slo]\n", a.protocol);
    for clause in a.slo.split(',').filter(|c| !c.trim().is_empty()) {
        let c = clause.trim();
        let at =
            c.find(['<', '>']).ok_or_else(|| bad(format!("--slo: {c:?}: expected METRIC<VALUE or METRIC>=VALUE")))?;
        text += &format!("{} = {:?}\n", c[..at].trim(), c[at..].trim());
    }
    text += &format!(
        "[capacity]\nstart = {:?}\nmax = {:?}\nprecision = {:?}\nprobe = \"{}ms\"\n",
        a.start,
        a.max,
        a.precision,
        a.probe.as_millis()
    );
    let plan = lab::plan::parse(&text, "--slo/--start/--max", Path::new(".")).map_err(|e| bad(e.to_string()))?;
    if plan.slo.is_empty() {
        return Err(bad("--slo: give at least one clause, e.g. p99<500ms,success>=99.9%"));
    }
    execute(&plan, &a.out, false, &a.live)
}

fn execute(plan: &Plan, out: &Path, quick: bool, live: &LiveArgs) -> anyhow::Result<()> {
    // A previous run's files would mix with this one's.
    if out.join("lab.json").exists() {
        for sub in ["steps", "samples"] {
            let _ = std::fs::remove_dir_all(out.join(sub));
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let lab = runtime.block_on(async {
        let stop = CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            eprintln!("loadlab: stopping after the current step (again to quit at once)");
            on_signal.cancel();
            let _ = tokio::signal::ctrl_c().await;
            std::process::exit(130);
        });
        let serving = crate::live_cmd::start(live, &plan.name).await?;
        let opts =
            RunOptions { out: out.to_path_buf(), quick, stop, live: serving.as_ref().map(|s| Arc::clone(&s.live)) };
        let tty = std::io::stderr().is_terminal();
        let mut show = move |e: Event<'_>| match e {
            Event::Started { index, of, id } if tty => eprint!("\r\x1b[2K[{}/{of}] {id} ...", index + 1),
            Event::Started { .. } => {}
            Event::Finished { index, of, id, numbers } => eprintln!(
                "{}[{}/{of}] {id}: {}",
                if tty { "\r\x1b[2K" } else { "" },
                index + 1,
                lab::verdict::step_line(&plan.slo, numbers)
            ),
            Event::Probe { target, rate, holds } => {
                eprintln!("capacity {target}: {rate:.0} req/s {}", if holds { "holds" } else { "breaks" })
            }
        };
        let result = lab::experiment::run(plan, &opts, &mut show).await;
        if let Some(s) = serving {
            s.finish().await;
        }
        Ok::<_, anyhow::Error>(result?)
    })?;
    let files = lab::render::write(&lab, out)?;
    for f in &files {
        eprintln!("loadlab: wrote {}", f.display());
    }
    let inconclusive = lab.inconclusive();
    for why in &inconclusive {
        eprintln!("loadlab: inconclusive: {why}");
    }
    if lab.findings.slo_failed {
        let failed: Vec<String> = lab
            .findings
            .cells
            .iter()
            .filter(|c| c.slo.failed())
            .map(|c| {
                format!("{} at {}", lab.targets[c.target].name, lab.matrix.points[c.point].label(&lab.matrix.axes))
            })
            .collect();
        return Err(anyhow::Error::new(VerdictFailed(format!("SLO failed: {}", failed.join(", ")))));
    }
    if !inconclusive.is_empty() {
        return Err(anyhow::Error::new(Inconclusive(format!(
            "inconclusive: {} verdict{} could not be reached (see above)",
            inconclusive.len(),
            if inconclusive.len() == 1 { "" } else { "s" }
        ))));
    }
    Ok(())
}
