//! `loadlab lab`: runs a plan (or a capacity search built from flags) and writes its reports.

pub mod ab;
pub mod args;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use lab::Plan;
use lab::{Event, Lab, RunOptions};

use crate::args::live::LiveArgs;
use crate::shutdown::{Second, Shutdown};
use crate::{bad, Inconclusive, Interrupted, VerdictFailed};
use args::{LabCalibrateArgs, LabCapacityArgs, LabCommand, LabGuardArgs, LabRunArgs};

pub fn run(c: LabCommand) -> anyhow::Result<()> {
    match c {
        LabCommand::Run(a) => run_plan(a),
        LabCommand::Capacity(a) => capacity(a),
        LabCommand::Compare(a) => compare(a),
        LabCommand::Calibrate(a) => calibrate(a),
        LabCommand::Ab(_) => Err(bad("lab ab is run by its own command")),
    }
}

/// Labs `lab calibrate` may run beyond --runs, in place of labs with a step that did not count.
const EXTRA_LABS: u32 = 2;

/// `lab calibrate`: N labs of one build (run here from a plan, or given), their spread written
/// to calibration.json.
fn calibrate(a: LabCalibrateArgs) -> anyhow::Result<()> {
    let from_plan = match a.inputs.as_slice() {
        [one] => one.is_file() && one.extension().is_none_or(|x| x != "json"),
        _ => false,
    };
    let (sides, out) = if from_plan {
        let mut plan = lab::load_plan(&a.inputs[0]).map_err(anyhow::Error::from)?;
        // A calibration is A/A labs of one build: no baseline to judge, nothing to record.
        (plan.baseline, plan.history) = (None, None);
        let stem = a.inputs[0].file_stem().map_or("plan".into(), |s| s.to_string_lossy().into_owned());
        let out = lab::out_dir(a.out.as_deref(), &format!("calibrate-{stem}"), a.guard.force).map_err(bad)?;
        let p = lab::preview(&plan);
        let total = p.estimate * a.runs;
        if total > a.guard.max_time {
            let span = results::duration::span;
            return Err(bad(format!(
                "{} labs would run about {}, more than --max-time {}: raise --max-time to run them",
                a.runs,
                span(total),
                span(a.guard.max_time)
            )));
        }
        let live = LiveArgs { live: None, live_public: false, live_linger: std::time::Duration::ZERO };
        // One watcher for every lab: a signal stops the lab running and no other starts.
        let shutdown = watch()?;
        let mut sides = Vec::new();
        // A lab with a step that did not count (the generator fell behind on a busy machine,
        // the target went down) adds nothing to that cell's spread: up to EXTRA_LABS more run
        // in its place, within --max-time, so that the spread is of --runs labs.
        let another = |i: u32| i < a.runs || (i < a.runs + EXTRA_LABS && p.estimate * (i + 1) <= a.guard.max_time);
        let (mut i, mut whole) = (0, 0);
        while whole < a.runs && another(i) {
            i += 1;
            let dir = out.join(format!("lab-{i}"));
            if i <= a.runs {
                eprintln!("loadlab: calibration lab {i} of {}", a.runs);
            } else {
                eprintln!("loadlab: calibration lab {i}, in place of one whose steps did not all count");
            }
            let provenance = lab::Provenance::gather(&Default::default(), &out);
            match execute(&plan, &dir, false, &a.guard, &live, Some(provenance), None, &shutdown) {
                Ok(()) => {}
                // An SLO broken or a step not counted is part of what the labs show.
                Err(e) if e.is::<VerdictFailed>() || e.is::<Inconclusive>() => {}
                Err(e) => {
                    if e.is::<Interrupted>() {
                        eprintln!(
                            "loadlab: calibration stopped in lab {i} of {}: no calibration.json; `lab calibrate` \
                             reads the labs that finished",
                            a.runs
                        );
                    }
                    return Err(e);
                }
            }
            let side = lab::load_lab_side(&dir).map_err(anyhow::Error::from)?;
            match side.cells.values().flat_map(|c| &c.excluded).next() {
                None => whole += 1,
                Some(why) => eprintln!("loadlab: calibration lab {i} does not count in full: {why}"),
            }
            sides.push(side);
        }
        (sides, out)
    } else {
        let sides = a
            .inputs
            .iter()
            .map(|f| lab::load_lab_side(f).map_err(anyhow::Error::from))
            .collect::<anyhow::Result<Vec<_>>>()?;
        (sides, a.out.clone().unwrap_or_else(|| ".".into()))
    };
    let calibration = lab::calibrate(&sides).map_err(|e| bad(e.to_string()))?;
    print!("{}", calibration.text());
    std::fs::create_dir_all(&out)?;
    eprintln!("loadlab: wrote {}", calibration.write(&out)?.display());
    Ok(())
}

fn compare(a: args::LabCompareArgs) -> anyhow::Result<()> {
    let gates =
        lab::Gate::parse_list(a.gate.fail_on.as_deref().unwrap_or("")).map_err(|e| bad(format!("--fail-on: {e}")))?;
    let old = lab::load_lab_side(&a.old).map_err(anyhow::Error::from)?;
    let new = lab::load_lab_side(&a.new).map_err(anyhow::Error::from)?;
    let out = a.out.unwrap_or_else(|| {
        if a.new.is_dir() {
            a.new.clone()
        } else {
            a.new.parent().map_or(".".into(), Path::to_path_buf)
        }
    });
    let calibration = a.calibration.as_deref().map(calibration).transpose()?;
    let rule = lab::Rule { threshold_pct: a.gate.threshold, gates, calibration };
    let (outcome, files) = lab::write_comparison(&old, &new, rule, &out)?;
    print!("{}", lab::changes_text(&outcome));
    for f in files {
        eprintln!("loadlab: wrote {}", f.display());
    }
    crate::exit::comparison(&outcome)
}

/// A calibration.json (or the folder holding it).
fn calibration(path: &Path) -> anyhow::Result<lab::Calibration> {
    lab::Calibration::read(path).map_err(|e| bad(format!("calibration: {e}")))
}

fn run_plan(a: LabRunArgs) -> anyhow::Result<()> {
    let mut plan = lab::load_plan(&a.plan).map_err(anyhow::Error::from)?;
    if let Some(r) = a.repeats {
        plan.load.repeats = r;
    }
    if let Some(p) = &a.placement {
        plan.load.placement = lab::PlacementMode::parse(p).map_err(|e| bad(format!("--placement: {e}")))?;
    }
    if let Some(url) = &a.otlp_export {
        spans::ExportTarget::new(url).map_err(|e| bad(format!("--otlp-export: {e}")))?;
        if !plan.targets.iter().any(|t| t.traces) {
            return Err(bad("--otlp-export: no target of the plan has traces = true"));
        }
        plan.traces_export = Some(url.clone());
    }
    let history = history::locate(a.history.as_deref(), plan.history.as_ref().and_then(|h| h.path.as_deref()));
    if let Some(spec) = &history {
        // A history that cannot take the lab is said before the lab runs, not after.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let usable = async { history::History::open(spec).await?.check_writable().await };
        runtime.block_on(usable).map_err(|e| bad(format!("{e} (nothing was run)")))?;
    }
    let stem = a.plan.file_stem().map_or("plan".into(), |s| s.to_string_lossy().into_owned());
    let out = lab::out_dir(a.out.as_deref(), &stem, a.guard.force).map_err(bad)?;
    let given = a.commit.given().map_err(bad)?;
    let folder = a.plan.parent().map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf);
    let provenance = lab::Provenance::gather(&given, &folder);
    execute(&plan, &out, a.quick, &a.guard, &a.live, Some(provenance), history, &watch()?)
}

fn capacity(a: LabCapacityArgs) -> anyhow::Result<()> {
    // The plan a file would give, built as a value: one running target, the SLO, a search.
    let slo = lab::Clause::parse_list(&a.slo).map_err(|e| bad(format!("--slo: {e}")))?;
    if slo.is_empty() {
        return Err(bad("--slo: give at least one clause, e.g. p99<500ms,success>=99.9%"));
    }
    attack::target_from_url(&a.request.method, &a.url, "URL", &Default::default()).map_err(anyhow::Error::from)?;
    a.tls.check().map_err(bad)?;
    let protocol = a.protocol.protocol();
    for h in &a.request.headers {
        attack::parse_header(h).map_err(|e| bad(format!("--header: {e}")))?;
    }
    let load = lab::LoadSpec {
        protocol: vec![protocol],
        timeout: a.timeout,
        method: a.request.method.clone(),
        headers: a.request.headers.clone(),
        body: a.request.body_bytes().map_err(bad)?,
        ..Default::default()
    };
    let measure = a.measure.remote(a.tls.options()).map_err(|e| bad(format!("--measure-*: {e}")))?;
    let target = lab::TargetSpec { tls: a.tls.options(), measure, ..lab::TargetSpec::running("target", &a.url) };
    let mut plan = lab::Plan::new(&format!("capacity of {}", a.url), vec![target], load, slo);
    plan.capacity = Some(
        lab::CapacitySpec::new(a.start, a.max, a.precision, a.probe)
            .map_err(|e| bad(format!("--start/--max/--precision/--probe: {e}")))?,
    );
    let out = lab::out_dir(a.out.as_deref(), "capacity", a.guard.force).map_err(bad)?;
    let provenance = lab::Provenance::gather(&Default::default(), Path::new("."));
    execute(&plan, &out, false, &a.guard, &a.live, Some(provenance), None, &watch()?)
}

/// The plan before it runs: its steps and how long it should take; refused over `--max-time`.
fn preview(plan: &Plan, guard: &LabGuardArgs, out: &Path) -> anyhow::Result<()> {
    let p = lab::preview(plan);
    let span = results::duration::span;
    if p.estimate > guard.max_time {
        return Err(bad(format!(
            "the plan would run about {} ({}), more than --max-time {}: raise --max-time to run it",
            span(p.estimate),
            p.what,
            span(guard.max_time)
        )));
    }
    eprintln!("loadlab: {}, about {}; writing to {}", p.what, span(p.estimate), out.display());
    Ok(())
}

/// The lab's signal policy: the first signal ends the step running, the second abandons it.
fn watch() -> anyhow::Result<Shutdown> {
    Ok(Shutdown::watch("stopping after the current step's requests in flight", Second::Abandon)?)
}

#[allow(clippy::too_many_arguments)]
fn execute(
    plan: &Plan,
    out: &Path,
    quick: bool,
    guard: &LabGuardArgs,
    live: &LiveArgs,
    provenance: Option<lab::Provenance>,
    history: Option<String>,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let quick_plan = quick.then(|| plan.quick());
    preview(quick_plan.as_ref().unwrap_or(plan), guard, out)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let lab = runtime.block_on(async {
        let mut opts = RunOptions::new(out.to_path_buf());
        opts.quick = quick;
        opts.provenance = provenance;
        (opts.stop, opts.abort) = (shutdown.stop(), shutdown.now());
        let serving = crate::live_view::start(live, &plan.name).await?;
        let tty = std::io::stderr().is_terminal();
        let console = move |e: &Event<'_>| match *e {
            Event::Started { index, of, id } if tty => eprint!("\r\x1b[2K[{}/{of}] {id} ...", index + 1),
            Event::Started { .. } | Event::Planned { .. } => {}
            Event::Finished { index, of, id, line, .. } => {
                eprintln!("{}[{}/{of}] {id}: {line}", if tty { "\r\x1b[2K" } else { "" }, index + 1)
            }
            Event::Skipped { index, of, id, why } => {
                eprintln!("{}[{}/{of}] {id}: not run: {why}", if tty { "\r\x1b[2K" } else { "" }, index + 1)
            }
            Event::Probe { target, line, .. } => eprintln!("capacity {target}: {line}"),
            Event::Profile { id, line } | Event::Spans { id, line } => eprintln!("  {id}: {line}"),
            Event::Receiving { endpoint } => eprintln!("loadlab: receiving spans at {endpoint} (OTLP/HTTP)"),
        };
        let watch = (console, serving.as_ref().map(|s| crate::live_view::LabView(Arc::clone(&s.live))));
        let result = lab::run(plan, &opts, &watch).await;
        if let Some(s) = serving {
            s.finish(&opts.stop).await;
        }
        Ok::<_, anyhow::Error>(result?)
    });
    // Interrupted before the first step (waiting for a target): nothing to report.
    let lab = lab.map_err(|e| shutdown.outcome(Err(e)).unwrap_err())?;
    let concluded = lab::conclude(&lab, out).map_err(anyhow::Error::new)?;
    for f in &concluded.reports {
        eprintln!("loadlab: wrote {}", f.display());
    }
    let baseline = concluded.baseline.map(|(outcome, files)| {
        eprint!("{}", lab::changes_text(&outcome));
        for f in files {
            eprintln!("loadlab: wrote {}", f.display());
        }
        outcome
    });
    let recorded = match &history {
        Some(spec) => runtime.block_on(async {
            // A signal while recording ends the wait (an SQLite lock, a database that does not
            // answer): the first one, or the second when the first stopped the lab.
            let signal = if shutdown.stop().is_cancelled() { shutdown.now() } else { shutdown.stop() };
            let watcher = tokio::spawn({
                let signal = signal.clone();
                async move {
                    signal.cancelled().await;
                    history::stop_waiting();
                }
            });
            let recorded = tokio::select! {
                r = record(spec, plan, &lab, out) => r,
                () = signal.cancelled() => {
                    Err(bad(format!("the lab was not recorded: history {}: stopped by a signal", history::shown(spec))))
                }
            };
            watcher.abort();
            recorded
        }),
        None => Ok(()),
    };
    let verdict =
        verdict(&lab, shutdown.signalled()).and_then(|()| baseline.map_or(Ok(()), |o| crate::exit::comparison(&o)));
    // The exit is the lab's own verdict first; what the history said (or why it could not take
    // the lab) is never left unsaid behind it.
    if let (Err(_), Err(e)) = (&verdict, &recorded) {
        eprintln!("loadlab: {e}");
    }
    let verdict = verdict.and(recorded);
    shutdown.outcome(verdict)
}

/// Records the lab into the history and, with `[history] fail_on`, judges it against the current
/// level of its series. A history that cannot be opened fails the lab (exit 2): a CI job that
/// asked for a record must not pass without one.
async fn record(spec: &str, plan: &Plan, lab: &Lab, out: &Path) -> anyhow::Result<()> {
    let not_recorded = |e: history::HistoryError| bad(format!("the lab was not recorded: {e}"));
    let mut h = history::History::open(spec).await.map_err(not_recorded)?;
    let gates = plan.history.as_ref().map(|h| &h.fail_on[..]).filter(|g| !g.is_empty() && !lab.interrupted);
    let how = history::Recording { gates, ..Default::default() };
    let recorded = history::record(&mut h, lab, out, &how).await.map_err(anyhow::Error::from)?;
    if recorded.already {
        eprintln!("loadlab: this lab is lab {} in {} already", recorded.id, h.name());
    } else {
        eprintln!("loadlab: recorded lab {} in {}", recorded.id, h.name());
    }
    let Some(checked) = recorded.checked else { return Ok(()) };
    eprint!("{}", history::check_text(&checked));
    crate::exit::history_check(&checked, false, None)
}

/// The lab's last lines, and its exit (`exit::lab`).
fn verdict(lab: &Lab, signalled: Option<u8>) -> anyhow::Result<()> {
    let (lines, ending) = lab.ending();
    for line in lines {
        eprintln!("loadlab: {line}");
    }
    crate::exit::lab(ending, signalled)
}
