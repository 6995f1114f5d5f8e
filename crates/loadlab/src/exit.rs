//! How every ending becomes an exit code, in one place: the typed errors the commands return
//! (bad input 2, a failed verdict 3, a verdict not reached 4, a warning asked for, a signal
//! 130/143), the rules that turn a comparison's, a history check's, a lab's, an A/B run's and a
//! bisect's ending into one of them, and the code each error exits with. Anything else is 1.

use std::io::Write;
use std::process::ExitCode;

/// A failure caused by what the user gave us (exit 2); anything else exits 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A run that went through but whose verdict is a failure (an SLO broken): exit 3.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct VerdictFailed(pub String);

/// A run that went through but could not reach its verdict (the generator could not send what
/// was asked, the target died, shard files that are not one run): exit 4.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Inconclusive(pub String);

/// A check that passed with a warning, when asked to say so by its exit (`--warning-exit N`), so
/// that a CI job can rerun the lab without reading the text.
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub struct Warned(pub u8, pub String);

/// Stopped by a signal (after writing what it had): exit 130 (SIGINT) or 143 (SIGTERM).
#[derive(Debug, thiserror::Error)]
#[error("stopped by {}", if *.0 == 143 { "SIGTERM" } else { "SIGINT" })]
pub struct Interrupted(pub u8);

/// A comparison's exit: 3 when a `--fail-on` gate broke, 4 when one could not be judged on some cell.
pub fn comparison(o: &lab::Changes) -> anyhow::Result<()> {
    if !o.failed.is_empty() {
        return Err(anyhow::Error::new(VerdictFailed(format!("regression beyond --fail-on: {}", o.failed.join("; ")))));
    }
    match o.not_judged.first() {
        // A gate that could not be judged is not a pass: exit 4, as any verdict not reached.
        Some(first) => Err(anyhow::Error::new(Inconclusive(format!(
            "a --fail-on gate could not be judged: {first}{}",
            if o.not_judged.len() > 1 { format!(" (and {} more)", o.not_judged.len() - 1) } else { String::new() }
        )))),
        None => Ok(()),
    }
}

/// A history check's exit: 3 when a gated series is worse, 4 when one is too short to tell (or,
/// `strict`, not judged yet), `warning_exit` when asked and a series passed with a warning, else
/// 0 (a new history's series not judged yet included).
pub fn history_check(c: &history::Checked, strict: bool, warning_exit: Option<u8>) -> anyhow::Result<()> {
    let worse: Vec<String> = c.worse().map(|j| format!("{} ({})", j.key.text(), j.gate)).collect();
    if !worse.is_empty() {
        return Err(anyhow::Error::new(VerdictFailed(format!("worse than its history: {}", worse.join("; ")))));
    }
    let short = c.too_short();
    if !short.is_empty() {
        // Each is said above; one line here, however many series there are.
        let more = if short.len() > 1 { format!(" (and {} more series)", short.len() - 1) } else { String::new() };
        return Err(anyhow::Error::new(Inconclusive(format!("history too short to tell: {}{more}", short[0]))));
    }
    let not_yet = c.not_yet();
    if let Some(first) = not_yet.first() {
        let more = if not_yet.len() > 1 { format!(" (and {} more series)", not_yet.len() - 1) } else { String::new() };
        if strict {
            return Err(anyhow::Error::new(Inconclusive(format!("not judged yet (--strict): {first}{more}"))));
        }
        let _ = writeln!(std::io::stderr(), "loadlab: not judged yet, so not failed: {first}{more}");
    }
    let warnings = c.warnings();
    if let (Some(code), Some(first)) = (warning_exit, warnings.first()) {
        return Err(anyhow::Error::new(Warned(
            code,
            format!("passed with a warning (--warning-exit {code}): {first}"),
        )));
    }
    Ok(())
}

/// Whether `e` is about what the user gave (exit 2), by its type: a flag or a file said bad
/// here, or a library's error about a plan, a lab folder, a results file, a target, the live
/// view's address, or a history (every history error names the history it is about).
fn is_input(e: &anyhow::Error) -> bool {
    e.downcast_ref::<BadInput>().is_some()
        || e.downcast_ref::<fleet::BadInput>().is_some()
        || e.downcast_ref::<lab::PlanError>().is_some()
        || e.downcast_ref::<lab::ConcludeError>().is_some_and(lab::ConcludeError::is_input)
        || e.downcast_ref::<lab::CompareError>().is_some()
        || e.downcast_ref::<lab::ReadError>().is_some()
        || e.downcast_ref::<attack::TargetError>().is_some()
        || e.downcast_ref::<live::LiveError>().is_some()
        || e.downcast_ref::<history::HistoryError>().is_some()
        || e.downcast_ref::<history::JudgeError>().is_some()
        || e.downcast_ref::<history::RecordError>().is_some()
        || e.downcast_ref::<history::CheckError>().is_some()
        || e.downcast_ref::<history::Refused>().is_some()
}

/// Shorthand for a bad-input error.
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// A command-line error on one line, naming the flag: `--rate: bad rate "fast": ...`.
pub fn usage(e: clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(a)) => a.split_whitespace().next().unwrap_or_default().to_owned(),
        _ => String::new(),
    };
    let why = match e.get(ContextKind::Custom) {
        Some(ContextValue::String(why)) => Some(why.clone()),
        _ => std::error::Error::source(&e).map(|s| s.to_string()),
    };
    let strings = |k: ContextKind| match e.get(k) {
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::String(v)) => vec![v.clone()],
        _ => Vec::new(),
    };
    let message = match (e.kind(), why) {
        (ErrorKind::ValueValidation, Some(why)) => format!("{flag}: {why}"),
        (ErrorKind::MissingRequiredArgument, _) => {
            format!("missing {}", strings(ContextKind::InvalidArg).join(", "))
        }
        (ErrorKind::InvalidSubcommand, _) => {
            let wrong = strings(ContextKind::InvalidSubcommand).join(" ");
            match strings(ContextKind::SuggestedSubcommand).first() {
                Some(near) => format!("unknown subcommand '{wrong}'; did you mean '{near}'?"),
                None => format!("unknown subcommand '{wrong}'"),
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
            first.trim_start_matches("error: ").to_owned()
        }
    };
    eprintln!("loadlab: {message} (see --help)");
    ExitCode::from(2)
}

/// The exit code of a failed command, by the type of its error.
pub fn code(e: &anyhow::Error) -> u8 {
    if is_input(e) {
        2
    } else if e.downcast_ref::<VerdictFailed>().is_some() {
        3
    } else if e.downcast_ref::<Inconclusive>().is_some() || e.downcast_ref::<fleet::collect::Incomplete>().is_some() {
        4
    } else if let Some(Interrupted(code)) = e.downcast_ref::<Interrupted>() {
        *code
    } else if let Some(Warned(code, _)) = e.downcast_ref::<Warned>() {
        *code
    } else {
        1
    }
}

/// A lab's exit: interrupted (130/143, by `signalled`), its SLO failed (3), a verdict not
/// reached (4), else held.
pub fn lab(ending: lab::Ending, signalled: Option<u8>) -> anyhow::Result<()> {
    match ending {
        lab::Ending::Interrupted { ran, of } => Err(anyhow::Error::new(Interrupted(signalled.unwrap_or(130)))
            .context(format!("interrupted after {ran} of {of} steps; the reports cover those"))),
        lab::Ending::SloFailed(cells) => {
            Err(anyhow::Error::new(VerdictFailed(format!("SLO failed: {}", cells.join(", ")))))
        }
        lab::Ending::Inconclusive(why) => Err(anyhow::Error::new(Inconclusive(format!(
            "inconclusive: {} verdict{} could not be reached (see above)",
            why.len(),
            if why.len() == 1 { "" } else { "s" }
        )))),
        lab::Ending::Held => Ok(()),
    }
}

/// `lab ab`'s exit: head slower past a gate (3), a gated cell it could not tell or left
/// undecided (4; 0 for undecided with `undecided_ok`), with its last line.
pub fn ab(ending: &ab::Ending, line: String, undecided_ok: bool) -> anyhow::Result<()> {
    match ending {
        ab::Ending::Worse => Err(anyhow::Error::new(VerdictFailed(line))),
        ab::Ending::CouldNotTell(_) => Err(anyhow::Error::new(Inconclusive(line))),
        ab::Ending::Undecided if !undecided_ok => Err(anyhow::Error::new(Inconclusive(line))),
        ab::Ending::Undecided => Ok(()),
        ab::Ending::NoChange | ab::Ending::Stopped => Ok(()),
    }
}

/// A bisect's exit: a commit named (or stopped: its report says how far it got), else 4.
pub fn bisect(ending: &bisect::Ending) -> anyhow::Result<()> {
    let why = match ending {
        bisect::Ending::Named { .. } | bisect::Ending::Stopped => return Ok(()),
        bisect::Ending::NoDifference(_) => "the good and bad levels do not differ",
        bisect::Ending::Range(_) => "skipped commits leave more than one candidate",
        _ => "--max-labs reached before a commit could be named",
    };
    Err(anyhow::Error::new(Inconclusive(why.to_owned())))
}

/// Shard files that are not one whole run: 4 (the report covers what it read, not the run).
pub fn shards(problems: usize) -> anyhow::Result<()> {
    if problems == 0 {
        return Ok(());
    }
    Err(anyhow::Error::new(Inconclusive(format!(
        "the shard files are not one whole run ({problems} problem{}): the report covers only what was read",
        if problems == 1 { "" } else { "s" }
    ))))
}

/// A command's result after a signal (`signalled`, 130 or 143): [`Interrupted`], carrying any
/// failure's message as its context; without one, the result as it was.
pub fn after_signal(signalled: Option<u8>, result: anyhow::Result<()>) -> anyhow::Result<()> {
    let Some(code) = signalled else { return result };
    match result {
        Ok(()) => Err(anyhow::Error::new(Interrupted(code))),
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => Err(e),
        Err(e) => Err(anyhow::Error::new(Interrupted(code)).context(format!("{e:#}"))),
    }
}
