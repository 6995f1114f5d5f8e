//! `--quick`: the plan shortened for a check of the plan itself (CI, a first try). The one place
//! that says what `--quick` changes; the preview, the run and the reports all use the plan it
//! gives.

use std::time::Duration;

use super::{CapacitySpec, Plan};

/// A step's length under `--quick`.
pub(crate) const QUICK_STEP: Duration = Duration::from_secs(2);

impl Plan {
    /// This plan as `--quick` runs it: steps of at most [`QUICK_STEP`] after at most 0.5 s of
    /// warm-up, pauses of at most 0.2 s, at most 3 repeats; capacity probes of at most 2 s and a
    /// precision of at least 10%.
    pub fn quick(&self) -> Plan {
        let mut plan = self.clone();
        let load = &mut plan.load;
        load.duration = load.duration.min(QUICK_STEP);
        load.warmup = load.warmup.min(Duration::from_millis(500));
        load.pause = load.pause.min(Duration::from_millis(200));
        load.repeats = load.repeats.min(3);
        plan.capacity = self.capacity.as_ref().map(|spec| CapacitySpec {
            probe: spec.probe.min(QUICK_STEP),
            precision: spec.precision.max(0.10),
            ..spec.clone()
        });
        plan
    }
}
