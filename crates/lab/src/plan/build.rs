//! Plans built as values (the demo, `lab capacity`), checked by the same rules as a plan file:
//! no TOML written only to be parsed again.

use std::path::PathBuf;
use std::time::Duration;

use attack::Protocol;

use super::{CapacitySpec, LoadSpec, Plan, TargetKind, TargetSpec, DEFAULT_DURATION, DEFAULT_PAUSE};
use crate::measure::verdict::Clause;

impl Default for LoadSpec {
    /// What a plan's `[load]` gives for every field left out.
    fn default() -> LoadSpec {
        LoadSpec {
            rate: Vec::new(),
            connections: Vec::new(),
            protocol: vec![Protocol::Http1],
            requests_per_conn: vec![None],
            streams: vec![1],
            duration: DEFAULT_DURATION,
            warmup: Duration::ZERO,
            repeats: 1,
            pause: DEFAULT_PAUSE,
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            template_dir: PathBuf::from("."),
            timeout: attack::DEFAULT_TIMEOUT,
            max_workers: None,
            pace_tick: Duration::ZERO,
            placement: Default::default(),
            replay: None,
            speed: Vec::new(),
        }
    }
}

impl CapacitySpec {
    /// A search from `start` to `max` per second, to `precision` (0.05 = 5%), probes `probe` long.
    pub fn new(start: f64, max: f64, precision: f64, probe: Duration) -> Result<CapacitySpec, String> {
        attack::check_rate(start).and_then(|_| attack::check_rate(max))?;
        if max <= start {
            return Err(format!("max {max} is not above start ({start})"));
        }
        if !(precision > 0.0 && precision < 1.0) {
            return Err(format!("precision {precision} is not between 0% and 100%"));
        }
        if probe.is_zero() {
            return Err("probes must be longer than 0".into());
        }
        Ok(CapacitySpec { start, max, precision, probe })
    }
}

impl TargetSpec {
    /// Something already running at `url`.
    pub fn running(name: &str, url: &str) -> TargetSpec {
        TargetSpec {
            name: name.into(),
            kind: TargetKind::Running { url: url.into(), pid: None, process: None },
            path: "/".into(),
            metrics: None,
            series: Vec::new(),
            measure: None,
            tls: attack::TlsOptions::default(),
            profile: None,
            traces: false,
        }
    }

    /// An embedded origin simulator serving `recipe`, requested at `path`.
    pub fn simulator(name: &str, recipe: PathBuf, path: &str) -> TargetSpec {
        TargetSpec {
            name: name.into(),
            kind: TargetKind::Simulator { recipe },
            path: path.into(),
            metrics: None,
            series: Vec::new(),
            measure: None,
            tls: attack::TlsOptions::default(),
            profile: None,
            traces: false,
        }
    }
}

impl Default for Plan {
    /// A plan of nothing: what a lab read back from lab.json carries (the plan is not kept there).
    fn default() -> Plan {
        Plan::new("", Vec::new(), LoadSpec::default(), Vec::new())
    }
}

impl Plan {
    /// A plan of `targets` under `load`, judged by `slo`.
    pub fn new(name: &str, targets: Vec<TargetSpec>, load: LoadSpec, slo: Vec<Clause>) -> Plan {
        Plan {
            name: name.into(),
            question: String::new(),
            origin: None,
            targets,
            load,
            variants: Vec::new(),
            slo,
            capacity: None,
            hypotheses: Vec::new(),
            baseline: None,
            history: None,
            profile: Default::default(),
            traces_listen: None,
            traces_export: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_plan_equals_the_same_plan_read_from_a_file() {
        let text =
            "name = \"x\"\n[targets.svc]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 10\n[slo]\np99 = \"< 1s\"\n";
        let read = crate::plan::parse(text, "plan.toml", std::path::Path::new(".")).unwrap();
        let built = Plan::new(
            "x",
            vec![TargetSpec::running("svc", "http://127.0.0.1:1/")],
            LoadSpec { rate: vec![10.0], ..LoadSpec::default() },
            vec![Clause::parse("p99", "< 1s").unwrap()],
        );
        assert_eq!(format!("{built:?}"), format!("{read:?}"));
    }

    #[test]
    fn a_capacity_search_is_checked_as_in_a_file() {
        assert!(CapacitySpec::new(100.0, 50.0, 0.05, Duration::from_secs(1)).unwrap_err().contains("not above start"));
        assert!(CapacitySpec::new(100.0, 500.0, 1.5, Duration::from_secs(1)).is_err());
        assert!(CapacitySpec::new(100.0, 500.0, 0.05, Duration::ZERO).is_err());
        assert!(CapacitySpec::new(100.0, 500.0, 0.05, Duration::from_secs(1)).is_ok());
    }
}
