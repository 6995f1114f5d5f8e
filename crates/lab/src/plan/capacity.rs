//! `[capacity]`: the search's bounds, precision and probe length, checked.

use super::raw::RawCapacity;
use super::{CapacitySpec, Doc, PlanError, DEFAULT_DURATION};
use crate::measure::verdict::parse_percent;

impl Doc<'_> {
    /// A search of rates, or of a replay's speeds (`speed`): from 1x to 256x unless given.
    pub(super) fn capacity(&self, c: RawCapacity, speed: bool) -> Result<CapacitySpec, PlanError> {
        let (start, max) = if speed { (1.0, 256.0) } else { (100.0, 100_000.0) };
        let start = c.start.map(|s| self.rate("capacity.start", &s)).transpose()?.unwrap_or(start);
        let max = c.max.map(|s| self.rate("capacity.max", &s)).transpose()?.unwrap_or(max);
        if max <= start {
            return Err(self.err("capacity.max", format!("{max} is not above start ({start})")));
        }
        let precision = match c.precision {
            None => 0.05,
            Some(p) => parse_percent(&p)
                .filter(|p| *p > 0.0 && *p < 1.0)
                .ok_or_else(|| self.err("capacity.precision", format!("{p:?} is not a percentage like \"5%\"")))?,
        };
        let probe = self.duration("capacity.probe", c.probe.as_ref(), DEFAULT_DURATION)?;
        CapacitySpec::new(start, max, precision, probe).map_err(|e| self.err("capacity", e))
    }
}
