//! A service's run-to-run spread, measured from N labs of one build (`lab calibrate`: per cell,
//! each lab's value, the centre of its counted repeats, of every compared metric), kept in
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
use crate::side::Side;
use stats::describe::centre;
use stats::spread::{Spread, MIN_LABS};

/// The layout of calibration.json: a reader refuses another.
pub(crate) const FORMAT: u32 = 1;
/// Its name in a folder.
pub(crate) const FILE: &str = "calibration.json";

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

/// The spread of `labs` (at least [`MIN_LABS`], all of one build and plan).
pub fn calibrate(labs: &[Side]) -> Result<Calibration, CalibrationError> {
    if labs.len() < MIN_LABS {
        return Err(CalibrationError(format!(
            "a calibration needs at least {MIN_LABS} labs of one build, got {}",
            labs.len()
        )));
    }
    let mut keys: Vec<&String> = labs.iter().flat_map(|s| s.cells.keys()).collect();
    keys.sort();
    keys.dedup();
    let (mut cells, mut missing) = (Vec::new(), Vec::new());
    for key in keys {
        let counted: Vec<_> = labs.iter().filter_map(|s| s.cells.get(key)).filter(|c| !c.steps.is_empty()).collect();
        let Some(first) = labs.iter().find_map(|s| s.cells.get(key)) else { continue };
        let name = format!("{} at {}", first.target, first.label);
        if counted.len() < MIN_LABS {
            missing.push(format!(
                "{name}: counted in {} of {} labs, a spread needs {MIN_LABS}",
                counted.len(),
                labs.len()
            ));
            continue;
        }
        let metrics = COMPARED
            .iter()
            .filter_map(|m| {
                let values: Vec<f64> = counted
                    .iter()
                    .map(|c| {
                        let v: Vec<f64> = c.steps.iter().filter_map(|s| s.values.get(m).copied()).collect();
                        centre(&v)
                    })
                    .collect();
                Spread::of(&values).map(|spread| MetricSpread { metric: *m, spread })
            })
            .collect();
        cells.push(CalibratedCell {
            key: key.clone(),
            target: first.target.clone(),
            load: first.label.clone(),
            metrics,
        });
    }
    Ok(Calibration {
        format: FORMAT,
        labs: labs.iter().map(|s| s.name.clone()).collect(),
        machine: labs[0].machine.clone(),
        cells,
        missing,
        source: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::side::{CellData, StepData};

    /// A lab with one cell per (key, p50) given, one step each.
    fn lab(name: &str, cells: &[(&str, f64)]) -> Side {
        let cells = cells
            .iter()
            .map(|(key, p50)| {
                let step = StepData {
                    id: "s".into(),
                    values: BTreeMap::from([(Metric::P50, *p50), (Metric::Success, 1.0)]),
                    windows: Vec::new(),
                    requests: 1_000,
                    bytes_in: 0,
                    files: Vec::new(),
                    profile: None,
                    tail: None,
                    speed_us: None,
                };
                let cell =
                    CellData { target: "svc".into(), label: key.to_string(), steps: vec![step], ..Default::default() };
                (key.to_string(), cell)
            })
            .collect();
        Side { name: name.into(), cells, machine: None }
    }

    #[test]
    fn each_cell_gets_its_spread_and_an_uncalibrated_cell_the_widest() {
        let labs = [
            lab("a", &[("50/s", 2.6), ("100/s", 2.6)]),
            lab("b", &[("50/s", 2.7), ("100/s", 4.4)]),
            lab("c", &[("50/s", 2.6), ("100/s", 2.6)]),
            lab("d", &[("50/s", 2.65)]),
        ];
        let c = calibrate(&labs).unwrap();
        assert_eq!(c.labs, ["a", "b", "c", "d"]);
        let narrow = c.find("50/s", Metric::P50).unwrap();
        let wide = c.find("100/s", Metric::P50).unwrap();
        assert!(matches!(narrow, Found::Cell(s) if s.labs() == 4 && s.floor < 0.1), "{narrow:?}");
        assert!(matches!(wide, Found::Cell(s) if s.labs() == 3 && s.floor > 1.0), "{wide:?}");
        assert_eq!(c.find("200/s", Metric::P50), Some(Found::Widest(wide.spread())));
        // A share of 1 in every lab has no spread to speak of, but it is one: 0.
        assert_eq!(c.find("50/s", Metric::Success).unwrap().spread().floor, 0.0);
        assert_eq!(c.find("50/s", Metric::Throughput), None);
        // Written and read back as it was; another layout is refused by name.
        let dir = std::env::temp_dir().join(format!("loadlab-calibration-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = c.write(&dir).unwrap();
        let read = Calibration::read(&dir).unwrap();
        assert_eq!(read, Calibration { source: dir.display().to_string(), ..c.clone() });
        let text = std::fs::read_to_string(&path).unwrap().replace("\"format\": 1", "\"format\": 9");
        std::fs::write(&path, text).unwrap();
        let e = Calibration::read(&path).unwrap_err().0;
        assert!(e.contains("format 9 is not 1") && e.contains("calibration.json"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fewer_than_three_labs_are_refused_and_a_cell_counted_twice_is_named() {
        let e = calibrate(&[lab("a", &[("50/s", 1.0)]), lab("b", &[("50/s", 1.0)])]).unwrap_err();
        assert_eq!(e.0, "a calibration needs at least 3 labs of one build, got 2");
        let mut uncounted = lab("c", &[("50/s", 1.0), ("100/s", 1.0)]);
        uncounted.cells.get_mut("100/s").unwrap().steps.clear();
        let labs = [lab("a", &[("50/s", 1.0), ("100/s", 1.0)]), lab("b", &[("50/s", 1.1), ("100/s", 1.0)]), uncounted];
        let c = calibrate(&labs).unwrap();
        assert_eq!(c.missing, ["svc at 100/s: counted in 2 of 3 labs, a spread needs 3"]);
        assert!(c.text().contains("not calibrated: svc at 100/s"), "{}", c.text());
    }
}
