//! `loadlab report`: reads results files (or stdin), merges them, renders a report.

use std::fs::File;
use std::io::{BufReader, IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use report::{write_report, ReportType};
use results::{Consumer, Metrics, Reader, ShardSet};

use crate::bad;
use crate::cli::ReportArgs;
use crate::shutdown::{Second, Shutdown};

/// An input named for messages.
pub struct Input {
    pub name: String,
    pub reader: Box<dyn Read + Send>,
}

/// Opens `files` (stdin when empty or `-`).
pub fn open_inputs(files: &[String]) -> anyhow::Result<Vec<Input>> {
    if files.is_empty() {
        return Ok(vec![Input { name: "stdin".into(), reader: Box::new(std::io::stdin()) }]);
    }
    once_each(files)?;
    files
        .iter()
        .map(|f| {
            if f == "-" {
                return Ok(Input { name: "stdin".into(), reader: Box::new(std::io::stdin()) });
            }
            let file = File::open(f).map_err(|e| bad(format!("{f}: {e}")))?;
            Ok(Input { name: f.clone(), reader: Box::new(BufReader::with_capacity(1 << 16, file)) })
        })
        .collect()
}

/// Refuses a file given twice (by any path to it): its requests would count twice.
fn once_each(files: &[String]) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<((u64, u64), &str)> = Vec::new();
    for f in files.iter().filter(|f| *f != "-") {
        let Ok(meta) = std::fs::metadata(f) else { continue };
        let id = (meta.dev(), meta.ino());
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
            return Err(bad(format!("{f}: the same file as {first}: given twice, its requests would count twice")));
        }
        seen.push((id, f));
    }
    Ok(())
}

/// A results error for the user: a closed output (`| head -1`) ends quietly, as a broken pipe
/// does; anything else is bad input.
pub fn results_error(e: results::Error) -> anyhow::Error {
    if e.kind == results::ErrorKind::Closed {
        anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    } else {
        bad(e.to_string())
    }
}

/// Feeds every input, in order, into `consumer`, printing damage warnings to stderr. Each
/// input's name is handed to `each` first (charts name unnamed runs after their file).
pub fn feed_all<C: Consumer + ?Sized>(
    inputs: Vec<Input>,
    consumer: &mut C,
    mut each: impl FnMut(&mut C, &str),
) -> anyhow::Result<()> {
    for input in inputs {
        each(consumer, &input.name);
        let mut reader = Reader::new(input.reader, input.name);
        results::feed(&mut reader, consumer).map_err(results_error)?;
        for w in reader.warnings() {
            eprintln!("loadlab: warning: {w}");
        }
    }
    Ok(())
}

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

/// A shard read twice (a copy of its file) counted its requests twice: refused before any
/// report of it is written.
pub fn refuse_twice(problems: &[String]) -> anyhow::Result<()> {
    match problems.iter().find(|p| p.contains(results::GIVEN_TWICE)) {
        Some(twice) => Err(bad(format!("shards: {twice}: its requests would count twice; give each shard once"))),
        None => Ok(()),
    }
}

/// Shard files that do not make one whole run: each fault on stderr, and exit 4 (the report
/// covers what it read, which is not the run).
pub fn shard_problems(problems: &[String]) -> anyhow::Result<()> {
    for p in problems {
        eprintln!("loadlab: shards: {p}");
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(anyhow::Error::new(crate::Inconclusive(format!(
        "the shard files are not one whole run ({} problem{}): the report covers only what was read",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ))))
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
    let gates = lab::compare::Gate::parse_list(a.gate.fail_on.as_deref().unwrap_or(""))
        .map_err(|e| bad(format!("--fail-on: {e}")))?;
    let load = |f: &String| lab::compare::load_file(std::path::Path::new(f)).map_err(|e| bad(e.to_string()));
    let outcome = lab::compare::changes(&load(old)?, &load(new)?, a.gate.threshold, gates);
    output(&a.output)?.write_all(lab::render::compare::text(&outcome).as_bytes())?;
    crate::lab_cmd::gate(&outcome)
}
