//! A commit's build in its worktree: the command run with sh in a process group of its own,
//! stopped whole however it ends, within a time limit.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::git::{Commit, Repo, Worktree};

/// How to build a commit.
#[derive(Clone, Debug)]
pub struct Build<'a> {
    /// Run in the worktree with `sh -c`; none: nothing to build (a service run from source).
    pub command: Option<&'a str>,
    /// Where its worktree goes (removed with what the build made when the worktree is dropped).
    pub tree: PathBuf,
    /// Where its output goes.
    pub log: PathBuf,
    pub timeout: Duration,
    /// Cancelled by a signal: the build is stopped.
    pub stop: &'a CancellationToken,
}

/// A commit checked out and built.
#[derive(Debug)]
pub struct Built {
    pub tree: Worktree,
    /// How long the build took and its log, when there was one.
    pub build: Option<(Duration, PathBuf)>,
}

/// A worktree of `commit` with its build done, or why not (the worktree then removed). `say`
/// hears a line as the build starts and ends.
pub async fn build(repo: &Repo, commit: &Commit, how: &Build<'_>, say: &dyn Fn(&str)) -> Result<Built, String> {
    let tree = repo.worktree(&commit.hash, &how.tree)?;
    let Some(command) = how.command else { return Ok(Built { tree, build: None }) };
    let short = commit.short();
    let log = &how.log;
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    say(&format!("building {short} ({}): {command}", commit.subject));
    let started = Instant::now();
    // In a group of its own, stopped whole however the build ends (done, timed out, a signal,
    // an error, a panic): `sleep 1002 & make` leaves nothing behind.
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", command])
        .current_dir(&tree.path)
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    let _group = child.id().map(Group);
    let status = tokio::select! {
        s = child.wait() => s.map_err(|e| e.to_string())?,
        () = tokio::time::sleep(how.timeout) => {
            return Err(format!(
                "its build ran past --build-timeout ({}): stopped (see {})",
                results::duration::span(how.timeout),
                log.display()
            ));
        }
        () = how.stop.cancelled() => return Err("stopped by a signal while building".into()),
    };
    let took = started.elapsed();
    if !status.success() {
        return Err(format!("its build failed ({status}; see {})", log.display()));
    }
    say(&format!("built {short} in {:.1} s", took.as_secs_f64()));
    Ok(Built { tree, build: Some((took, log.clone())) })
}

/// A build's process group: killed whole when dropped.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}
