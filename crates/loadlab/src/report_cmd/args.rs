//! The arguments of `report`.

use std::time::Duration;

use clap::Args;
use report::ReportType;

use crate::args::gate::CompareGateArgs;
use crate::args::values::{positive_duration, report_types};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files (.llr); stdin when none or `-`.
    pub files: Vec<String>,
    /// text, json, hist[EDGES] (latency buckets from edges, e.g. 'hist[0,5ms,10ms,1s]'), or hdr.
    #[arg(long = "type", default_value = "text", value_parser = report_types(), hide_possible_values = true)]
    pub kind: ReportType,
    /// Print the report this often while the input grows (e.g. 1s).
    #[arg(long, value_parser = positive_duration, conflicts_with = "by_step")]
    pub every: Option<Duration>,
    /// One report per step of a --rate-steps run (a run without steps is one step).
    #[arg(long)]
    pub by_step: bool,
    /// Compare two files, old then new: every metric with its 95% interval (within the runs)
    /// and a verdict, as `lab compare` does.
    #[arg(long, conflicts_with_all = ["every", "by_step"])]
    pub compare: bool,
    /// Keep the warm-up a lab's step file holds before its step (left out by default, as the
    /// lab counted it).
    #[arg(long)]
    pub with_warmup: bool,
    #[command(flatten)]
    pub gate: CompareGateArgs,
    /// Where to write; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,
}
