//! The `loadlab` binary: parses arguments, builds the runtime, calls the libraries, and maps
//! failures to exit codes (0 ok, 1 runtime failure, 2 bad usage or input, 3 a failed verdict,
//! 4 a verdict that could not be reached).
//! No logic of its own.

mod ab_cmd;
mod attack_cmd;
mod bisect_cmd;
mod cli;
mod demo_cmd;
mod encode_cmd;
mod history_cmd;
mod inputs;
mod k8s_cmd;
mod lab_cmd;
mod live_view;
mod origin_cmd;
mod plot_cmd;
mod progress;
mod report_cmd;
mod shutdown;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

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
pub fn compare_verdict(o: &lab::Changes) -> anyhow::Result<()> {
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
pub fn history_verdict(c: &history::Checked, strict: bool, warning_exit: Option<u8>) -> anyhow::Result<()> {
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
        || e.downcast_ref::<lab::plan::PlanError>().is_some()
        || e.downcast_ref::<lab::compare::CompareError>().is_some()
        || e.downcast_ref::<lab::lab_json::ReadError>().is_some()
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
fn usage_error(e: clap::Error) -> ExitCode {
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

/// Lifts the soft limit on open files to the hard one: an attack holds up to its cap of
/// connections (1,024 by default) beside its files, past the common soft limit of 1,024.
fn raise_open_files_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

fn main() -> ExitCode {
    raise_open_files_limit();
    let args = match cli::vegeta_style(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(why) => {
            eprintln!("loadlab: {why}");
            return ExitCode::from(2);
        }
    };
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let result = match cli.command {
        cli::Command::Attack(a) => attack_cmd::run(*a),
        cli::Command::Report(r) => report_cmd::run(r),
        cli::Command::Encode(e) => encode_cmd::run(e),
        cli::Command::Origin(o) => origin_cmd::run(o),
        cli::Command::Plot(p) => plot_cmd::run(p),
        cli::Command::Demo(d) => demo_cmd::run(d),
        // Two builds labbed in pairs: a runtime of its own, and the lab's signal policy.
        cli::Command::Lab(cli::LabCommand::Ab(a)) => ab_cmd::run(a),
        cli::Command::Lab(l) => lab_cmd::run(l),
        // A bisect runs labs: a runtime of its own, and the lab's signal policy.
        cli::Command::History(cli::HistoryArgs { command: Some(cli::HistoryCommand::Bisect(b)), .. }) => {
            bisect_cmd::run(b)
        }
        cli::Command::History(h) => history_cmd::run(h),
        cli::Command::K8s(k) => k8s_cmd::run(k),
        cli::Command::Completions(c) => {
            let mut cmd = <cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(c.shell, &mut cmd, "loadlab", &mut std::io::stdout());
            Ok(())
        }
        cli::Command::Man(m) => {
            let cmd = <cli::Cli as clap::CommandFactory>::command();
            match m.dir {
                Some(dir) => std::fs::create_dir_all(&dir)
                    .and_then(|()| clap_mangen::generate_to(cmd, &dir))
                    .map_err(|e| bad(format!("--dir {}: {e}", dir.display()))),
                None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout()).map_err(anyhow::Error::from),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            // Not eprintln!: a closed stderr must not turn the exit status into a panic's.
            let _ = writeln!(std::io::stderr(), "loadlab: {e:#}");
            if is_input(&e) {
                ExitCode::from(2)
            } else if e.downcast_ref::<VerdictFailed>().is_some() {
                ExitCode::from(3)
            } else if e.downcast_ref::<Inconclusive>().is_some()
                || e.downcast_ref::<fleet::collect::Incomplete>().is_some()
            {
                ExitCode::from(4)
            } else if let Some(Interrupted(code)) = e.downcast_ref::<Interrupted>() {
                ExitCode::from(*code)
            } else if let Some(Warned(code, _)) = e.downcast_ref::<Warned>() {
                ExitCode::from(*code)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
