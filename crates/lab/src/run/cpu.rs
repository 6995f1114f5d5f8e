//! CPU time of a process, and of its process tree, in nanoseconds.
//!
//! /proc/PID/stat counts CPU in clock ticks (10 ms at the usual 100 Hz): a 3 s step at 200/s
//! then reads loadlab's own CPU per request on a grid of 16.7 µs (66.5, 83.2, 99.8 µs from lab
//! to lab), which is most of why CPU per request needed a 30% floor. The kernel keeps each
//! thread group's run time in nanoseconds (`sum_exec_runtime`, exited threads included) and
//! hands it out as the process's CPU clock (`clock_getcpuclockid`, readable for any pid), so a
//! step's CPU is read from that clock at the step's edges.
//!
//! A tree is the process, each live descendant (their own clocks), and what its reaped children
//! used (`cutime + cstime`, in ticks: the kernel keeps no finer sum of them).

use std::collections::BTreeMap;

use nix::time::{clock_getcpuclockid, clock_gettime};
use nix::unistd::Pid;

/// The CPU time `pid`'s threads have used, in ns (none when it is gone).
pub(crate) fn process_ns(pid: i32) -> Option<u64> {
    let clock = clock_getcpuclockid(Pid::from_raw(pid)).ok()?;
    let t = clock_gettime(clock).ok()?;
    Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// This machine's CPU time by mode now (`/proc/stat`, as node_exporter reads it).
pub(crate) fn machine_now() -> Option<scrape::host::HostCpu> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let nodename = std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned());
    scrape::host::HostCpu::of_proc_stat(&text, procfs::ticks_per_second() as f64, nodename)
}

fn ticks_ns(ticks: u64) -> u64 {
    ticks.saturating_mul(1_000_000_000) / procfs::ticks_per_second().max(1)
}

/// CPU used by `pid` (with `tree`, by its whole process tree) in ns, and its resident memory in
/// bytes (the tree's, with `tree`).
pub(crate) fn usage(pid: u32, tree: bool) -> Option<(u64, u64)> {
    let page = procfs::page_size();
    let root = procfs::process::Process::new(pid as i32).ok()?.stat().ok()?;
    let own = |st: &procfs::process::Stat| process_ns(st.pid).unwrap_or_else(|| ticks_ns(st.utime + st.stime));
    let mut ns = own(&root);
    let mut rss = root.rss * page;
    if !tree {
        return Some((ns, rss));
    }
    ns += ticks_ns((root.cutime + root.cstime).max(0) as u64);
    // Children by parent, to walk the tree below `pid`.
    let mut children: BTreeMap<i32, Vec<procfs::process::Stat>> = BTreeMap::new();
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            if let Ok(st) = p.stat() {
                children.entry(st.ppid).or_default().push(st);
            }
        }
    }
    let mut stack = vec![pid as i32];
    while let Some(p) = stack.pop() {
        for c in children.remove(&p).unwrap_or_default() {
            ns += own(&c);
            rss += c.rss * page;
            stack.push(c.pid);
        }
    }
    Some((ns, rss))
}

/// Every process named `name` (its `comm`, as `ps` shows it), each on its own (a master and its
/// workers share the name: counting trees would count the workers twice): their CPU ns and
/// resident bytes; none when no process has the name.
pub(crate) fn usage_named(name: &str) -> Option<(u64, u64)> {
    let page = procfs::page_size();
    let mut found = None;
    for p in procfs::process::all_processes().ok()?.flatten() {
        let Ok(st) = p.stat() else { continue };
        if st.comm == name {
            let ns = process_ns(st.pid).unwrap_or_else(|| ticks_ns(st.utime + st.stime));
            let (total, rss) = found.unwrap_or((0, 0));
            found = Some((total + ns, rss + st.rss * page));
        }
    }
    found
}

/// Whose CPU is read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Watched {
    /// A process, with its descendants when `true`.
    Pid(u32, bool),
    /// Every process of a name.
    Named(String),
}

impl Watched {
    /// CPU ns and resident bytes now.
    pub(crate) fn usage(&self) -> Option<(u64, u64)> {
        match self {
            Watched::Pid(pid, tree) => usage(*pid, *tree),
            Watched::Named(name) => usage_named(name),
        }
    }
}

/// What a set of processes had used at one moment.
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    pub at: std::time::Instant,
    /// Per process asked for, its CPU ns (none when it could not be read).
    pub ns: Vec<Option<u64>>,
}

impl Reading {
    /// Reads each now.
    pub(crate) fn now(watched: &[Watched]) -> Reading {
        let ns = watched.iter().map(|w| w.usage().map(|u| u.0)).collect();
        Reading { at: std::time::Instant::now(), ns }
    }

    /// Per process: CPU seconds used from `self` to `later`, and that as % of one core.
    pub(crate) fn until(&self, later: &Reading) -> Vec<Option<(f64, f64)>> {
        let secs = later.at.duration_since(self.at).as_secs_f64();
        self.ns
            .iter()
            .zip(&later.ns)
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) if secs > 0.0 => {
                    let used = b.saturating_sub(*a) as f64 / 1e9;
                    Some((used, 100.0 * used / secs))
                }
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_clock_counts_below_a_tick() {
        // Work far shorter than a 10 ms tick shows in the clock of this very process.
        let before = process_ns(std::process::id() as i32).unwrap();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_micros(1500) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = process_ns(std::process::id() as i32).unwrap();
        let used = after - before;
        // Spun for 1.5 ms of wall time: some of it on a CPU, never more than the wall time
        // allows across this process's threads (tests run beside each other).
        assert!(used > 0 && !used.is_multiple_of(10_000_000), "{used} ns");
        assert!(process_ns(i32::MAX - 1).is_none());
    }

    #[test]
    fn a_tree_counts_its_children_in_nanoseconds() {
        // A shell whose grandchild spins for 300 ms: the tree's CPU grows by about that; the
        // shell alone by almost nothing.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "timeout 0.3 sh -c 'while :; do :; done'; sleep 2"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let both = [Watched::Pid(pid, true), Watched::Pid(pid, false)];
        let first = Reading::now(&both);
        std::thread::sleep(std::time::Duration::from_millis(900));
        let second = Reading::now(&both);
        let _ = child.kill();
        let _ = child.wait();
        let used = first.until(&second);
        let (tree_s, _) = used[0].unwrap();
        let (alone_s, _) = used[1].unwrap();
        // The spinner ran up to 300 ms (less on a busy machine) and was reaped by the shell:
        // its time is in the shell's cutime by the second reading.
        assert!(tree_s > 0.02 && tree_s < 0.5, "{used:?}");
        assert!(alone_s < 0.02, "{used:?}");
    }

    #[test]
    fn processes_are_found_by_name() {
        // This test binary's own name: at least this process, with its CPU and memory.
        let me = procfs::process::Process::myself().unwrap().stat().unwrap().comm;
        let mine = process_ns(std::process::id() as i32).unwrap();
        let (ns, rss) = usage_named(&me).unwrap();
        assert!(ns >= mine && rss > 0);
        assert!(usage_named("no-such-process-name").is_none());
    }
}
