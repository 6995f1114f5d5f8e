//! Command-line definitions. Flag names follow vegeta's where vegeta has one. Values are typed
//! here (durations, rates, formats), so a bad value is refused by the parser with the flag's name,
//! and the commands receive what they use.
//!
//! Here: the command tree and vegeta's single-dash flags; per command, its arguments
//! (`attack_args`, `origin_args`, `files` for report, encode and plot, `lab`, `history`, `k8s`),
//! the groups several commands share (`client`, `load`, `replay`) and the typed values (`values`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "loadlab", version, about = "HTTP performance lab: load generator, reports, plots, origin simulator")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Send load and stream one result per request (.llr) to --output.
    Attack(Box<AttackArgs>),
    /// Summarise results files (stdin when none), merging them.
    Report(ReportArgs),
    /// Convert results to vegeta's JSON or CSV, or vegeta's results to .llr.
    Encode(EncodeArgs),
    /// Draw charts of results files: a self-contained HTML page, or SVG or PNG.
    Plot(PlotArgs),
    /// Kubernetes: render the manifests of a sharded attack (an Indexed Job).
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Run the origin simulator (Origin Simulator recipes and admin API).
    Origin(OriginArgs),
    /// A short lab: a rate ladder against an embedded origin simulator, with reports.
    Demo(DemoArgs),
    /// Experiments from a plan file: ladders, sweeps, A/B with repeats, capacity search, verdicts.
    #[command(subcommand)]
    Lab(LabCommand),
    /// A history of labs: list its series, add labs, show each series over commits with its
    /// change points, check a lab against the current level of its series.
    History(HistoryArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout, or with --dir write one page per subcommand
    /// (loadlab.1, loadlab-attack.1, loadlab-lab-run.1 ...), as `man loadlab-attack` reads them.
    Man(ManArgs),
}

/// vegeta's habit of single-dash long flags (`-rate 100`, `-http2=false`, `report -type json`):
/// a word after a single dash that names a long flag of the command becomes `--word`. Short
/// flags (`-H`, `-o`) and negative numbers are left alone. A boolean flag followed by `true` or
/// `false` as a word of its own is refused with why: Go's flag package (vegeta's) reads
/// `-http2 false` as `-http2` and stops at `false`, ignoring every flag after it, so a command
/// line written that way never did what it says.
pub fn vegeta_style(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    use clap::CommandFactory;
    let root = Cli::command();
    let mut cmd: Option<clap::Command> = None;
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.into_iter().enumerate() {
        let Some(s) = a.to_str().map(str::to_owned) else {
            out.push(a);
            continue;
        };
        if i > 0 && cmd.is_none() && !s.starts_with('-') {
            cmd = root.find_subcommand(&s).cloned();
        }
        let single = s.len() > 2
            && s.starts_with('-')
            && !s.starts_with("--")
            && s[1..2].chars().all(|c| c.is_ascii_alphabetic());
        if let Some(flag) = out.last().and_then(|f| f.to_str()).filter(|_| s == "true" || s == "false") {
            let name = flag.trim_start_matches('-');
            let boolean = |arg: &clap::Arg| {
                matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
                    || arg.get_possible_values().iter().any(|v| v.get_name() == "false")
            };
            let is_bool = flag.starts_with('-')
                && !flag.contains('=')
                && cmd
                    .as_ref()
                    .is_some_and(|c| c.get_arguments().any(|arg| arg.get_long() == Some(name) && boolean(arg)));
            if is_bool {
                return Err(format!(
                    "-{name} {s}: give booleans as -{name}={s}; vegeta reads this line as -{name}=true and ignores \
                     every flag after '{s}'"
                ));
            }
        }
        if single {
            let name = s[1..].split('=').next().unwrap_or_default();
            let known = cmd.as_ref().is_some_and(|c| c.get_arguments().any(|arg| arg.get_long() == Some(name)));
            if known {
                out.push(format!("-{s}").into());
                continue;
            }
        }
        out.push(a);
    }
    Ok(out)
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every page into this folder (e.g. /usr/local/share/man/man1).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Directory for the results files.
    #[arg(long, default_value = "loadlab-demo")]
    pub out: PathBuf,
    /// Rates of the ladder, requests per second, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "200,400,800")]
    pub rates: Vec<f64>,
    /// Length of each step.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub step: Duration,
}

mod attack_args;
mod client;
mod files;
mod history;
mod k8s;
mod lab;
mod load;
mod origin_args;
mod replay;
mod values;
pub use attack_args::*;
pub use client::*;
pub use files::*;
pub use history::*;
pub use k8s::*;
pub use lab::*;
pub use load::*;
pub use origin_args::*;
pub use replay::*;
pub use values::*;

#[cfg(test)]
mod tests;
