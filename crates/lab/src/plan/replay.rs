//! `[load] replay = "access.log"` and its `speed` axis: every step replays the log from its
//! start for the step's length, the log's time passing `speed` times faster.

use std::path::{Path, PathBuf};

use super::raw::{NumOrText, OneOrMany};
use super::{Doc, PlanError};

impl Doc<'_> {
    /// The replayed log and its speeds, checked against the rest of the load: a replay sets its
    /// own rate, so it takes neither `rate` nor `connections`; `speed` needs a replay.
    pub(super) fn replay_load(
        &self,
        replay: Option<&str>,
        speed: Option<OneOrMany<NumOrText>>,
        dir: &Path,
        other_model: bool,
        searching: bool,
    ) -> Result<(Option<PathBuf>, Vec<f64>), PlanError> {
        let speeds = speed.map(OneOrMany::into_vec).unwrap_or_default();
        let Some(replay) = replay else {
            if !speeds.is_empty() {
                return Err(self.err("load.speed", "speeds a replay: it needs load.replay"));
            }
            return Ok((None, Vec::new()));
        };
        if other_model {
            return Err(
                self.err("load.replay", "a replay sends at the log's times: give speed, not rate or connections")
            );
        }
        let path = self.file("load.replay", dir, replay)?;
        let mut out = Vec::new();
        for s in &speeds {
            let v = match s {
                NumOrText::Int(n) => *n as f64,
                NumOrText::Float(f) => *f,
                NumOrText::Text(t) => t.trim_end_matches('x').parse().unwrap_or(f64::NAN),
            };
            if !(v.is_finite() && v > 0.0 && v <= 1e6) {
                return Err(self.err("load.speed", "a speed is a number above 0 (2 or \"2x\": twice as fast)"));
            }
            out.push(v);
        }
        self.distinct("load.speed", &out, |s| format!("{s}x"))?;
        // A replay at its own pace, unless the plan only searches its speed.
        if out.is_empty() && !searching {
            out.push(1.0);
        }
        Ok((Some(path), out))
    }
}
