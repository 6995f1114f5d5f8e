//! What a running lab reports: progress events for whoever displays them, and the failures
//! that stop it.

use std::path::PathBuf;

use crate::numbers::Numbers;
use crate::step;
use crate::systems::StartError;

/// What the lab tells whoever displays its progress.
pub enum Event<'a> {
    Started {
        index: usize,
        of: usize,
        id: &'a str,
    },
    Finished {
        index: usize,
        of: usize,
        id: &'a str,
        numbers: &'a Numbers,
    },
    Probe {
        target: &'a str,
        rate: f64,
        holds: bool,
    },
    /// A step not run: its target was down (why).
    Skipped {
        index: usize,
        of: usize,
        id: &'a str,
        why: &'a str,
    },
}

/// Why a lab could not run: a target that would not start (exit 1), or an I/O failure.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Step(#[from] step::StepError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}
