//! What a running lab reports, to whoever watches it (the console, the live view, a test), and
//! the failures that stop it. A lab has one way out while it runs: its watcher.

use std::path::PathBuf;
use std::sync::Arc;

use crate::measure::numbers::Numbers;
use crate::run::step;
use crate::run::systems::StartError;

/// What the lab tells its watcher, in order.
pub enum Event<'a> {
    /// The steps about to run, by id (capacity probes come after them, named as they start).
    Planned {
        ids: &'a [String],
    },
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
        /// The step's numbers and what they say of the SLO, in one line.
        line: &'a str,
    },
    /// A capacity probe has ended (`id` names its results file).
    Probe {
        target: &'a str,
        id: &'a str,
        rate: f64,
        holds: bool,
        /// `240/s holds`, `264/s breaks: p99 < 100ms (measured 187.2ms)`.
        line: &'a str,
    },
    /// A step's profile: where its target's CPU went, or why no profile was taken (one line).
    Profile {
        id: &'a str,
        line: &'a str,
    },
    /// The lab receives spans at `endpoint` (OTLP/HTTP), before its first step.
    Receiving {
        endpoint: &'a str,
    },
    /// A traced step's spans: where its slowest requests' time went, or what did not come.
    Spans {
        id: &'a str,
        line: &'a str,
    },
    /// A step not run: its target was down (why).
    Skipped {
        index: usize,
        of: usize,
        id: &'a str,
        why: &'a str,
    },
}

/// Who watches a lab: its events, and (optionally) every record of a step or probe as it runs.
pub trait Watcher {
    fn event(&self, event: &Event<'_>);

    /// A consumer fed the records of the step or probe `id` while it runs (`gauges`: its
    /// workers and connections now); none by default.
    fn records(&self, _id: &str, _gauges: &Arc<attack::Gauges>) -> Option<Box<dyn results::Consumer + Send>> {
        None
    }
}

/// A closure watches the events only.
impl<F: Fn(&Event<'_>)> Watcher for F {
    fn event(&self, event: &Event<'_>) {
        self(event)
    }
}

/// Two watchers: both see every event; both may take the records.
impl<A: Watcher, B: Watcher> Watcher for (A, B) {
    fn event(&self, event: &Event<'_>) {
        self.0.event(event);
        self.1.event(event);
    }

    fn records(&self, id: &str, gauges: &Arc<attack::Gauges>) -> Option<Box<dyn results::Consumer + Send>> {
        match (self.0.records(id, gauges), self.1.records(id, gauges)) {
            (Some(a), Some(b)) => Some(Box::new(vec![a, b])),
            (a, b) => a.or(b),
        }
    }
}

impl<W: Watcher> Watcher for Option<W> {
    fn event(&self, event: &Event<'_>) {
        if let Some(w) = self {
            w.event(event)
        }
    }

    fn records(&self, id: &str, gauges: &Arc<attack::Gauges>) -> Option<Box<dyn results::Consumer + Send>> {
        self.as_ref().and_then(|w| w.records(id, gauges))
    }
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
