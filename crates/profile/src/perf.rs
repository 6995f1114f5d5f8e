//! On-CPU profiles of local processes with linux-perf: `perf record` attached to the target's
//! process tree for a step's measured window (frequency sampling, call graphs), then `perf
//! script` folded by inferno. perf runs as loadlab's child, outside the target's tree and apart
//! from the generator's own process, so its CPU counts as neither.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferno::collapse::Collapse;

use super::folded::Folded;

/// How perf records.
#[derive(Clone, Debug, PartialEq)]
pub struct PerfOptions {
    /// The perf program (`perf` on the PATH by default).
    pub program: String,
    /// Samples per second per CPU.
    pub frequency: u32,
    /// Unwind with DWARF (for binaries built without frame pointers) instead of frame pointers.
    pub dwarf: bool,
    /// perf.data stops growing at this size (KiB): samples past it are dropped, and the profile
    /// says so.
    pub max_size_kib: u64,
}

impl Default for PerfOptions {
    fn default() -> PerfOptions {
        PerfOptions { program: "perf".into(), frequency: 99, dwarf: false, max_size_kib: 256 * 1024 }
    }
}

/// A `perf record` running.
pub struct Recording {
    child: Child,
    data: PathBuf,
    log: PathBuf,
    pids: Vec<u32>,
    opts: PerfOptions,
}

/// Starts recording `pids` (and their threads) into `data`.
pub fn start(opts: &PerfOptions, pids: &[u32], data: &Path) -> Result<Recording, String> {
    if pids.is_empty() {
        return Err("no process to profile".into());
    }
    if let Some(why) = paranoid_refusal() {
        return Err(why);
    }
    let log = data.with_extension("perf.log");
    let err = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let mut cmd = Command::new(&opts.program);
    // cpu-clock (software, in every VM), so each sample's period is the CPU nanoseconds it
    // stands for: their sum is the processes' CPU time in the window.
    cmd.args(["record", "-q", "-e", "cpu-clock", "-F", &opts.frequency.to_string()]);
    match opts.dwarf {
        true => cmd.args(["--call-graph", "dwarf"]),
        false => cmd.arg("-g"),
    };
    cmd.args(["-p", &list.join(","), "--max-size", &format!("{}K", opts.max_size_kib), "-o"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err);
    let child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "perf not found ({}): install linux-perf (Debian) or linux-tools for the running kernel (Ubuntu)",
            opts.program
        ),
        _ => format!("{}: {e}", opts.program),
    })?;
    let mut rec = Recording { child, data: data.to_path_buf(), log, pids: pids.to_vec(), opts: opts.clone() };
    // perf refuses at once (permissions, a missing process): give it a moment to say so.
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        if let Ok(Some(status)) = rec.child.try_wait() {
            if !status.success() || !rec.data.exists() {
                return Err(refusal(&read_log(&rec.log), status));
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(rec)
}

/// Why perf cannot watch another process here, before trying: not root, and
/// `kernel.perf_event_paranoid` above 1.
fn paranoid_refusal() -> Option<String> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|u| u.split_whitespace().nth(1).map(|e| e == "0"))?;
    let level = paranoid_level()?;
    (!root && level > 1).then(|| paranoid_text(level))
}

fn paranoid_level() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

fn paranoid_text(level: i64) -> String {
    format!(
        "kernel.perf_event_paranoid is {level}: perf may not profile another process; set it to 1 or lower \
         (sysctl -w kernel.perf_event_paranoid=1), or run loadlab as root or with CAP_PERFMON"
    )
}

/// perf's refusal as one line.
fn refusal(log: &str, status: std::process::ExitStatus) -> String {
    if log.contains("perf_event_paranoid") {
        return paranoid_level().map_or_else(
            || "perf was refused by kernel.perf_event_paranoid: set it to 1 or lower, or run as root".into(),
            paranoid_text,
        );
    }
    let first = log.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no message");
    format!("perf record failed ({status}): {first}")
}

fn read_log(path: &Path) -> String {
    let mut s = String::new();
    let _ = std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut s));
    s
}

/// What a recording gave: the folded stacks weighted by CPU nanoseconds (perf's periods, as
/// inferno folds them), about how many samples, and what a reader should know of them.
pub struct Taken {
    pub folded: Folded,
    pub samples: u64,
    pub notes: Vec<String>,
}

impl Recording {
    /// perf's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops perf (as Ctrl-C does, so it writes its file whole) and folds what it recorded.
    pub fn stop(mut self) -> Result<Taken, String> {
        let mut notes = Vec::new();
        match self.child.try_wait() {
            Ok(Some(_)) => notes
                .push("the profiled process exited during the step: the profile covers the step until then".to_owned()),
            _ => {
                let (signal, grace) = (nix::sys::signal::Signal::SIGINT, Duration::from_secs(30));
                if !crate::process::stop(&mut self.child, signal, false, grace) {
                    return Err("perf record did not stop within 30 s of being asked".into());
                }
            }
        }
        let size = std::fs::metadata(&self.data).map(|m| m.len()).unwrap_or(0);
        if size == 0 {
            return Err(format!("perf record wrote nothing: {}", read_log(&self.log).trim()));
        }
        if size as f64 >= self.opts.max_size_kib as f64 * 1024.0 * 0.95 {
            notes.push(format!(
                "perf.data reached its limit of {} KiB: samples past it were dropped (profile.max_size)",
                self.opts.max_size_kib
            ));
        }
        if self.pids.iter().all(|p| !Path::new(&format!("/proc/{p}")).exists()) && notes.is_empty() {
            notes.push("the profiled process exited during the step: the profile covers the step until then".into());
        }
        let folded = fold(&self.opts.program, &self.data)?;
        // Samples at `frequency` per CPU-second of the processes.
        let samples = (folded.total() as f64 * f64::from(self.opts.frequency) / 1e9).round() as u64;
        let unknown = folded.unsymbolised_share();
        if unknown > 0.2 {
            notes.push(missing_symbols(unknown, &folded.unsymbolised_binaries()));
        }
        Ok(Taken { folded, samples, notes })
    }
}

/// What a reader can do about frames without symbols: which binaries lack them, and how to get
/// them (a distribution's debug-symbol package, or debuginfod where it is reachable).
fn missing_symbols(share: f64, binaries: &[(String, u64)]) -> String {
    let total: u64 = binaries.iter().map(|(_, n)| n).sum::<u64>().max(1);
    let named: Vec<String> = binaries
        .iter()
        .take(3)
        .map(|(b, n)| format!("{b} ({:.0}%)", *n as f64 / total as f64 * share * 100.0))
        .collect();
    let which = if named.is_empty() { String::new() } else { format!(", in {}", named.join(", ")) };
    format!(
        "symbols missing for {:.0}% of the CPU{which}: those frames are shown by address. A stripped binary's \
         symbols come with its debug-symbol package (Debian: the -dbgsym package from the debian-debug archive, \
         e.g. nginx-dbgsym) or from debuginfod (set DEBUGINFOD_URLS where one is reachable); code made at run time \
         has none",
        share * 100.0
    )
}

/// `perf script` of `data`, folded by inferno (addresses kept where a symbol is missing).
fn fold(program: &str, data: &Path) -> Result<Folded, String> {
    let mut script = Command::new(program)
        .args(["script", "--no-inline", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("perf script: {e}"))?;
    let out = script.stdout.take().ok_or("perf script: no output")?;
    let mut opts = inferno::collapse::perf::Options::default();
    opts.include_addrs = true;
    opts.nthreads = 1;
    let mut folder = inferno::collapse::perf::Folder::from(opts);
    let mut text = Vec::new();
    let folded = folder.collapse(BufReader::new(out), &mut text);
    let status = script.wait().map_err(|e| format!("perf script: {e}"))?;
    folded.map_err(|e| format!("folding perf script's output: {e}"))?;
    if !status.success() && text.is_empty() {
        return Err(format!("perf script failed ({status})"));
    }
    Ok(Folded::parse(&String::from_utf8_lossy(&text)))
}

/// `pid` and every process below it now.
pub fn tree(pid: u32) -> Vec<u32> {
    let mut children: std::collections::BTreeMap<i32, Vec<i32>> = Default::default();
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            if let Ok(st) = p.stat() {
                children.entry(st.ppid).or_default().push(st.pid);
            }
        }
    }
    let mut out = vec![pid];
    let mut stack = vec![pid as i32];
    while let Some(p) = stack.pop() {
        for c in children.remove(&p).unwrap_or_default() {
            out.push(c as u32);
            stack.push(c);
        }
    }
    out
}

/// Every process whose name (`comm`, as `ps` and `pgrep` show it) is `name`.
pub fn named(name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            if p.stat().is_ok_and(|s| s.comm == name) {
                out.push(p.pid as u32);
            }
        }
    }
    out
}

/// CPU seconds (user + system) the processes `pids` have used so far.
pub(crate) fn cpu_seconds(pids: &[u32]) -> f64 {
    let ticks: u64 = pids
        .iter()
        .filter_map(|p| procfs::process::Process::new(*p as i32).ok()?.stat().ok())
        .map(|s| s.utime + s.stime)
        .sum();
    ticks as f64 / procfs::ticks_per_second() as f64
}

#[cfg(test)]
mod symbol_tests {
    #[test]
    fn missing_symbols_name_the_binaries_and_the_way_to_get_them() {
        let note = super::missing_symbols(0.97, &[("nginx".into(), 60), ("libz.so.1.2.13".into(), 37)]);
        assert!(
            note.starts_with("symbols missing for 97% of the CPU, in nginx (60%), libz.so.1.2.13 (37%):"),
            "{note}"
        );
        assert!(note.contains("-dbgsym") && note.contains("DEBUGINFOD_URLS"), "{note}");
    }
}
