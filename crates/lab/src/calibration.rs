//! A service's run-to-run spread, measured from N labs of one build (`lab calibrate`, made by
//! `calibrate`), kept in
//! calibration.json and read by `lab compare --calibration` and a plan's `[baseline]`: per cell
//! (target and load point) and compared metric, the [`Spread`] of its values between the labs.
//!
//! The fixed floors of `ab` were measured on nginx and an origin simulator; a service with modes
//! of its own (a CPU-bound server answering in 2.6 ms in some labs and 4.4 ms in others) moves
//! further between reruns than they allow, and one run a side cannot see that. Its own A/A labs
//! can.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::measure::ab::Found;
use crate::measure::metric::{Metric, COMPARED};
use crate::provenance::Machine;
use stats::spread::Spread;

/// The layout of calibration.json: a reader refuses another.
pub const FORMAT: u32 = 1;
/// Its name in a folder.
pub const FILE: &str = "calibration.json";

/// A calibration that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CalibrationError(pub String);

/// The spread of every cell and metric over the labs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub format: u32,
    /// The labs it was measured from, as named.
    pub labs: Vec<String>,
    /// The machine of the first lab (none when it did not record one).
    pub machine: Option<Machine>,
    pub cells: Vec<CalibratedCell>,
    /// Cells with fewer than [`stats::spread::MIN_LABS`] labs that counted them, with why.
    pub missing: Vec<String>,
    /// Where it was read from, as a comparison quotes it (empty: made here, not read).
    #[serde(skip)]
    pub source: String,
}

/// One target at one load point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibratedCell {
    /// The key `lab compare` matches cells by.
    pub key: String,
    pub target: String,
    pub load: String,
    pub metrics: Vec<MetricSpread>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSpread {
    pub metric: Metric,
    #[serde(flatten)]
    pub spread: Spread,
}

fn spread_of(c: &CalibratedCell, metric: Metric) -> Option<&Spread> {
    c.metrics.iter().find(|m| m.metric == metric).map(|m| &m.spread)
}

impl Calibration {
    /// The spread of `metric` at the cell `key`, else its widest anywhere.
    pub fn find(&self, key: &str, metric: Metric) -> Option<Found<'_>> {
        if let Some(c) = self.cells.iter().find(|c| c.key == key) {
            return spread_of(c, metric).map(Found::Cell);
        }
        self.cells
            .iter()
            .filter_map(|c| spread_of(c, metric))
            .max_by(|a, b| a.floor.total_cmp(&b.floor))
            .map(Found::Widest)
    }

    /// What a comparison says of it: how many labs, and whether they ran where these did.
    pub fn describe(&self, compared: Option<&Machine>) -> String {
        let mut s = format!("run-to-run spread of {} labs of one build ({})", self.labs.len(), self.source);
        if let (Some(mine), Some(theirs)) = (&self.machine, compared) {
            if mine != theirs {
                s.push_str(&format!(
                    " on another machine ({}, {} cores): its spread may not be this machine's",
                    mine.cpu, mine.cores
                ));
            }
        }
        s
    }

    pub fn read(path: &Path) -> Result<Calibration, CalibrationError> {
        let file = if path.is_dir() { path.join(FILE) } else { path.to_path_buf() };
        let text = std::fs::read_to_string(&file).map_err(|e| CalibrationError(format!("{}: {e}", file.display())))?;
        let mut c: Calibration =
            serde_json::from_str(&text).map_err(|e| CalibrationError(format!("{}: {e}", file.display())))?;
        c.source = path.display().to_string();
        if c.format != FORMAT {
            return Err(CalibrationError(format!(
                "{}: format {} is not {FORMAT}, which this loadlab reads: calibrate again",
                file.display(),
                c.format
            )));
        }
        Ok(c)
    }

    /// Writes calibration.json into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join(FILE);
        results::files::put(&path, serde_json::to_string_pretty(self)?.as_bytes())?;
        Ok(path)
    }

    /// A table for the terminal: per cell, the change each metric needs to be more than a rerun.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s =
            format!("Two labs of this build differ by less than this in 95% of pairs ({} labs):\n", self.labs.len());
        let width = self.cells.iter().map(|c| c.target.len() + c.load.len() + 4).max().unwrap_or(4).clamp(4, 120);
        let _ = write!(s, "{:<width$}", "cell");
        for m in COMPARED {
            let _ = write!(s, "{:>15}", m.name());
        }
        s.push('\n');
        for c in &self.cells {
            let _ = write!(s, "{:<width$}", format!("{} at {}", c.target, c.load));
            for m in COMPARED {
                let floor = c.metrics.iter().find(|x| x.metric == m).map(|x| x.spread.floor);
                let _ = write!(s, "{:>15}", floor.map_or("-".to_owned(), |f| format!("±{:.1}%", f * 100.0)));
            }
            s.push('\n');
        }
        for m in &self.missing {
            let _ = writeln!(s, "not calibrated: {m}");
        }
        s
    }
}
