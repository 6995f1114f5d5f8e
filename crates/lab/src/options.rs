//! How a lab runs: where it writes, how long its steps are, how it stops, and what watches it.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How a lab runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub out: PathBuf,
    /// Shorten every duration (for CI): steps of at most [`QUICK_STEP`].
    pub quick: bool,
    /// Stop after the current step's requests in flight (the first SIGINT or SIGTERM).
    pub stop: CancellationToken,
    /// Stop at once, abandoning the current step (a second signal).
    pub abort: CancellationToken,
    /// The live view to feed (`--live`): every step's records, the steps and their verdicts.
    pub live: Option<std::sync::Arc<live::Live>>,
}

impl RunOptions {
    /// Options writing to `out`, with tokens nobody cancels yet.
    pub fn new(out: PathBuf) -> RunOptions {
        RunOptions { out, quick: false, stop: CancellationToken::new(), abort: CancellationToken::new(), live: None }
    }
}

/// A step's length under `--quick`.
pub const QUICK_STEP: Duration = Duration::from_secs(2);
