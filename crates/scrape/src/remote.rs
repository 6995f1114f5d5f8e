//! A target measured where it runs: its CPU counter and memory gauge read from its exporter at a
//! step's edges, bounded in time and size, and what a step used worked out from two readings
//! (a counter that went back is a restart, never a negative CPU).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use results::duration::go_string;
use results::text::plain_line;

use crate::counters::{checked, Counters, MAX_MEMORY_BYTES};
use crate::exposition::Exposition;
pub use crate::fetch::{unix_now, without_credentials, MAX_BYTES, READ_TIMEOUT};
use crate::host::HostCpu;
use crate::prometheus::Server;
use crate::Selector;

/// The counters exporters read from /proc move in the kernel's clock ticks (100 a second).
pub const EXPORTER_RESOLUTION_S: f64 = 0.01;
/// A step's CPU is a measurement when the counter's resolution (the most two readings of a
/// counter in ticks can be off by, together) is at most this share of what the step used.
pub(crate) const MAX_RESOLUTION_SHARE: f64 = 0.05;

/// The longest error line a source's answer can make, in characters.
pub const MAX_ERROR: usize = 400;

/// `process_cpu_seconds_total`, which the Go, Java, Python and Node clients all export.
pub const DEFAULT_CPU: &str = "process_cpu_seconds_total";
/// `process_resident_memory_bytes`, likewise.
pub const DEFAULT_MEMORY: &str = "process_resident_memory_bytes";

/// Where a target's series are read.
#[derive(Clone, Debug)]
pub enum Source {
    /// An exporter's URL (`http://host:9256/metrics`), read at each edge.
    Exporter(String),
    /// A Prometheus server scraping the target's exporters, asked at each edge.
    Prometheus(Server),
}

/// Where a target's figures are read, and which.
#[derive(Clone, Debug)]
pub struct Remote {
    pub source: Source,
    /// A counter of CPU seconds.
    pub cpu: Selector,
    /// A gauge of resident bytes.
    pub memory: Option<Selector>,
    /// The node_exporter of the target's host.
    pub host: Option<String>,
    /// The share of the host's CPU used outside the target past which a step is marked.
    pub host_limits: crate::host::Limits,
    /// How https sources are trusted.
    pub tls: client::TlsOptions,
}

/// Where a target's figures came from, as lab.json records it (no credentials).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `exporter URL` (its user and password left out).
    pub source: String,
    pub cpu: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// The smallest step of CPU the counter moves in, in seconds (the kernel's ticks, as
    /// exporters read /proc).
    pub resolution_s: f64,
    /// A server's scrape interval: its values are as old as its last scrape, so a step's CPU is
    /// the counter's rate between the samples inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrape_interval_s: Option<f64>,
    /// Where the scrape interval was read: the server's targets, or the plan where the server
    /// did not answer for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrape_interval_from: Option<String>,
    /// `node_exporter URL`, when the host was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// % of the host's CPU used outside the target past which a step is marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_busy_pct: Option<f64>,
    /// % of the host's CPU stolen by its hypervisor past which a step is marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_pct: Option<f64>,
}

/// One reading of a target's figures.
#[derive(Clone, Debug)]
pub struct Reading {
    pub at: Instant,
    /// The CPU counter's series, in seconds (why not, when it could not be read or held a value
    /// no counter can).
    pub cpu: Result<Counters, String>,
    /// When the CPU counter's value was sampled (unix s), where the source says (a Prometheus
    /// server's last scrape); none when it was read as it is now (an exporter).
    pub sampled_unix_s: Option<f64>,
    pub memory_bytes: Option<f64>,
    /// The host's CPU by mode, when asked for.
    pub host: Option<Result<HostCpu, String>>,
}

impl Reading {
    /// The CPU counter's series summed, in seconds.
    pub fn cpu_s(&self) -> Result<f64, &str> {
        self.cpu.as_ref().map(Counters::sum).map_err(String::as_str)
    }
}

/// What a step used, from two readings.
#[derive(Clone, Debug, PartialEq)]
pub struct Used {
    pub cpu_s: f64,
    /// % of one core over the time between the readings.
    pub cpu_pct: f64,
}

impl Remote {
    /// Where its figures come from, for lab.json.
    pub fn provenance(&self) -> Provenance {
        Provenance {
            source: match &self.source {
                Source::Exporter(url) => format!("exporter {}", without_credentials(url)),
                Source::Prometheus(p) => format!("prometheus {}", p.shown()),
            },
            cpu: self.cpu.to_string(),
            memory: self.memory.as_ref().map(ToString::to_string),
            resolution_s: EXPORTER_RESOLUTION_S,
            scrape_interval_s: match &self.source {
                Source::Prometheus(p) => p.interval.map(|i| i.as_secs_f64()),
                Source::Exporter(_) => None,
            },
            scrape_interval_from: match &self.source {
                Source::Prometheus(p) if p.interval_checked => Some("the server's targets".into()),
                Source::Prometheus(p) if p.interval.is_some() => {
                    Some("the plan, not checked: the server did not answer for its targets".into())
                }
                _ => None,
            },
            host: self.host.as_ref().map(|h| format!("node_exporter {}", without_credentials(h))),
            host_busy_pct: self.host.as_ref().map(|_| self.host_limits.busy_share * 100.0),
            host_steal_pct: self.host.as_ref().map(|_| self.host_limits.steal_share * 100.0),
        }
    }

    /// Reads the figures now (the target's and its host's at once). With `fresh`, from a
    /// Prometheus server, waits (up to a scrape interval and a second) for a sample taken after
    /// this moment: the edge where a step's counted time starts must not read the pause before it.
    pub async fn read(&self, fresh: bool) -> Reading {
        let at = Instant::now();
        let host = async {
            match &self.host {
                Some(h) => Some(exposition(h, &self.tls).await.and_then(|e| HostCpu::of(&e))),
                None => None,
            }
        };
        let target = async {
            match &self.source {
                Source::Exporter(url) => match exposition(url, &self.tls).await {
                    // A memory that no process can have makes the whole answer untrusted.
                    Ok(e) => match self.memory.as_ref().map(|m| e.gauge(m, MAX_MEMORY_BYTES)).transpose() {
                        Ok(memory) => (e.counters(&self.cpu), None, memory.flatten()),
                        Err(why) => (Err(why), None, None),
                    },
                    Err(e) => (Err(e), None, None),
                },
                Source::Prometheus(p) => self.ask(p, fresh).await,
            }
        };
        let ((cpu, sampled_unix_s, memory_bytes), host) = tokio::join!(target, host);
        // Text from the source is shown as text, one line of a readable length.
        let plain = |e: String| plain_line(&e, MAX_ERROR);
        let host = host.map(|h| h.map_err(plain));
        Reading { at, cpu: cpu.map_err(plain), sampled_unix_s, memory_bytes, host }
    }

    /// The CPU's series (and when they were sampled) and memory from a Prometheus server.
    async fn ask(&self, p: &Server, fresh: bool) -> (Result<Counters, String>, Option<f64>, Option<f64>) {
        let now = unix_now();
        let wait = p.interval.unwrap_or(Duration::from_secs(15)) + Duration::from_secs(1);
        let deadline = Instant::now() + wait;
        let cpu = loop {
            match p.counters(&self.cpu, &self.tls).await {
                Ok((_, sampled)) if fresh && sampled < now && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok((_, sampled)) if fresh && sampled < now => {
                    break Err(format!("{}: no scrape of {} within {:.0?}", p.shown(), self.cpu, wait));
                }
                other => break other,
            }
        };
        let memory = match &self.memory {
            Some(m) => match p.sum(m, None, &self.tls).await {
                Ok(a) => match a.map(|a| checked(&m.to_string(), a.value, MAX_MEMORY_BYTES)).transpose() {
                    Ok(memory) => memory,
                    Err(why) => return (Err(why), None, None),
                },
                Err(_) => None,
            },
            None => None,
        };
        match cpu {
            Ok((c, sampled)) => (Ok(c), Some(sampled), memory),
            Err(e) => (Err(e), None, memory),
        }
    }

    /// Before the first step: the source answers and every selector selects a series, else a
    /// line naming the selector and what the source does have.
    /// A Prometheus server's scrape interval, when not given, is read here.
    pub async fn check(&mut self) -> Result<(), String> {
        // Text from the source is shown as text, one line of a readable length.
        self.check_answers().await.map_err(|e| plain_line(&e, MAX_ERROR))
    }

    async fn check_answers(&mut self) -> Result<(), String> {
        if let Source::Prometheus(p) = &mut self.source {
            // The interval a plan gives is checked against the server's own, where it tells.
            match (p.interval, p.scrape_intervals(&self.tls).await) {
                // The longest: a step waits for a sample of every target.
                (None, read) => {
                    p.interval = read?.last().copied();
                    p.interval_checked = true;
                }
                (Some(given), Ok(read)) if !read.contains(&given) => {
                    let read: Vec<String> = read.iter().map(|d| go_string(d.as_nanos() as u64)).collect();
                    return Err(format!(
                        "{}: interval is {} but the server scrapes its targets every {}: give one of those or leave interval out",
                        p.shown(),
                        go_string(given.as_nanos() as u64),
                        read.join(" or ")
                    ));
                }
                (Some(_), Ok(_)) => p.interval_checked = true,
                (Some(_), Err(_)) => {}
            }
            let p = p.clone();
            for s in std::iter::once(&self.cpu).chain(&self.memory) {
                if p.sum(s, None, &self.tls).await?.is_none() {
                    return Err(format!("{}: {s} selects no series", p.shown()));
                }
            }
        }
        if let Source::Exporter(metrics) = &self.source {
            let e = exposition(metrics, &self.tls).await?;
            let url = without_credentials(metrics);
            // An exporter exports its own process's CPU under the default name: never the target's.
            if self.cpu.to_string() == DEFAULT_CPU {
                let groups: BTreeSet<&str> = e
                    .series
                    .iter()
                    .filter(|s| s.name == "namedprocess_namegroup_cpu_seconds_total")
                    .filter_map(|s| s.labels.get("groupname").map(String::as_str))
                    .collect();
                if !groups.is_empty() {
                    return Err(format!(
                        "{url}: {DEFAULT_CPU} there is the process exporter's own CPU, not the target's: \
                         give cpu = 'namedprocess_namegroup_cpu_seconds_total{{groupname=\"...\"}}' \
                         (its groups: {})",
                        groups
                            .into_iter()
                            .map(|g| format!("{:?}", plain_line(g, 60)))
                            .take(10)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if e.series.iter().any(|s| s.name == "node_cpu_seconds_total") {
                    return Err(format!(
                        "{url}: {DEFAULT_CPU} there is node_exporter's own CPU, not the target's: \
                         node_exporter measures the host"
                    ));
                }
            }
            for s in std::iter::once(&self.cpu).chain(&self.memory) {
                if e.count(s) == 0 {
                    return Err(format!("{url}: {s} selects no series ({})", e.near(s)));
                }
            }
        }
        if let Some(h) = &self.host {
            let e = exposition(h, &self.tls).await.map_err(|e| format!("host: {e}"))?;
            HostCpu::of(&e).map_err(|e| format!("host: {}: {e}", without_credentials(h)))?;
        }
        Ok(())
    }
}

/// The exposition at `url` now, read within [`READ_TIMEOUT`] and [`MAX_BYTES`].
async fn exposition(url: &str, tls: &client::TlsOptions) -> Result<Exposition, String> {
    let shown = without_credentials(url);
    let fetched = client::fetch(url, &[], crate::fetch::options(tls)).await.map_err(|e| format!("{shown}: {e}"))?;
    if fetched.status != 200 {
        return Err(format!("{shown}: answered {}", fetched.status));
    }
    let text = std::str::from_utf8(&fetched.body).map_err(|_| format!("{shown}: the answer is not UTF-8 text"))?;
    Exposition::parse(text).map_err(|e| format!("{shown}: {e}"))
}

/// What a step used between `from` and `to`; why not, when it is not a measurement.
pub fn used(from: &Reading, to: &Reading, resolution_s: f64) -> Result<Used, String> {
    let a = from.cpu.as_ref().map_err(|e| format!("CPU at the step's start not read: {e}"))?;
    let b = to.cpu.as_ref().map_err(|e| format!("CPU at the step's end not read: {e}"))?;
    let secs = to.at.duration_since(from.at).as_secs_f64();
    let grown = a.grown(b)?;
    // From a server, the counter's growth between its two samples, as a rate over the step.
    let (cpu_s, span) = match (from.sampled_unix_s, to.sampled_unix_s) {
        (Some(ta), Some(tb)) if tb > ta => (grown / (tb - ta) * secs, tb - ta),
        (Some(_), Some(_)) => {
            return Err("no scrape of the target fell between the step's edges: lengthen the steps".into())
        }
        _ => (grown, secs),
    };
    if grown < resolution_s / MAX_RESOLUTION_SHARE {
        return Err(format!(
            "{grown:.3} s of CPU over {span:.1} s is too little for a counter of {:.0} ms steps (at least {:.2} s): \
             lengthen the steps or raise the load",
            resolution_s * 1000.0,
            resolution_s / MAX_RESOLUTION_SHARE
        ));
    }
    Ok(Used { cpu_s, cpu_pct: 100.0 * cpu_s / secs.max(1e-3) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(v: f64) -> Counters {
        Counters { series: [("cpu{}".to_owned(), v)].into() }
    }

    fn reading(at: Instant, cpu: Result<f64, String>) -> Reading {
        Reading { at, cpu: cpu.map(one), sampled_unix_s: None, memory_bytes: None, host: None }
    }

    #[test]
    fn a_step_uses_what_its_counter_grew_and_a_restart_is_said() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(4);
        let u = used(&reading(t0, Ok(10.0)), &reading(t1, Ok(12.0)), 0.01).unwrap();
        assert!((u.cpu_s - 2.0).abs() < 1e-9 && (u.cpu_pct - 50.0).abs() < 1e-9, "{u:?}");
        let e = used(&reading(t0, Ok(10.0)), &reading(t1, Ok(0.5)), 0.01).unwrap_err();
        assert!(e.contains("went back") && e.contains("restarted"), "{e}");
        let e = used(&reading(t0, Ok(10.0)), &reading(t1, Ok(10.1)), 0.01).unwrap_err();
        assert!(e.contains("too little") && e.contains("10 ms"), "{e}");
        // From a server: the rate between its samples, over the step's time.
        let sampled =
            |at, cpu, ts| Reading { at, cpu: Ok(one(cpu)), sampled_unix_s: Some(ts), memory_bytes: None, host: None };
        let u = used(&sampled(t0, 10.0, 100.0), &sampled(t1, 11.0, 102.0), 1.0 / 100.0).unwrap();
        assert!((u.cpu_s - 2.0).abs() < 1e-9, "half a core for the step's 4 s: {u:?}");
        let e = used(&sampled(t0, 10.0, 100.0), &sampled(t1, 11.0, 100.0), 0.01).unwrap_err();
        assert!(e.contains("no scrape"), "{e}");
        let e = used(&reading(t0, Ok(10.0)), &reading(t1, Err("timeout".into())), 0.01).unwrap_err();
        assert!(e.contains("end not read: timeout"), "{e}");
    }

    #[test]
    fn credentials_are_left_out() {
        assert_eq!(without_credentials("http://u:secret@h:9090/api"), "http://h:9090/api");
        assert_eq!(without_credentials("http://h:9090/a@b"), "http://h:9090/a@b");
    }
}
