//! What the attack's own threads got of the CPU while it ran: time on a CPU and time waiting on
//! a run queue for one (`/proc/thread-self/schedstat`), and how idle the whole machine was
//! (`/proc/stat`). A generator whose threads wait for a CPU measures the machine, not the
//! target: the late responses it reads were late in its own run queue.

use results::GeneratorCpu;

/// The calling thread's CPU time (user and system): one system call (the vDSO does not serve
/// thread clocks), so callers read it once per window, not per request.
pub(crate) fn thread_cpu() -> Option<std::time::Duration> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(std::time::Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32))
}

/// A thread's CPU times so far, nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ThreadTimes {
    pub run_ns: u64,
    pub wait_ns: u64,
}

/// The calling thread's times (`None` where the kernel does not tell).
pub(crate) fn this_thread() -> Option<ThreadTimes> {
    parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// `schedstat`: time on a CPU, time waiting on a run queue (ns), time slices.
fn parse_schedstat(text: &str) -> Option<ThreadTimes> {
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some(ThreadTimes { run_ns: f.next()??, wait_ns: f.next()?? })
}

/// The machine's CPU time so far, in clock ticks summed over its CPUs: idle (idle and iowait)
/// and in all.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineTimes {
    pub idle: u64,
    pub total: u64,
}

pub fn machine() -> Option<MachineTimes> {
    parse_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The first line of `/proc/stat`: `cpu user nice system idle iowait irq softirq steal ...`.
fn parse_stat(text: &str) -> Option<MachineTimes> {
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // guest and guest_nice are already counted in user and nice.
    let total = v.iter().take(8).sum();
    Some(MachineTimes { idle: v.get(3)? + v.get(4).copied().unwrap_or(0), total })
}

/// Per thread: what it had at its start, to report what it used since.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadClock {
    at: std::time::Instant,
    times: Option<ThreadTimes>,
}

impl ThreadClock {
    pub(crate) fn start() -> ThreadClock {
        ThreadClock { at: std::time::Instant::now(), times: this_thread() }
    }

    /// What the calling thread (the one that called `start`) used since.
    pub(crate) fn used(&self) -> GeneratorCpu {
        let wall_us = self.at.elapsed().as_micros() as u64;
        match (self.times, this_thread()) {
            (Some(a), Some(b)) => GeneratorCpu {
                threads: 1,
                wall_us,
                run_us: b.run_ns.saturating_sub(a.run_ns) / 1000,
                wait_us: b.wait_ns.saturating_sub(a.wait_ns) / 1000,
                machine_idle: None,
            },
            _ => GeneratorCpu::default(),
        }
    }
}

/// The machine's idle share between two readings, 0..1.
pub(crate) fn idle_share(a: Option<MachineTimes>, b: Option<MachineTimes>) -> Option<f64> {
    let (a, b) = (a?, b?);
    let total = b.total.checked_sub(a.total).filter(|t| *t > 0)?;
    Some((b.idle.saturating_sub(a.idle) as f64 / total as f64).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernels_lines() {
        assert_eq!(
            parse_schedstat("352597076 234773562 133\n"),
            Some(ThreadTimes { run_ns: 352597076, wait_ns: 234773562 })
        );
        assert_eq!(parse_schedstat(""), None);
        let m = parse_stat("cpu  9255 0 2578 67867 299 0 30 31 5 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(m, MachineTimes { idle: 67867 + 299, total: 9255 + 2578 + 67867 + 299 + 30 + 31 });
        let later = MachineTimes { idle: m.idle + 50, total: m.total + 200 };
        assert_eq!(idle_share(Some(m), Some(later)), Some(0.25));
        assert_eq!(idle_share(Some(m), Some(m)), None);
    }

    #[test]
    fn a_thread_sharing_its_cpu_with_a_spinner_waits_for_it() {
        // Two threads spinning on one CPU: each waits on the run queue while the other runs.
        // Pinning makes it the same on any machine; where affinity cannot be set, skip nothing:
        // the kernel still reports run time.
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let pin = || {
            let mut set = nix::sched::CpuSet::new();
            set.set(0).unwrap();
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
        };
        let done = Arc::new(AtomicBool::new(false));
        let d = Arc::clone(&done);
        let spinner = std::thread::spawn(move || {
            pin();
            while !d.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let used = std::thread::spawn(move || {
            pin();
            let clock = ThreadClock::start();
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(400) {
                std::hint::spin_loop();
            }
            clock.used()
        })
        .join()
        .unwrap();
        done.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        assert_eq!(used.threads, 1);
        assert!(used.run_us > 10_000, "{used:?}");
        // Sharing one CPU with a spinner for 400 ms: a good part of it on the run queue.
        assert!(used.wait_us > 100_000, "{used:?}");
        assert!(used.wait_share() > 0.25, "{used:?}");
    }
}
