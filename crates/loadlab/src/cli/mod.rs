//! The command tree: one variant per subcommand, whose arguments live in the subcommand's own
//! folder (`attack_cmd/args.rs`, `lab_cmd/args.rs` ...) beside its run. Flag names follow
//! vegeta's where vegeta has one; values are typed (`args::values`), so a bad value is refused by
//! the parser with the flag's name, and the commands receive what they use.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::attack_cmd::args::AttackArgs;
use crate::demo_cmd::args::DemoArgs;
use crate::encode_cmd::args::EncodeArgs;
use crate::history_cmd::args::HistoryArgs;
use crate::k8s_cmd::args::K8sCommand;
use crate::lab_cmd::args::LabCommand;
use crate::origin_cmd::args::OriginArgs;
use crate::plot_cmd::args::PlotArgs;
use crate::report_cmd::args::ReportArgs;

/// The command line in vegeta's spelling too (`-rate 100`): see [`vegeta_style`].
pub fn vegeta_style(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    crate::args::vegeta::vegeta_style(&<Cli as clap::CommandFactory>::command(), args)
}

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

#[cfg(test)]
mod tests;
