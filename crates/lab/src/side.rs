//! One side of a comparison: a lab's cells (target and load point) with their steps' values,
//! 1 s windows and profiles (`read_side` reads one from a lab or a results file). `compare`,
//! `calibration` and `lab ab` compare these.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::measure::metric::Metric;
use crate::measure::windows::Window;

/// One step of a side, as compared.
#[derive(Clone, Debug)]
pub struct StepData {
    pub id: String,
    pub values: BTreeMap<Metric, f64>,
    pub windows: Vec<Window>,
    /// Requests counted (past the warm-up).
    pub requests: u64,
    /// The bytes their answers brought in.
    pub bytes_in: u64,
    /// The results files (a sharded run has several): the charts are drawn from them.
    pub files: Vec<PathBuf>,
    /// The step's profile and the folder its files are in.
    pub profile: Option<(profile::StepProfile, PathBuf)>,
    /// Where its slowest requests' time went, when its target was traced.
    pub tail: Option<spans::Tail>,
    /// The speed probe's round trip on the target's CPUs during it (µs), where measured.
    pub speed_us: Option<f64>,
}

/// A target at a load point on one side.
#[derive(Clone, Debug, Default)]
pub struct CellData {
    pub target: String,
    pub label: String,
    pub steps: Vec<StepData>,
    /// Steps left out (generator-limited, target down, a starved generator), with why.
    pub excluded: Vec<String>,
}

impl CellData {
    /// The first of its steps that was profiled: its id, its profile and the folder its files
    /// are in.
    pub fn first_profile(&self) -> Option<(String, profile::StepProfile, PathBuf)> {
        self.steps.iter().find_map(|s| s.profile.as_ref().map(|(p, d)| (s.id.clone(), p.clone(), d.clone())))
    }
}

/// One side: a lab's cells by key (target and full load point).
#[derive(Clone, Debug, Default)]
pub struct Side {
    pub name: String,
    pub cells: BTreeMap<String, CellData>,
    /// Where the lab ran (none for a results file, or a lab.json that did not record it).
    pub machine: Option<crate::provenance::Machine>,
}
