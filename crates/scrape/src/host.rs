//! The target's host, from its node_exporter: CPU seconds by mode (`node_cpu_seconds_total`,
//! summed over its CPUs) at a step's edges, and what the step found there: how much of the host
//! worked for something other than the target, and how much its hypervisor took (`steal`). A
//! step on a host busy with a neighbour measured the neighbour as much as the service.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exposition::Exposition;

/// node_exporter's CPU counter.
pub(crate) const NODE_CPU: &str = "node_cpu_seconds_total";
/// Above this share of the host's CPU used outside the target, a step is on a busy host.
pub const DEFAULT_BUSY_SHARE: f64 = 0.10;
/// Above this share of the host's CPU stolen by the hypervisor, likewise.
pub(crate) const STEAL_SHARE: f64 = 0.02;

/// A host's CPU seconds by mode, and its CPUs, at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCpu {
    pub by_mode: BTreeMap<String, f64>,
    pub cpus: usize,
}

impl HostCpu {
    /// From node_exporter's exposition.
    pub fn of(e: &Exposition) -> Result<HostCpu, String> {
        let mut by_mode = BTreeMap::new();
        let mut cpus = std::collections::BTreeSet::new();
        for s in e.series.iter().filter(|s| s.name == NODE_CPU) {
            *by_mode.entry(s.labels.get("mode").cloned().unwrap_or_default()).or_insert(0.0) += s.value;
            cpus.insert(s.labels.get("cpu").cloned().unwrap_or_default());
        }
        if by_mode.is_empty() {
            return Err(format!("no {NODE_CPU} series (is it node_exporter's /metrics?)"));
        }
        Ok(HostCpu { by_mode, cpus: cpus.len() })
    }
}

/// What a step found on its target's host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostUse {
    pub cpus: usize,
    /// Shares of the host's CPU time over the step, in %: every mode but idle and iowait, the
    /// target's own (when its CPU was measured), the rest, and the hypervisor's steal.
    pub busy_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_pct: Option<f64>,
    pub steal_pct: f64,
    /// CPU seconds by mode over the step.
    pub by_mode: BTreeMap<String, f64>,
    /// Why the step measured a neighbour as much as the service, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbour: Option<String>,
}

/// The host over a step, from its readings at the edges; `target_cpu_s` is the target's own
/// CPU over the same time, and `busy_share` the share of the host used elsewhere past which the
/// step is marked.
pub fn between(a: &HostCpu, b: &HostCpu, target_cpu_s: Option<f64>, busy_share: f64) -> Result<HostUse, String> {
    let mut by_mode = BTreeMap::new();
    for (mode, end) in &b.by_mode {
        let start = a.by_mode.get(mode).copied().unwrap_or(0.0);
        if *end < start {
            return Err(format!("the host's {mode} CPU counter went back: it restarted during the step"));
        }
        by_mode.insert(mode.clone(), end - start);
    }
    let total: f64 = by_mode.values().sum();
    if total <= 0.0 {
        return Err("the host's CPU counters did not move during the step".into());
    }
    let of = |mode: &str| by_mode.get(mode).copied().unwrap_or(0.0);
    let busy = total - of("idle") - of("iowait") - of("steal");
    let pct = |s: f64| 100.0 * s / total;
    let target_pct = target_cpu_s.map(pct);
    let other_pct = target_pct.map(|t| (pct(busy) - t).max(0.0));
    let steal_pct = pct(of("steal"));
    let mut why = Vec::new();
    if let Some(o) = other_pct.filter(|o| *o > busy_share * 100.0) {
        why.push(format!(
            "the target's host was busy: {o:.0}% of its {} CPUs' time used outside the target (over {:.0}%)",
            b.cpus,
            busy_share * 100.0
        ));
    }
    if steal_pct > STEAL_SHARE * 100.0 {
        why.push(format!(
            "the target's host had {steal_pct:.1}% of its CPU stolen by its hypervisor (over {:.0}%)",
            STEAL_SHARE * 100.0
        ));
    }
    let neighbour = (!why.is_empty()).then(|| why.join("; "));
    Ok(HostUse { cpus: b.cpus, busy_pct: pct(busy), target_pct, other_pct, steal_pct, by_mode, neighbour })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(idle: f64, user: f64, steal: f64) -> HostCpu {
        let by_mode = [("idle", idle), ("user", user), ("steal", steal), ("iowait", 0.0)]
            .into_iter()
            .map(|(m, v)| (m.to_owned(), v))
            .collect();
        HostCpu { by_mode, cpus: 2 }
    }

    #[test]
    fn a_host_busy_with_a_neighbour_or_robbed_by_its_hypervisor_is_said() {
        // 2 CPUs for 4 s: 8 s of CPU time; the target used 1 s of the 1.2 s busy: quiet.
        let quiet = between(&host(100.0, 10.0, 0.0), &host(106.8, 11.2, 0.0), Some(1.0), 0.10).unwrap();
        assert!((quiet.busy_pct - 15.0).abs() < 1e-6 && quiet.neighbour.is_none(), "{quiet:?}");
        assert!((quiet.other_pct.unwrap() - 2.5).abs() < 1e-6);
        // A spinner beside it: 4 s more of user time.
        let busy = between(&host(100.0, 10.0, 0.0), &host(102.8, 15.2, 0.0), Some(1.0), 0.10).unwrap();
        assert!((busy.other_pct.unwrap() - 52.5).abs() < 1e-6, "{busy:?}");
        let why = busy.neighbour.unwrap();
        assert!(why.contains("was busy: 5") && why.contains("2 CPUs") && why.contains("over 10%"), "{why}");
        let robbed = between(&host(100.0, 10.0, 0.0), &host(106.4, 11.2, 0.4), Some(1.0), 0.10).unwrap();
        assert!(robbed.neighbour.unwrap().contains("5.0% of its CPU stolen"));
        let e = between(&host(100.0, 10.0, 0.0), &host(1.0, 1.0, 0.0), None, 0.10).unwrap_err();
        assert!(e.contains("restarted"), "{e}");
    }
}
