//! `loadlab report`: reads results files (or stdin), merges them, renders a report.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use report::{write_report, ReportType};
use results::{Metrics, ShardSet};

use crate::bad;
use crate::cli::ReportArgs;
use crate::inputs::{feed_all, open_inputs, refuse_twice, shard_problems, Input};
use crate::shutdown::{Second, Shutdown};

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
            feed_all(inputs, &mut steps, |c, name| c.1.source(name))?;
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
            feed_all(inputs, &mut m, |c, name| c.1.source(name))?;
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

/// `--every`: reports the inputs so far at each interval while they grow, then once at the end.
/// A file is followed until its run ends cleanly or it stops growing for a few seconds, or until
/// a signal (then the last report covers what was read).
fn live(inputs: Vec<Input>, kind: &ReportType, every: Duration, out: &mut dyn Write) -> anyhow::Result<()> {
    let shutdown = Shutdown::watch("stopping: a last report of what was read", Second::Exit)?;
    let stop = shutdown.stop();
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let mut readers = Vec::new();
    for input in inputs {
        let m = Arc::clone(&metrics);
        readers.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let follow = results::Follow::new(input.reader);
            let ended = follow.end_flag();
            let input = Input { name: input.name, reader: Box::new(follow) };
            feed_all(vec![input], &mut (m, ended), |_, _| {})
        }));
    }
    let clear = std::io::stdout().is_terminal();
    let mut next = Instant::now() + every;
    while readers.iter().any(|r| !r.is_finished()) && !stop.is_cancelled() {
        std::thread::sleep(Duration::from_millis(50).min(next.saturating_duration_since(Instant::now())));
        if Instant::now() >= next {
            if clear {
                out.write_all(b"\x1b[H\x1b[2J")?;
            }
            let snapshot = metrics.lock().unwrap().clone();
            write_report(kind, &snapshot, out)?;
            out.flush()?;
            next += every;
        }
    }
    // Stopped by a signal, the readers still following are left to the process's exit.
    for r in readers.into_iter().filter(|r| r.is_finished() || !stop.is_cancelled()) {
        r.join().map_err(|_| anyhow::anyhow!("reader thread panicked"))??;
    }
    if clear {
        out.write_all(b"\x1b[H\x1b[2J")?;
    }
    let m = metrics.lock().unwrap().clone();
    write_report(kind, &m, out)?;
    out.flush()?;
    shutdown.outcome(Ok(()))
}

/// `report --compare OLD NEW`: the table of `lab compare` for two files (within-run statistics).
fn compare(a: &ReportArgs) -> anyhow::Result<()> {
    let [old, new] = a.files.as_slice() else {
        return Err(bad(format!("--compare: give two results files, old then new (got {})", a.files.len())));
    };
    let gates =
        lab::Gate::parse_list(a.gate.fail_on.as_deref().unwrap_or("")).map_err(|e| bad(format!("--fail-on: {e}")))?;
    let load = |f: &String| lab::read_run_side(std::path::Path::new(f)).map_err(|e| bad(e.to_string()));
    let outcome = lab::compare_sides(&load(old)?, &load(new)?, a.gate.threshold, gates);
    output(&a.output)?.write_all(lab::comparison_text(&outcome).as_bytes())?;
    crate::compare_verdict(&outcome)
}
