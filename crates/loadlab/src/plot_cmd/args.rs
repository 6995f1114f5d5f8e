//! The arguments of `plot`.

use clap::Args;
use report::chart::Chart;

use crate::args::values::charts;

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
