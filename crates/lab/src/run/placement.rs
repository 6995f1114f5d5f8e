//! Where a lab's processes run: with `placement = "split"`, loadlab (the generator, the sampler)
//! and the targets it starts on disjoint CPUs of a machine of two or more, so that they never
//! share a core's caches, run queue or the kernel's loopback work (docs/DECISIONS.md, "Where the
//! spread comes from", for what it changed). Started targets run under `taskset` (util-linux),
//! so the setting is in place before their first thread; loadlab pins its own threads, and
//! threads it starts after inherit it.

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

pub(crate) use crate::plan::placement::Mode;
use crate::plan::{Plan, TargetKind};

/// The CPUs each side ran on, as lab.json records them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub generator: Vec<usize>,
    pub targets: Vec<usize>,
}

impl Placement {
    /// `allowed` split in two: loadlab the first half (at least one), the targets the rest; none
    /// with fewer than two CPUs.
    pub fn split(allowed: &[usize]) -> Option<Placement> {
        if allowed.len() < 2 {
            return None;
        }
        let half = allowed.len() / 2;
        Some(Placement { generator: allowed[..half].to_vec(), targets: allowed[half..].to_vec() })
    }

    /// The split of the CPUs this process may use.
    pub fn of_this_machine() -> Option<Placement> {
        let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
        let allowed: Vec<usize> = (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect();
        Placement::split(&allowed)
    }

    /// `argv` run on the targets' CPUs.
    pub fn wrap(&self, argv: &[String]) -> Vec<String> {
        let mut out = vec!["taskset".to_owned(), "-c".to_owned(), list(&self.targets)];
        out.extend(argv.iter().cloned());
        out
    }

    /// For report.md: `loadlab on CPU 0, started targets on CPU 1`.
    pub fn text(&self) -> String {
        let cpus = |c: &[usize]| format!("CPU{} {}", if c.len() > 1 { "s" } else { "" }, list(c));
        format!("loadlab on {}, started targets on {}", cpus(&self.generator), cpus(&self.targets))
    }
}

/// Where `plan`'s processes run under `mode`, or why the CPUs are not split: with
/// `shared`, on one CPU, or where a target runs inside loadlab (an embedded origin shares its
/// threads) or none is started by the lab (nothing to place).
pub(crate) fn decide(plan: &Plan, mode: Mode) -> Result<Placement, String> {
    if mode == Mode::Shared {
        return Err(
            "shared: the scheduler placed loadlab and the targets (placement = \"split\" puts them on disjoint CPUs)"
                .into(),
        );
    }
    if plan.origin.is_some() || plan.targets.iter().any(|t| matches!(t.kind, TargetKind::Simulator { .. })) {
        return Err("not split: an embedded origin runs on loadlab's own threads".into());
    }
    if !plan.targets.iter().any(|t| matches!(t.kind, TargetKind::Command { .. })) {
        return Err("not split: the lab starts no target".into());
    }
    Placement::of_this_machine().ok_or_else(|| "not split: loadlab may use a single CPU".into())
}

/// `0,2-3`-style, as taskset takes it (here always a plain list).
fn list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// Every thread of this process on `cpus` until dropped, then back where each was. Threads
/// started meanwhile inherit the setting from the thread that starts them.
pub struct Pinned {
    previous: Vec<(Pid, CpuSet)>,
}

impl Pinned {
    pub fn to(cpus: &[usize]) -> Result<Pinned, String> {
        let mut set = CpuSet::new();
        for &c in cpus {
            set.set(c).map_err(|e| format!("CPU {c}: {e}"))?;
        }
        let mut previous = Vec::new();
        for tid in threads() {
            // A thread that ended meanwhile is no thread to pin.
            let Ok(before) = sched_getaffinity(tid) else { continue };
            if sched_setaffinity(tid, &set).is_ok() {
                previous.push((tid, before));
            }
        }
        if previous.is_empty() {
            return Err("no thread of loadlab could be pinned".into());
        }
        Ok(Pinned { previous })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // Threads started while pinned take the first thread's earlier setting too.
        let all = self.previous.first().map(|(_, s)| *s);
        for tid in threads() {
            let set = self.previous.iter().find(|(t, _)| *t == tid).map(|(_, s)| *s).or(all);
            if let Some(set) = set {
                let _ = sched_setaffinity(tid, &set);
            }
        }
    }
}

/// This process's threads, from /proc/self/task.
fn threads() -> Vec<Pid> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).map(Pid::from_raw).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_are_split_in_two_and_a_single_cpu_is_not() {
        assert_eq!(Placement::split(&[0]), None);
        let two = Placement::split(&[0, 1]).unwrap();
        assert_eq!((two.generator.as_slice(), two.targets.as_slice()), (&[0][..], &[1][..]));
        assert_eq!(two.text(), "loadlab on CPU 0, started targets on CPU 1");
        let five = Placement::split(&[0, 2, 3, 5, 7]).unwrap();
        assert_eq!((five.generator, five.targets.clone()), (vec![0, 2], vec![3, 5, 7]));
        let argv = Placement::split(&[0, 1, 2, 3]).unwrap().wrap(&["nginx".into(), "-g".into()]);
        assert_eq!(argv, ["taskset", "-c", "2,3", "nginx", "-g"]);
    }

    #[test]
    fn threads_are_pinned_and_put_back() {
        let p = Placement::of_this_machine().expect("the tests run on a machine of two or more CPUs");
        let before = sched_getaffinity(Pid::from_raw(0)).unwrap();
        {
            let _pinned = Pinned::to(&p.generator).unwrap();
            let now = sched_getaffinity(Pid::from_raw(0)).unwrap();
            assert!(p.generator.iter().all(|&c| now.is_set(c).unwrap()));
            assert!(p.targets.iter().all(|&c| !now.is_set(c).unwrap()));
            // A thread started now inherits it.
            let child = std::thread::spawn(|| sched_getaffinity(Pid::from_raw(0)).unwrap()).join().unwrap();
            assert!(p.targets.iter().all(|&c| !child.is_set(c).unwrap()));
        }
        assert_eq!(sched_getaffinity(Pid::from_raw(0)).unwrap(), before);
    }
}
