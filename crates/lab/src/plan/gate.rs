//! A plan's `fail_on` and `--fail-on`: the changes that fail a comparison with a baseline, or a
//! lab against its history.

use serde::{Deserialize, Serialize};

use crate::measure::metric::{Metric, COMPARED};

/// A `--fail-on` clause: `p99>+5%` fails on a significant p99 rise beyond 5%.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    #[serde(rename = "measure")]
    pub metric: Metric,
    /// Fails when the change is above `limit_pct` (`>`), or below it (`<`).
    pub above: bool,
    pub limit_pct: f64,
}

/// The metrics a history records (`history::RECORDED`) and can gate: those `lab compare`
/// compares, and p90.
pub const HISTORY_GATED: [Metric; 7] = [
    Metric::Throughput,
    Metric::P50,
    Metric::P90,
    Metric::P99,
    Metric::Success,
    Metric::TargetCpu,
    Metric::GeneratorCpu,
];

/// What `history check` gates when neither `--fail-on` nor `[history] fail_on` says: the centre,
/// the tail and the work per request, each at +5%.
pub const HISTORY_DEFAULT: &str = "p50>+5%,p99>+5%,target_cpu>+5%";

/// What `lab ab` gates when `--fail-on` does not say: the centre and the work per request. A
/// pull request's run must decide within its pairs; p99's pairs spread 18-143% on these
/// machines (a 3 s step's p99 is its 12th slowest request of 1,200, and a hiccup of the machine
/// of 5-40 ms is one: docs/DECISIONS.md), which no run of 20 pairs can show within +5%, nor
/// often within +25%. p99 is shown with its interval; `--fail-on` gates it where its spread
/// allows (the run says at once when it does not).
pub const AB_DEFAULT: &str = "p50>+5%,target_cpu>+5%";

impl Gate {
    /// `p99>+5%,throughput<-3%`, on the metrics `lab compare` compares.
    pub fn parse_list(s: &str) -> Result<Vec<Gate>, String> {
        Gate::parse_list_of(s, &COMPARED)
    }

    /// The same, on the metrics a history records ([`HISTORY_GATED`]).
    pub fn parse_history_list(s: &str) -> Result<Vec<Gate>, String> {
        Gate::parse_list_of(s, &HISTORY_GATED)
    }

    fn parse_list_of(s: &str, metrics: &[Metric]) -> Result<Vec<Gate>, String> {
        s.split(',').filter(|c| !c.trim().is_empty()).map(|c| Gate::parse_of(c.trim(), metrics)).collect()
    }

    pub fn parse(c: &str) -> Result<Gate, String> {
        Gate::parse_of(c, &COMPARED)
    }

    fn parse_of(c: &str, metrics: &[Metric]) -> Result<Gate, String> {
        let at = c.find(['<', '>']).ok_or_else(|| format!("{c:?}: expected METRIC>+N% or METRIC<-N%"))?;
        let name = c[..at].trim();
        let metric = Metric::parse(name).ok().filter(|m| metrics.contains(m)).ok_or_else(|| {
            let names: Vec<&str> = metrics.iter().map(|m| m.name()).collect();
            format!("{c:?}: unknown metric {name:?} ({})", names.join(", "))
        })?;
        let limit = c[at + 1..].trim();
        let limit_pct = limit
            .strip_suffix('%')
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("{c:?}: {limit:?} is not a change like +5% or -3%"))?;
        let above = c.as_bytes()[at] == b'>';
        // `p99>-5%` would fail on an improvement: a rise is written +N%, a fall -N%.
        if (above && limit_pct < 0.0) || (!above && limit_pct > 0.0) || limit_pct <= -100.0 {
            let (op, sign) = if above { (">", "+") } else { ("<", "-") };
            return Err(format!("{c:?}: a gate on {name}{op} takes a change like {sign}5%"));
        }
        Ok(Gate { metric, above, limit_pct })
    }

    pub fn text(&self) -> String {
        format!("{}{}{:+}%", self.metric.name(), if self.above { ">" } else { "<" }, self.limit_pct)
    }

    /// The change (a ratio, new over old) is past this gate's threshold in its direction.
    pub fn passed_by(&self, ratio: f64) -> bool {
        let limit = 1.0 + self.limit_pct / 100.0;
        if self.above {
            ratio > limit
        } else {
            ratio < limit
        }
    }
}
