//! `[baseline]`: a previous lab this one is compared with as it ends, its gates, threshold and
//! calibration, checked.

use std::path::Path;

use super::raw::RawBaseline;
use super::{gate, Baseline, Doc, PlanError};
use crate::measure::verdict::parse_percent;

impl Doc<'_> {
    pub(super) fn baseline(&self, b: RawBaseline, dir: &Path) -> Result<Baseline, PlanError> {
        let path = dir.join(&b.path);
        if self.files_exist && !path.join("lab.json").exists() && !path.is_file() {
            return Err(self.err("baseline.path", format!("{}: no lab.json there", b.path)));
        }
        let fail_on =
            gate::Gate::parse_list(b.fail_on.as_deref().unwrap_or("")).map_err(|e| self.err("baseline.fail_on", e))?;
        let threshold_pct = match b.threshold {
            None => 2.0,
            Some(t) => {
                parse_percent(&t)
                    .filter(|p| (0.0..1.0).contains(p))
                    .ok_or_else(|| self.err("baseline.threshold", format!("{t:?} is not a percentage like \"2%\"")))?
                    * 100.0
            }
        };
        let calibration = b.calibration.map(|c| dir.join(c));
        if let Some(c) = calibration.as_ref().filter(|_| self.files_exist) {
            crate::calibration::Calibration::read(c).map_err(|e| self.err("baseline.calibration", e.0))?;
        }
        Ok(Baseline { path, fail_on, threshold_pct, calibration })
    }
}
