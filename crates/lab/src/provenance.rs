//! Where a lab ran and of what: the commit and branch under test, free tags, the loadlab that
//! measured and the machine, recorded in lab.json so that a history can key its series by them
//! (a lab imported later still knows its commit and machine).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// How loadlab measures: raised when a recorded figure changes meaning (a new denominator, a
/// corrected latency), so that a history never puts figures of two meanings in one series.
/// 2: CPU per request read from the processes' CPU clocks (ns) over the counted part of a step,
/// no longer from 10 ms ticks sampled over the whole step.
pub const MEASUREMENT: u32 = 2;

/// What a lab was run on and of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub commit: Option<String>,
    pub branch: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// The loadlab version, and how it measures ([`MEASUREMENT`]).
    pub loadlab: String,
    pub measurement: u32,
    pub machine: Machine,
}

/// The machine a lab ran on, as far as it decides the figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
    pub memory_gib: u64,
}

impl Machine {
    /// This machine: /proc/cpuinfo's model, the cores this process may use, the kernel's
    /// release, /proc/meminfo's total (whole GiB, so a kernel's reserve does not split series).
    pub fn here() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim()))
            .unwrap_or("unknown")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        Machine { cpu, cores, kernel, memory_gib: (kib as f64 / 1048576.0).round() as u64 }
    }

    /// Eight hex digits naming the machine in series keys: the same for the same CPU model,
    /// cores, kernel and memory.
    pub fn fingerprint(&self) -> String {
        let text = format!("{}|{}|{}|{}", self.cpu, self.cores, self.kernel, self.memory_gib);
        format!("{:08x}", crc32fast::hash(text.as_bytes()))
    }

    /// `2 × Intel(R) Xeon(R) CPU @ 2.20GHz, 24 GiB, Linux 6.1.0`.
    pub fn text(&self) -> String {
        format!("{} × {}, {} GiB, Linux {}", self.cores, self.cpu, self.memory_gib, self.kernel)
    }
}

/// What the user said of the code under test (`--commit`, `--branch`, `--tag K=V`).
#[derive(Clone, Debug, Default)]
pub struct Given {
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub tags: BTreeMap<String, String>,
}

impl Given {
    /// `KEY=VALUE` as a tag.
    pub fn add_tag(&mut self, kv: &str) -> Result<(), String> {
        match kv.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                self.tags.insert(k.trim().to_owned(), v.trim().to_owned());
                Ok(())
            }
            _ => Err(format!("{kv:?}: a tag is KEY=VALUE, e.g. version=1.4")),
        }
    }
}

impl Provenance {
    /// The provenance of a lab run now, here: the commit and branch as given, else from the CI's
    /// environment (GitHub's `GITHUB_SHA`/`GITHUB_REF_NAME`, GitLab's `CI_COMMIT_SHA`/
    /// `CI_COMMIT_REF_NAME`), else `git` in `folder` (the plan's), else none.
    pub fn gather(given: &Given, folder: &Path) -> Provenance {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let commit = given
            .commit
            .clone()
            .or_else(|| env("GITHUB_SHA"))
            .or_else(|| env("CI_COMMIT_SHA"))
            .or_else(|| git(folder, &["rev-parse", "HEAD"]));
        let branch = given
            .branch
            .clone()
            .or_else(|| env("GITHUB_REF_NAME"))
            .or_else(|| env("CI_COMMIT_REF_NAME"))
            .or_else(|| git(folder, &["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD"));
        Provenance {
            commit,
            branch,
            tags: given.tags.clone(),
            loadlab: env!("CARGO_PKG_VERSION").to_owned(),
            measurement: MEASUREMENT,
            machine: Machine::here(),
        }
    }
}

/// `git ARGS` in `folder`, its one line of output; none outside a repository or without git.
fn git(folder: &Path, args: &[&str]) -> Option<String> {
    let dir = if folder.as_os_str().is_empty() { Path::new(".") } else { folder };
    let out = Command::new("git").arg("-C").arg(dir).args(args).stderr(std::process::Stdio::null()).output().ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_named_by_what_decides_its_figures() {
        let m = Machine::here();
        assert!(m.cores >= 1 && !m.kernel.is_empty(), "{m:?}");
        assert_eq!(m.fingerprint(), Machine::here().fingerprint(), "stable");
        let other = Machine { cores: m.cores + 1, ..m.clone() };
        assert_ne!(m.fingerprint(), other.fingerprint());
        assert_eq!(m.fingerprint().len(), 8);
    }

    #[test]
    fn given_commit_wins_and_tags_are_key_value() {
        let mut g = Given { commit: Some("abc123".into()), ..Default::default() };
        g.add_tag("version=1.4").unwrap();
        assert!(g.add_tag("novalue").is_err());
        let p = Provenance::gather(&g, Path::new("/"));
        assert_eq!(p.commit.as_deref(), Some("abc123"));
        assert_eq!(p.tags.get("version").map(String::as_str), Some("1.4"));
        assert_eq!(p.measurement, MEASUREMENT);
    }
}
