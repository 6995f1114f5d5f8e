//! The arguments of `demo`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::args::values::positive_duration;

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
