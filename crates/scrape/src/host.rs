//! A host's CPU seconds by mode at a step's edges, and what the step found there: how much of
//! the host worked for something other than the processes the lab knows of, and how much its
//! hypervisor took (`steal`). Read for the target's host from its node_exporter
//! (`node_cpu_seconds_total`, summed over its CPUs), and for loadlab's own machine from
//! `/proc/stat`, the file node_exporter reads. A step on a host busy with a neighbour measured
//! the neighbour as much as the service.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exposition::Exposition;

/// node_exporter's CPU counter.
pub(crate) const NODE_CPU: &str = "node_cpu_seconds_total";
/// Above this share of the host's CPU used outside the target, a step is on a busy host.
pub const DEFAULT_BUSY_SHARE: f64 = 0.10;
/// Above this share of the host's CPU stolen by the hypervisor, likewise (a plan's `host_steal`
/// raises it on a host that always has steal).
pub const DEFAULT_STEAL_SHARE: f64 = 0.02;

/// What marks a step's host: the share used outside what the lab knows of, and the share stolen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub busy_share: f64,
    pub steal_share: f64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { busy_share: DEFAULT_BUSY_SHARE, steal_share: DEFAULT_STEAL_SHARE }
    }
}

/// A host's CPU seconds by mode, and its CPUs, at one moment; and which machine it is (its boot
/// time and node name), to tell loadlab's own machine from another.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCpu {
    pub by_mode: BTreeMap<String, f64>,
    pub cpus: usize,
    pub boot_unix_s: Option<f64>,
    pub nodename: Option<String>,
}

impl HostCpu {
    /// From node_exporter's exposition.
    pub fn of(e: &Exposition) -> Result<HostCpu, String> {
        let mut by_mode = BTreeMap::new();
        let mut cpus = std::collections::BTreeSet::new();
        for s in e.series.iter().filter(|s| s.name == NODE_CPU) {
            // One mode that is not a number would read the host as neither busy nor quiet.
            let what = crate::counters::series_key(&s.name, &s.labels);
            crate::counters::checked(&what, s.value, crate::counters::MAX_CPU_S)?;
            *by_mode.entry(s.labels.get("mode").cloned().unwrap_or_default()).or_insert(0.0) += s.value;
            cpus.insert(s.labels.get("cpu").cloned().unwrap_or_default());
        }
        if by_mode.is_empty() {
            return Err(format!("no {NODE_CPU} series (is it node_exporter's /metrics?)"));
        }
        let boot_unix_s = e.series.iter().find(|s| s.name == "node_boot_time_seconds").map(|s| s.value);
        let nodename =
            e.series.iter().find(|s| s.name == "node_uname_info").and_then(|s| s.labels.get("nodename").cloned());
        Ok(HostCpu { by_mode, cpus: cpus.len(), boot_unix_s, nodename })
    }

    /// Whether `self` (a node_exporter's) and `here` (loadlab's machine) are one machine: the same
    /// node name and boot time (a target in a network namespace of loadlab's machine is on it).
    pub fn same_machine(&self, here: &HostCpu) -> bool {
        let booted = match (self.boot_unix_s, here.boot_unix_s) {
            (Some(a), Some(b)) => (a - b).abs() < 2.0,
            _ => false,
        };
        booted && self.nodename.is_some() && self.nodename == here.nodename
    }

    /// From `/proc/stat`'s text: its `cpu` line (clock ticks summed over the CPUs, `ticks_per_s`
    /// of them a second) and its `cpuN` lines' count.
    pub fn of_proc_stat(text: &str, ticks_per_s: f64, nodename: Option<String>) -> Option<HostCpu> {
        const MODES: [&str; 8] = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"];
        let line = text.lines().next()?.strip_prefix("cpu ")?;
        // guest and guest_nice, after steal, are already counted in user and nice.
        let by_mode: BTreeMap<String, f64> = MODES
            .iter()
            .zip(line.split_whitespace())
            .map(|(m, v)| Some(((*m).to_owned(), v.parse::<f64>().ok()? / ticks_per_s)))
            .collect::<Option<_>>()?;
        let cpus = text.lines().filter(|l| l.starts_with("cpu") && !l.starts_with("cpu ")).count();
        let boot_unix_s = text.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok());
        (by_mode.len() >= 4 && ticks_per_s > 0.0).then_some(HostCpu { by_mode, cpus, boot_unix_s, nodename })
    }
}

/// Whose host a reading is: the words of its neighbour's line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// The target's host, beside the target's own CPU.
    Target,
    /// loadlab's own machine, beside loadlab's CPU and the target's where it runs here.
    Loadlab,
    /// The target's host, which is loadlab's own machine: beside the target's CPU and loadlab's.
    TargetBesideLoadlab,
}

/// What a step found on its target's host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostUse {
    pub cpus: usize,
    /// Shares of the host's CPU time over the step, in %: every mode but idle and iowait, the
    /// target's own (when its CPU was measured; on loadlab's machine, loadlab's and the target's
    /// where it runs there), the rest, and the hypervisor's steal.
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

/// The target's host over a step, from its readings at the edges; `target_cpu_s` is the target's
/// own CPU over the same time, and `busy_share` the share of the host used elsewhere past which
/// the step is marked.
pub fn between(a: &HostCpu, b: &HostCpu, target_cpu_s: Option<f64>, limits: Limits) -> Result<HostUse, String> {
    between_for(Whose::Target, a, b, target_cpu_s, limits)
}

/// A host over a step, as [`between`], for `whose`: `known_cpu_s` is the CPU the lab knows of on
/// it over the same time (the target's; on loadlab's machine, loadlab's own and the target's
/// where it runs here).
pub fn between_for(
    whose: Whose,
    a: &HostCpu,
    b: &HostCpu,
    known_cpu_s: Option<f64>,
    limits: Limits,
) -> Result<HostUse, String> {
    let Limits { busy_share, steal_share } = limits;
    let (host, outside) = match whose {
        Whose::Target => ("the target's host", "the target"),
        Whose::Loadlab => ("loadlab's machine", "loadlab and the target"),
        Whose::TargetBesideLoadlab => ("the target's host (loadlab's own machine)", "the target and loadlab"),
    };
    let mut by_mode = BTreeMap::new();
    for (mode, end) in &b.by_mode {
        let start = a.by_mode.get(mode).copied().unwrap_or(0.0);
        if *end < start {
            return Err(format!("{host}'s {mode} CPU counter went back: it restarted during the step"));
        }
        by_mode.insert(mode.clone(), end - start);
    }
    let total: f64 = by_mode.values().sum();
    if total <= 0.0 {
        return Err(format!("{host}'s CPU counters did not move during the step"));
    }
    let of = |mode: &str| by_mode.get(mode).copied().unwrap_or(0.0);
    let busy = total - of("idle") - of("iowait") - of("steal");
    let pct = |s: f64| 100.0 * s / total;
    let target_pct = known_cpu_s.map(pct);
    let other_pct = target_pct.map(|t| (pct(busy) - t).max(0.0));
    let steal_pct = pct(of("steal"));
    let mut why = Vec::new();
    if let Some(o) = other_pct.filter(|o| *o > busy_share * 100.0) {
        why.push(format!(
            "{host} was busy: {o:.0}% of its {} CPUs' time used outside {outside} (over {:.0}%)",
            b.cpus,
            busy_share * 100.0
        ));
    }
    if steal_pct > steal_share * 100.0 {
        why.push(format!(
            "{host} had {steal_pct:.1}% of its CPU stolen by its hypervisor (over {}%: a host that always has \
             steal is measured with host_steal raised above it)",
            steal_share * 100.0
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
        HostCpu { by_mode, cpus: 2, boot_unix_s: None, nodename: None }
    }

    #[test]
    fn a_host_busy_with_a_neighbour_or_robbed_by_its_hypervisor_is_said() {
        // 2 CPUs for 4 s: 8 s of CPU time; the target used 1 s of the 1.2 s busy: quiet.
        let quiet = between(&host(100.0, 10.0, 0.0), &host(106.8, 11.2, 0.0), Some(1.0), Limits::default()).unwrap();
        assert!((quiet.busy_pct - 15.0).abs() < 1e-6 && quiet.neighbour.is_none(), "{quiet:?}");
        assert!((quiet.other_pct.unwrap() - 2.5).abs() < 1e-6);
        // A spinner beside it: 4 s more of user time.
        let busy = between(&host(100.0, 10.0, 0.0), &host(102.8, 15.2, 0.0), Some(1.0), Limits::default()).unwrap();
        assert!((busy.other_pct.unwrap() - 52.5).abs() < 1e-6, "{busy:?}");
        let why = busy.neighbour.unwrap();
        assert!(why.contains("was busy: 5") && why.contains("2 CPUs") && why.contains("over 10%"), "{why}");
        let robbed = between(&host(100.0, 10.0, 0.0), &host(106.4, 11.2, 0.4), Some(1.0), Limits::default()).unwrap();
        assert!(robbed.neighbour.unwrap().contains("5.0% of its CPU stolen"));
        // A host that always has steal: a plan raises the limit above it.
        let limits = Limits { steal_share: 0.25, ..Limits::default() };
        assert_eq!(
            between(&host(100.0, 10.0, 0.0), &host(106.4, 11.2, 0.4), Some(1.0), limits).unwrap().neighbour,
            None
        );
        // On loadlab's own machine, loadlab's CPU is known, not a neighbour's.
        let here = between_for(
            Whose::TargetBesideLoadlab,
            &host(100.0, 10.0, 0.0),
            &host(102.8, 15.2, 0.0),
            Some(1.0),
            Limits::default(),
        )
        .unwrap();
        assert!(here.neighbour.unwrap().starts_with("the target's host (loadlab's own machine) was busy"));
        let here = between_for(
            Whose::TargetBesideLoadlab,
            &host(100.0, 10.0, 0.0),
            &host(102.8, 15.2, 0.0),
            Some(5.0),
            Limits::default(),
        )
        .unwrap();
        assert_eq!(here.neighbour, None, "{here:?}");
        let e = between(&host(100.0, 10.0, 0.0), &host(1.0, 1.0, 0.0), None, Limits::default()).unwrap_err();
        assert!(e.contains("restarted"), "{e}");
    }

    #[test]
    fn loadlab_s_machine_is_read_from_proc_stat_as_node_exporter_reads_it() {
        let at = |user: u64, idle: u64| {
            let text = format!("cpu  {user} 0 100 {idle} 10 0 5 0 0 0\ncpu0 1 0 0 0\ncpu1 1 0 0 0\nintr 1\n");
            HostCpu::of_proc_stat(&text, 100.0, None).unwrap()
        };
        let a = at(1_000, 50_000);
        assert_eq!(a.cpus, 2);
        assert_eq!(a.by_mode["user"], 10.0);
        assert_eq!(a.by_mode["idle"], 500.0);
        assert_eq!(a.by_mode.len(), 8);
        // 4 s on 2 CPUs: 8 s, of which 6 s busy; loadlab and its target used 1 s of them.
        let b = at(1_600, 50_200);
        let here = between_for(Whose::Loadlab, &a, &b, Some(1.0), Limits::default()).unwrap();
        assert!((here.busy_pct - 75.0).abs() < 1e-9 && (here.other_pct.unwrap() - 62.5).abs() < 1e-9, "{here:?}");
        let why = here.neighbour.unwrap();
        assert!(why.starts_with("loadlab's machine was busy: 62% of its 2 CPUs' time used outside loadlab"), "{why}");
        assert_eq!(HostCpu::of_proc_stat("intr 1\n", 100.0, None), None);
        // Which machine: node_exporter's boot time and node name against /proc/stat's btime.
        let local =
            HostCpu::of_proc_stat("cpu  1 0 1 1 0 0 0 0\nbtime 1700000000\n", 100.0, Some("box".into())).unwrap();
        let node = |name: &str, boot: f64| {
            let text = format!("node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\"}} 1\nnode_boot_time_seconds {boot}\nnode_uname_info{{nodename=\"{name}\"}} 1\n");
            HostCpu::of(&Exposition::parse(&text).unwrap()).unwrap()
        };
        assert!(node("box", 1_700_000_000.4).same_machine(&local));
        assert!(!node("other", 1_700_000_000.0).same_machine(&local));
        assert!(!node("box", 1_600_000_000.0).same_machine(&local));
        // node_exporter with a mode that is not a number: the host is not read, never quiet.
        let text =
            "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 10\nnode_cpu_seconds_total{cpu=\"0\",mode=\"user\"} NaN\n";
        let e = HostCpu::of(&Exposition::parse(text).unwrap()).unwrap_err();
        assert!(e.contains("mode=\"user\"") && e.contains("NaN"), "{e}");
        assert_eq!(HostCpu::of_proc_stat("cpu  a b c d\n", 100.0, None), None);
    }
}
