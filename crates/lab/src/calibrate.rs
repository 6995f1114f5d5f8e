//! A calibration made from labs read as comparison sides: per cell, each lab's value (the centre
//! of its counted repeats) of every compared metric, and their [`Spread`].

use crate::calibration::{CalibratedCell, Calibration, MetricSpread, FORMAT};
use crate::measure::metric::COMPARED;
use crate::side::{CompareError, Side};
use stats::describe::centre;
use stats::spread::{Spread, MIN_LABS};

/// The spread of `labs` (at least [`MIN_LABS`], all of one build and plan).
pub fn calibrate(labs: &[Side]) -> Result<Calibration, CompareError> {
    if labs.len() < MIN_LABS {
        return Err(CompareError(format!(
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
    use crate::measure::ab::Found;
    use crate::measure::metric::Metric;
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
                    files: Vec::new(),
                    profile: None,
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
