//! The `loadlab` binary: parses arguments, builds the runtime, calls the libraries, and maps
//! each ending to its exit code (`exit`: 0 ok, 1 runtime failure, 2 bad usage or input, 3 a
//! failed verdict, 4 a verdict that could not be reached, 130/143 a signal).
//! No logic of its own.

// A binary has no surface: its modules' `pub` means "for the other commands".
#![allow(unreachable_pub)]

mod args;
mod attack_cmd;
mod cli;
mod demo_cmd;
mod encode_cmd;
mod exit;
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

pub use exit::{bad, BadInput, Inconclusive, Interrupted, VerdictFailed, Warned};

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
        Err(e) => return exit::usage(e),
    };
    let result = match cli.command {
        cli::Command::Attack(a) => attack_cmd::run(*a),
        cli::Command::Report(r) => report_cmd::run(r),
        cli::Command::Encode(e) => encode_cmd::run(e),
        cli::Command::Origin(o) => origin_cmd::run(o),
        cli::Command::Plot(p) => plot_cmd::run(p),
        cli::Command::Demo(d) => demo_cmd::run(d),
        // Two builds labbed in pairs: a runtime of its own, and the lab's signal policy.
        cli::Command::Lab(lab_cmd::args::LabCommand::Ab(a)) => lab_cmd::ab::run(a),
        cli::Command::Lab(l) => lab_cmd::run(l),
        // A bisect runs labs: a runtime of its own, and the lab's signal policy.
        cli::Command::History(history_cmd::args::HistoryArgs {
            command: Some(history_cmd::args::HistoryCommand::Bisect(b)),
            ..
        }) => history_cmd::bisect::run(b),
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
            ExitCode::from(exit::code(&e))
        }
    }
}
