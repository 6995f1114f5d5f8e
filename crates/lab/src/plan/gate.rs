//! A plan's `fail_on` and `--fail-on`: the changes that fail a comparison with a baseline.

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

impl Gate {
    /// `p99>+5%,throughput<-3%`.
    pub fn parse_list(s: &str) -> Result<Vec<Gate>, String> {
        s.split(',').filter(|c| !c.trim().is_empty()).map(|c| Gate::parse(c.trim())).collect()
    }

    pub fn parse(c: &str) -> Result<Gate, String> {
        let at = c.find(['<', '>']).ok_or_else(|| format!("{c:?}: expected METRIC>+N% or METRIC<-N%"))?;
        let name = c[..at].trim();
        let metric = Metric::parse(name).ok().filter(|m| COMPARED.contains(m)).ok_or_else(|| {
            let names: Vec<&str> = COMPARED.iter().map(|m| m.name()).collect();
            format!("{c:?}: unknown metric {name:?} ({})", names.join(", "))
        })?;
        let limit = c[at + 1..].trim();
        let limit_pct = limit
            .strip_suffix('%')
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("{c:?}: {limit:?} is not a change like +5% or -3%"))?;
        Ok(Gate { metric, above: c.as_bytes()[at] == b'>', limit_pct })
    }

    pub fn text(&self) -> String {
        format!("{}{}{:+}%", self.metric.name(), if self.above { ">" } else { "<" }, self.limit_pct)
    }
}
