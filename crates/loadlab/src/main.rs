//! The `loadlab` binary: parses arguments, builds the runtime, calls the libraries, and maps
//! failures to exit codes (0 ok, 1 runtime failure, 2 bad usage or input). No logic of its own.

mod attack_cmd;
mod cli;
mod demo_cmd;
mod encode_cmd;
mod origin_cmd;
mod plot_cmd;
mod report_cmd;

use std::process::ExitCode;

use clap::Parser;

/// A failure caused by what the user gave us (exit 2); anything else exits 1.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Shorthand for a bad-input error.
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Attack(a) => attack_cmd::run(*a),
        cli::Command::Report(r) => report_cmd::run(r),
        cli::Command::Encode(e) => encode_cmd::run(e),
        cli::Command::Origin(o) => origin_cmd::run(o),
        cli::Command::Plot(p) => plot_cmd::run(p),
        cli::Command::Demo(d) => demo_cmd::run(d),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("loadlab: {e:#}");
            if e.downcast_ref::<BadInput>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
