//! One step's profile from start to file: started with the step, ended when its attack has,
//! finished with the requests it counted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ProfileSpec, Profiler, Raw, StepProfile};

/// A profile being taken during a step.
pub struct Session {
    task: tokio::task::JoinHandle<Result<Raw, String>>,
    done: CancellationToken,
    target: String,
    /// perf's process once it runs, to stop it if the session is dropped unended (a lab
    /// abandoned by a second signal), so no perf outlives the lab.
    perf_pid: Arc<AtomicU32>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.done.cancel();
        let pid = self.perf_pid.swap(0, Ordering::AcqRel);
        if pid != 0 {
            // As perf is stopped at a step's end (it writes its file whole); its task reaps it.
            crate::process::ask(pid, nix::sys::signal::Signal::SIGINT);
        }
    }
}

impl Session {
    /// Starts profiling `how` for the step whose files are named `stem` (in `out/profiles`):
    /// its measured window begins after `warmup` and lasts `length`.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        how: &Profiler,
        pids: Vec<u32>,
        spec: &ProfileSpec,
        out: &Path,
        stem: &str,
        target: &str,
        warmup: Duration,
        length: Duration,
    ) -> Session {
        let done = CancellationToken::new();
        let data: PathBuf = out.join("profiles").join(format!("{stem}.perf.data"));
        let _ = std::fs::create_dir_all(out.join("profiles"));
        let perf_pid = Arc::new(AtomicU32::new(0));
        let task = tokio::spawn(super::record(
            how.clone(),
            pids,
            spec.clone(),
            data,
            warmup,
            length,
            done.clone(),
            Arc::clone(&perf_pid),
        ));
        Session { task, done, target: target.to_owned(), perf_pid }
    }

    /// Ends the profile of a step that counted `requests`, and writes it: the profile, or the
    /// one line that says why there is none.
    pub async fn end(
        mut self,
        requests: u64,
        spec: &ProfileSpec,
        patterns: &[String],
        out: &Path,
        stem: &str,
        title: &str,
    ) -> Result<StepProfile, String> {
        self.done.cancel();
        let raw = (&mut self.task).await.map_err(|e| e.to_string()).and_then(|r| r);
        // Ended: perf has stopped by itself or been stopped and reaped.
        self.perf_pid.store(0, Ordering::Release);
        let missing = |e: String| format!("profile of {} not taken: {e}", self.target);
        let raw = raw.map_err(missing)?;
        super::finish(raw, requests, spec, patterns, &out.join("profiles"), "profiles", stem, title)
            .map_err(|e| missing(e.to_string()))
    }
}
