//! Replaying recorded traffic at its timing (`attack --replay FILE`): an access log, a HAR file,
//! or a run's results (`source` finds which). A reader thread streams the file (memory bounded
//! whatever its size: one line, the lines of one second when the log has whole seconds, a run's
//! reorder window; a HAR file, one JSON document, is read whole) and hands each request with its
//! due time to the pacer through a bounded queue; the pacer sends it at that time like any hit
//! of the open model, so latency is counted from the schedule.

mod formats;
mod har;
pub mod log;
pub(crate) mod pace;
mod reader;
mod reorder;
mod runs;
mod source;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Uri;

pub use formats::{sniff, Format};
pub use har::MAX_HAR;
pub use runs::REORDER_US;
pub use source::MAX_LINE;

/// What to replay and how.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    pub path: PathBuf,
    /// Where the requests go: scheme and authority, and a path prefix.
    pub base: Uri,
    /// Gaps are divided by this (2 replays twice as fast).
    pub speed: f64,
    /// How many times the log is sent, one pass after the other.
    pub loops: u32,
    /// Only the part of the log from this far after its first request ...
    pub from: Option<Duration>,
    /// ... and up to this far after it.
    pub to: Option<Duration>,
    /// A line that is not a request ends the replay (the default counts and skips it).
    pub strict: bool,
    /// Nothing is sent later than this after the start (`--duration`): with many loops, a
    /// replay as long as any other run.
    pub limit: Option<Duration>,
}

impl ReplaySpec {
    pub fn new(path: PathBuf, base: Uri) -> ReplaySpec {
        ReplaySpec { path, base, speed: 1.0, loops: 1, from: None, to: None, strict: false, limit: None }
    }

    /// What the results header says of the replay.
    pub fn plan(&self) -> results::ReplayPlan {
        results::ReplayPlan {
            source: self
                .path
                .file_name()
                .map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into()),
            speed: self.speed,
            loops: self.loops,
            from_s: self.from.map(|d| d.as_secs_f64()),
            to_s: self.to.map(|d| d.as_secs_f64()),
            limit_s: self.limit.map(|d| d.as_secs_f64()),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(self.speed.is_finite() && self.speed > 0.0 && self.speed <= 1e6) {
            return Err(format!("--speed {}: must be above 0 and at most 1000000", self.speed));
        }
        if self.loops == 0 {
            return Err("--loop must be at least 1".into());
        }
        if let (Some(f), Some(t)) = (self.from, self.to) {
            if t <= f {
                return Err("--to must be after --from".into());
            }
        }
        std::fs::File::open(&self.path).map_err(|e| format!("--replay {}: {e}", self.path.display()))?;
        Ok(())
    }
}

/// A line (entry, record) that was not replayed: its number, why, and its start.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// `line`, `entry` (HAR) or `record` (a results file).
    pub unit: &'static str,
    pub line: u64,
    pub why: &'static str,
    pub text: String,
}

/// What the reader found, for the caller to report after the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayStats {
    /// What the file was found to be.
    pub format: Option<Format>,
    /// Lines (entries, records) read.
    pub lines: u64,
    pub requests: u64,
    pub skipped: u64,
    /// The first few skipped lines.
    pub first_skipped: Vec<Skipped>,
    /// The replayed span of log time (one pass), seconds.
    pub span_s: f64,
    /// The schedule's length in seconds of the run: every pass at the speed, or the limit
    /// that cut it; set when the reader ends.
    pub schedule_s: f64,
    /// Set when the replay could not go on (the file could not be read, or a bad line with
    /// `strict`): the attack's error.
    pub failed: Option<String>,
}

/// Shared between the reader thread and whoever reports on it.
pub(crate) type SharedStats = Arc<Mutex<ReplayStats>>;
