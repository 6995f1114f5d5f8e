//! The arguments of the commands that read results files: `report`, `encode` and `plot`.

use std::time::Duration;

use clap::Args;
use report::chart::Chart;
use report::ReportType;

use super::{charts, encode_formats, positive_duration, report_types, CompareGateArgs, EncodeFormat};

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

#[derive(Args, Debug)]
pub struct EncodeArgs {
    /// Input files; stdin when none or `-`.
    pub files: Vec<String>,
    /// Output format: json (vegeta's JSON lines, with ttfb and lag), vegeta-json (the same), or
    /// csv; an import (--from json|csv) always writes llr.
    #[arg(long, value_parser = encode_formats())]
    pub to: Option<EncodeFormat>,
    /// Input format: llr, or vegeta's json or csv.
    #[arg(long, default_value = "llr", value_parser = encode_formats())]
    pub from: EncodeFormat,
    /// Where to write; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Results files (.llr); stdin when none or `-`. Each run is a series.
    pub files: Vec<String>,
    /// Output file: .html, .svg or .png; `-` for stdout (HTML, or --format).
    #[arg(long, short = 'o')]
    pub output: String,
    /// The format when the output's name does not say it: html, svg or png.
    #[arg(long, value_parser = ["html", "svg", "png"])]
    pub format: Option<String>,
    /// Title above the charts.
    #[arg(long, default_value = "")]
    pub title: String,
    /// Which charts.
    #[arg(long, default_value = "all", value_parser = charts())]
    pub chart: Chart,
    /// Keep the warm-up a lab's step file holds before its step (left out by default, as the
    /// lab counted it).
    #[arg(long)]
    pub with_warmup: bool,
}
