//! `attack --replay`: an access log's requests at their recorded times.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::args::values::duration;

#[derive(Args, Debug, Clone, Default)]
pub struct ReplayArgs {
    /// Replay recorded traffic at its timing, to --base-url: an access log (nginx or Apache,
    /// common or combined format, with nginx's $msec first or last when present; lines of one
    /// whole second are spread evenly over it, in file order), a HAR 1.2 file (method, URL,
    /// headers, body at startedDateTime), or a run's results (a loadlab .llr file, or vegeta's
    /// JSON results). The format is found from the file's first bytes.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "targets", "rate", "rate_steps", "connections"], requires = "base_url")]
    pub replay: Option<PathBuf>,
    /// Where replayed requests go: scheme, host and port, and an optional path prefix.
    #[arg(long, value_name = "URL", requires = "replay")]
    pub base_url: Option<String>,
    /// Replay this many times faster (2 halves every gap).
    #[arg(long, default_value_t = 1.0, requires = "replay", value_parser = crate::args::values::finite)]
    pub speed: f64,
    /// Replay the log this many times, one pass after the other (with --duration, until then).
    #[arg(long = "loop", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), requires = "replay")]
    pub loops: u32,
    /// Only the part of the log from this long after its first request (e.g. 10m).
    #[arg(long, value_parser = duration, requires = "replay")]
    pub from: Option<Duration>,
    /// ... up to this long after its first request.
    #[arg(long, value_parser = duration, requires = "replay")]
    pub to: Option<Duration>,
    /// Stop at the first line (HAR entry, record) that is not a request (by default such lines
    /// are counted, the first five quoted with their line numbers, and skipped).
    #[arg(long, requires = "replay")]
    pub strict: bool,
}
