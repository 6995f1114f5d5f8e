//! How a lab runs: where it writes, how long its steps are, and how it stops.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

/// How a lab runs.
#[derive(Debug)]
pub struct RunOptions {
    pub out: PathBuf,
    /// Run the plan as [`crate::plan::Plan::quick`] shortens it (for CI).
    pub quick: bool,
    /// Stop after the current step's requests in flight (the first SIGINT or SIGTERM).
    pub stop: CancellationToken,
    /// Stop at once, abandoning the current step (a second signal).
    pub abort: CancellationToken,
    /// What the lab is of and where it runs, recorded in lab.json (none: not recorded).
    pub provenance: Option<crate::provenance::Provenance>,
    /// One of two labs run at once, in step (`lab ab`'s duet): its placement is the pair's, and
    /// each step waits for the other lab's.
    pub duet: Option<crate::run::together::Duet>,
}

impl RunOptions {
    /// Options writing to `out`, with tokens nobody cancels yet.
    pub fn new(out: PathBuf) -> RunOptions {
        RunOptions {
            out,
            quick: false,
            stop: CancellationToken::new(),
            abort: CancellationToken::new(),
            provenance: None,
            duet: None,
        }
    }
}
