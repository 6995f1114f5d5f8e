//! The machine's speed on each CPU while a lab runs: a probe thread pinned to each CPU parses
//! and writes again a fixed JSON document (server-like work: allocations, branches, a few KiB
//! of data) every 100 ms, timed by its own thread CPU clock, so waiting for the CPU is not in
//! it and a slower core is.
//!
//! On this project's 2-vCPU VM the same work took 1.8-1.9 times as long in spells of 5 to 30 s
//! (a Python server's hashing, a serde_json round trip, md5 and a plain interpreter loop alike;
//! a tight loop over a small table moved 10-15%), the two vCPUs apart at times, and a CPU-bound
//! Python server's CPU per request moved with it: 15.1% between 3 s windows, 6.8% read at the
//! probe of its own CPU (docs/DECISIONS.md, "What is left on the Python server"). loadlab's own
//! CPU per request sees only the CPUs loadlab runs on; the probe sees the target's.
//!
//! Its cost: a round trip of about 80-150 µs per CPU every 100 ms (0.1-0.15% of each CPU),
//! taken out of loadlab's own CPU figures (`Probe::cpu_ns`).
//!
//! A second figure times the kernel's network path on the same CPU: 4 KiB sent and sent back
//! four times over a loopback TCP connection whose two ends the probe thread holds (`kernel_us`,
//! kept beside the first, not yet used by any analysis). A server such as nginx is mostly that
//! path, and its CPU per request moved 2-3 times the JSON round trip's time.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::time::{clock_gettime, ClockId};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// Between two probes on one CPU.
const EVERY: Duration = Duration::from_millis(100);
/// Samples kept (10 a second per CPU: hours of a lab on a few CPUs); the oldest go first.
const KEPT: usize = 200_000;
/// Samples a CPU needs in a step for its speed to be read.
const MIN_SAMPLES: usize = 5;

/// One timed round trip: when, on which CPU, how long (thread CPU ns), and the kernel path's
/// time when the probe has its connection.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    cpu: usize,
    ns: u64,
    kernel_ns: Option<u64>,
}

/// The machine's speed over one step, as lab.json keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// The probe's round trip on the CPUs the target could run on (µs, the geometric mean of
    /// their medians): higher is a slower machine.
    pub target_us: f64,
    /// Each CPU's median round trip (µs) and its number of samples.
    pub cpus: Vec<CpuSpeed>,
    /// The kernel's network path on the same CPUs (µs, the same mean of medians), where each
    /// of them has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_us: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSpeed {
    pub cpu: usize,
    pub us: f64,
    pub samples: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_us: Option<f64>,
}

/// The probe threads, one per CPU, until dropped.
pub(crate) struct Probe {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<VecDeque<Sample>>>,
    /// The probe threads' CPU time so far (ns), to take out of loadlab's own.
    spent: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// The CPUs this thread may run on.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    sched_getaffinity(Pid::from_raw(0))
        .map(|set| (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
        .unwrap_or_default()
}

fn thread_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map_or(0, |t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// The fixed document: 60 records of a typical API's shape (about 8 KiB).
fn document() -> String {
    let items: Vec<String> = (0..60)
        .map(|i| {
            format!(
                r#"{{"id":{i},"name":"item-{i}","tags":["a","b","c{i}"],"price":{}.5,"ok":true,"nested":{{"x":[1,2,3],"y":"value-{i}"}}}}"#,
                i * 7
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// Both ends of a loopback TCP connection, held by one thread.
struct Loop {
    a: std::net::TcpStream,
    b: std::net::TcpStream,
    buf: Vec<u8>,
}

impl Loop {
    fn open() -> std::io::Result<Loop> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let a = std::net::TcpStream::connect(listener.local_addr()?)?;
        let (b, _) = listener.accept()?;
        for s in [&a, &b] {
            s.set_nodelay(true)?;
            // A lost wake-up never stops the probe: a read gives up after a second.
            s.set_read_timeout(Some(Duration::from_secs(1)))?;
        }
        Ok(Loop { a, b, buf: vec![0x5a; 4096] })
    }

    /// 4 KiB there and back, four times.
    fn round_trips(&mut self) -> std::io::Result<()> {
        use std::io::{Read, Write};
        for _ in 0..4 {
            self.a.write_all(&self.buf)?;
            self.b.read_exact(&mut self.buf)?;
            self.b.write_all(&self.buf)?;
            self.a.read_exact(&mut self.buf)?;
        }
        Ok(())
    }
}

/// One round trip of `doc`.
fn round_trip(doc: &str) -> usize {
    let v: serde_json::Value = serde_json::from_str(black_box(doc)).unwrap_or_default();
    black_box(serde_json::to_string(&v).map_or(0, |s| s.len()))
}

impl Probe {
    /// A probe thread on each of `cpus` (a CPU it cannot be pinned to is left unprobed).
    pub(crate) fn start(cpus: &[usize]) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(VecDeque::new()));
        let spent = Arc::new(AtomicU64::new(0));
        let threads = cpus
            .iter()
            .filter_map(|&cpu| {
                let (stop, samples, spent) = (stop.clone(), samples.clone(), spent.clone());
                std::thread::Builder::new()
                    .name(format!("loadlab-speed-{cpu}"))
                    .spawn(move || {
                        let mut set = CpuSet::new();
                        if set.set(cpu).is_err() || sched_setaffinity(Pid::from_raw(0), &set).is_err() {
                            return;
                        }
                        let doc = document();
                        let mut kernel = Loop::open().ok();
                        let mut before = thread_ns();
                        while !stop.load(Ordering::Relaxed) {
                            let a = thread_ns();
                            round_trip(&doc);
                            let b = thread_ns();
                            let kernel_ns = kernel.as_mut().and_then(|k| {
                                let from = thread_ns();
                                k.round_trips().ok().map(|()| thread_ns().saturating_sub(from))
                            });
                            if kernel_ns.is_none() {
                                kernel = None;
                            }
                            {
                                let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
                                if s.len() >= KEPT {
                                    s.pop_front();
                                }
                                s.push_back(Sample { at: Instant::now(), cpu, ns: b.saturating_sub(a), kernel_ns });
                            }
                            let now = thread_ns();
                            spent.fetch_add(now.saturating_sub(before), Ordering::Relaxed);
                            before = now;
                            std::thread::sleep(EVERY);
                        }
                    })
                    .ok()
            })
            .collect();
        Probe { stop, samples, spent, threads }
    }

    /// The probe threads' CPU time so far (ns).
    pub(crate) fn cpu_ns(&self) -> Arc<AtomicU64> {
        self.spent.clone()
    }

    /// The speed from `from` to `to`, on `target` (the CPUs the target could run on; all
    /// probed ones when empty): none where one of them has fewer than [`MIN_SAMPLES`].
    pub(crate) fn between(&self, from: Instant, to: Instant, target: &[usize]) -> Option<Speed> {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let mut by_cpu: std::collections::BTreeMap<usize, (Vec<f64>, Vec<f64>)> = Default::default();
        for s in samples.iter().filter(|s| s.at >= from && s.at <= to) {
            let (json, kernel) = by_cpu.entry(s.cpu).or_default();
            json.push(s.ns as f64 / 1000.0);
            kernel.extend(s.kernel_ns.map(|ns| ns as f64 / 1000.0));
        }
        drop(samples);
        let cpus: Vec<CpuSpeed> = by_cpu
            .into_iter()
            .map(|(cpu, (v, k))| CpuSpeed {
                cpu,
                us: stats::describe::median(&v),
                samples: v.len(),
                kernel_us: (k.len() >= MIN_SAMPLES).then(|| stats::describe::median(&k)),
            })
            .collect();
        let on: Vec<&CpuSpeed> = cpus.iter().filter(|c| target.is_empty() || target.contains(&c.cpu)).collect();
        if on.is_empty() || on.iter().any(|c| c.samples < MIN_SAMPLES || c.us.is_nan() || c.us <= 0.0) {
            return None;
        }
        let target_us = (on.iter().map(|c| c.us.ln()).sum::<f64>() / on.len() as f64).exp();
        let kernel: Option<Vec<f64>> = on.iter().map(|c| c.kernel_us.filter(|k| *k > 0.0)).collect();
        let kernel_us = kernel.map(|k| (k.iter().map(|v| v.ln()).sum::<f64>() / k.len() as f64).exp());
        Some(Speed { target_us, cpus, kernel_us })
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cpu_is_probed_and_a_step_reads_its_speed() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let p = Probe::start(&cpus);
        let from = Instant::now();
        std::thread::sleep(Duration::from_millis(900));
        let to = Instant::now();
        let s = p.between(from, to, &[]).expect("every CPU probed");
        assert_eq!(s.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), cpus);
        for c in &s.cpus {
            assert!(c.samples >= MIN_SAMPLES && c.us > 1.0 && c.us < 100_000.0, "{c:?}");
        }
        assert!(s.target_us > 1.0);
        // The kernel's path on each CPU too.
        assert!(s.cpus.iter().all(|c| c.kernel_us.is_some_and(|k| k > 1.0 && k < 100_000.0)), "{s:?}");
        assert!(s.kernel_us.is_some());
        // Only the first CPU: its own median.
        let one = p.between(from, to, &cpus[..1]).unwrap();
        assert!((one.target_us - s.cpus[0].us).abs() < 1e-9);
        // A window with no samples reads nothing; the probes' CPU time is counted.
        assert!(p.between(to + Duration::from_secs(5), to + Duration::from_secs(6), &[]).is_none());
        let spent = p.cpu_ns().load(Ordering::Relaxed);
        drop(p);
        assert!(spent > 0);
    }

    #[test]
    fn the_document_round_trips() {
        let doc = document();
        assert!(doc.len() > 6_000, "{}", doc.len());
        assert_eq!(round_trip(&doc), doc.len());
    }
}
