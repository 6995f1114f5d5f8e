//! `loadlab report`: reads results files (or stdin), merges them, renders a report.

pub mod args;

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use report::{write_report, ReportType};
use results::{Metrics, ShardSet};

use crate::bad;
use crate::inputs::{feed_all, open_inputs, refuse_twice, shard_problems, Input};
use crate::shutdown::{Second, Shutdown};
use args::ReportArgs;

fn output(path: &str) -> anyhow::Result<Box<dyn Write>> {
    Ok(if path == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(File::create(path).map_err(|e| bad(format!("--output {path}: {e}")))?)
    })
}

pub fn run(a: ReportArgs) -> anyhow::Result<()> {
    if a.compare {
        return compare(&a);
    }
    let inputs = open_inputs(&a.files)?;
    let mut out = output(&a.output)?;
    match a.every {
        None if a.by_step => {
            let mut steps = (results::ByRateStep::new(), ShardSet::new());
            feed_all(inputs, &mut steps, |c, name| c.1.source(name), a.with_warmup)?;
            let (steps, set) = steps;
            let problems = set.problems();
            refuse_twice(&problems)?;
            let incomplete = shard_problems(&problems);
            for (i, s) in steps.steps.iter().enumerate() {
                let rate = s.rate.map_or(String::new(), |r| format!(": {r} req/s"));
                let window = if s.to_s.is_finite() { format!(" [{}s, {}s)", s.from_s, s.to_s) } else { String::new() };
                writeln!(out, "== step {}{rate}{window}", i + 1)?;
                write_with_problems(&a.kind, &s.metrics, &problems, &mut out)?;
                writeln!(out)?;
            }
            out.flush()?;
            incomplete
        }
        None => {
            let mut m = (Metrics::new(), ShardSet::new());
            feed_all(inputs, &mut m, |c, name| c.1.source(name), a.with_warmup)?;
            let problems = m.1.problems();
            refuse_twice(&problems)?;
            let incomplete = shard_problems(&problems);
            write_with_problems(&a.kind, &m.0, &problems, &mut out)?;
            out.flush()?;
            incomplete
        }
        Some(every) => {
            live(inputs, &a.kind, every, &mut out)?;
            out.flush()?;
            Ok(())
        }
    }
}

/// The report; in JSON, with the shard set's problems as `shard_problems` when there are any.
fn write_with_problems(kind: &ReportType, m: &Metrics, problems: &[String], out: &mut dyn Write) -> anyhow::Result<()> {
    if problems.is_empty() || !matches!(kind, ReportType::Json) {
        return Ok(write_report(kind, m, out)?);
    }
    let mut json = report::json_report(m);
    json["shard_problems"] = serde_json::json!(problems);
    serde_json::to_writer(&mut *out, &json)?;
    Ok(out.write_all(b"\n")?)
}

/// `--every`: the report of the inputs so far at each interval while they grow, then once at
/// the end (`report::every`); a signal stops the following (the last report covers what was read).
fn live(inputs: Vec<Input>, kind: &ReportType, every: Duration, out: &mut dyn Write) -> anyhow::Result<()> {
    let shutdown = Shutdown::watch("stopping: a last report of what was read", Second::Exit)?;
    let stop = shutdown.stop();
    let followed = inputs.into_iter().map(|i| (i.name, i.reader)).collect();
    let clear = std::io::stdout().is_terminal();
    let warnings = report::every::every(followed, kind, every, out, clear, &|| stop.is_cancelled())
        .map_err(crate::inputs::results_error)?;
    for w in warnings {
        eprintln!("loadlab: warning: {w}");
    }
    shutdown.outcome(Ok(()))
}

/// `report --compare OLD NEW`: the table of `lab compare` for two files (within-run statistics).
fn compare(a: &ReportArgs) -> anyhow::Result<()> {
    let [old, new] = a.files.as_slice() else {
        return Err(bad(format!("--compare: give two results files, old then new (got {})", a.files.len())));
    };
    let gates =
        lab::Gate::parse_list(a.gate.fail_on.as_deref().unwrap_or("")).map_err(|e| bad(format!("--fail-on: {e}")))?;
    let load = |f: &String| lab::load_results_side(std::path::Path::new(f)).map_err(anyhow::Error::from);
    let rule = lab::Rule { threshold_pct: a.gate.threshold, gates, calibration: None };
    let outcome = lab::changes(&load(old)?, &load(new)?, rule);
    output(&a.output)?.write_all(lab::changes_text(&outcome).as_bytes())?;
    crate::exit::comparison(&outcome)
}
