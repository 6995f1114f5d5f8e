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
    pub stop: CancellationToken,
    /// The live view to feed (`--live`): every step's records, the steps and their verdicts.
    pub live: Option<std::sync::Arc<live::Live>>,
}

/// A step's length under `--quick`.
pub const QUICK_STEP: Duration = Duration::from_secs(2);
