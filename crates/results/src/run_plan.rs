//! What a run was asked to do, typed: written by the attack into its header, read by `report`
//! (steps, lateness, shard sets), the live view and the lab. The header's `settings` stay a
//! free-form record of the flags as given; files written before the plan existed have it
//! derived from those settings ([`RunHeader::plan`]).

use serde::{Deserialize, Serialize};

use crate::record::RunHeader;

/// The typed part of a run's header.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// Open model (a schedule of sends); otherwise closed (connections back to back), or imported.
    #[serde(default)]
    pub open: bool,
    /// Open model: the rate asked, when constant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Open model in steps (`--rate-steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<RateStepsPlan>,
    /// `http1`, `http2` or `h2c` (empty when unknown).
    #[serde(default)]
    pub protocol: String,
    /// Open model: sends due within a tick leave together at its end (`--pace-tick`), µs.
    #[serde(default)]
    pub pace_tick_us: u64,
    /// Open model without a tick: sends due within this window of each other were coalesced
    /// into one wake-up (high rates only), µs; 0 when each hit was sent at its own time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pace_window_us: u64,
    /// `I/N` when the run is one shard of a sharded attack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The id every shard of one run shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Converted from another tool's results (`vegeta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// An access log replayed at its recorded timing (`attack --replay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayPlan>,
    /// Each request carried a W3C `traceparent` made from this key and its sequence number
    /// ([`crate::trace::TraceKey`], its text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl RunPlan {
    /// The key the run's trace ids were made with, when its requests carried them.
    pub fn trace_key(&self) -> Option<crate::trace::TraceKey> {
        self.trace.as_deref().and_then(crate::trace::TraceKey::parse)
    }
}

/// What was replayed, and how fast.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayPlan {
    /// The log's file name.
    pub source: String,
    pub speed: f64,
    pub loops: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_s: Option<f64>,
    /// The run's length, when it ended the replay (`--duration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_s: Option<f64>,
}

impl std::fmt::Display for ReplayPlan {
    /// `access.log at 2x, 3 loops, from 600s to 1200s of it`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}x", self.source, self.speed)?;
        match self.limit_s {
            Some(l) => write!(f, " for {l}s")?,
            None if self.loops > 1 => write!(f, ", {} loops", self.loops)?,
            None => {}
        }
        match (self.from_s, self.to_s) {
            (Some(a), Some(b)) => write!(f, ", from {a}s to {b}s of it"),
            (Some(a), None) => write!(f, ", from {a}s of it"),
            (None, Some(b)) => write!(f, ", its first {b}s"),
            (None, None) => Ok(()),
        }
    }
}

/// Each step's length and the rates asked in turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateStepsPlan {
    pub step_us: u64,
    pub rates: Vec<f64>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl RunPlan {
    /// A closed model's run (neither a schedule nor an import).
    pub fn closed(&self) -> bool {
        !self.open && self.imported_from.is_none()
    }

    /// The plan of a file written before headers carried one, from its settings.
    fn from_settings(s: &serde_json::Map<String, serde_json::Value>) -> RunPlan {
        let text = |k: &str| s.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let open = s.contains_key("rate") || s.contains_key("rate_steps");
        let step_s = s.get("step_s").and_then(|v| v.as_f64()).filter(|v| *v > 0.0);
        let rates = s.get("step_rates").and_then(|v| v.as_array());
        RunPlan {
            open,
            rate: text("rate").and_then(|r| r.trim_end_matches("/s").parse().ok()),
            steps: step_s.zip(rates).map(|(step, rates)| RateStepsPlan {
                step_us: (step * 1e6) as u64,
                rates: rates.iter().filter_map(|r| r.as_f64()).collect(),
            }),
            protocol: text("protocol").unwrap_or_default(),
            pace_tick_us: text("pace_tick")
                .and_then(|t| crate::duration::parse(&t).ok())
                .map_or(0, |d| d.as_micros() as u64),
            shard: text("shard"),
            run: text("run"),
            imported_from: text("imported_from"),
            pace_window_us: 0,
            replay: None,
            trace: None,
        }
    }
}

impl RunHeader {
    /// What the run was asked to do: the typed plan, or for older files, what their settings say.
    pub fn plan(&self) -> RunPlan {
        self.run_plan.clone().unwrap_or_else(|| RunPlan::from_settings(&self.settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_files_settings_give_the_same_plan() {
        let settings = serde_json::json!({
            "rate_steps": "400,800@60000ms", "step_s": 60.0, "step_rates": [400.0, 800.0],
            "protocol": "h2c", "pace_tick": "1ms", "shard": "1/4", "run": "ab12",
        });
        let header = RunHeader { settings: settings.as_object().unwrap().clone(), ..Default::default() };
        let plan = header.plan();
        assert_eq!(
            plan,
            RunPlan {
                open: true,
                rate: None,
                steps: Some(RateStepsPlan { step_us: 60_000_000, rates: vec![400.0, 800.0] }),
                protocol: "h2c".into(),
                pace_tick_us: 1000,
                shard: Some("1/4".into()),
                run: Some("ab12".into()),
                imported_from: None,
                pace_window_us: 0,
                replay: None,
                trace: None,
            }
        );
        let constant = serde_json::json!({"rate": "700", "connections": 4});
        let plan = RunHeader { settings: constant.as_object().unwrap().clone(), ..Default::default() }.plan();
        assert_eq!((plan.open, plan.rate, plan.closed()), (true, Some(700.0), false));
        // A typed plan wins over the free-form settings.
        let typed = RunHeader { run_plan: Some(RunPlan { rate: Some(5.0), ..Default::default() }), ..header };
        assert_eq!(typed.plan().rate, Some(5.0));
        assert!(typed.plan().closed());
    }
}
