//! A commit's build in its worktree: `--build` run with sh in a process group of its own,
//! stopped whole however it ends, within `--build-timeout`.

use std::time::Instant;

use super::{Bisect, Tried};
use crate::git::Worktree;

impl Bisect<'_> {
    /// A worktree of the commit with its build done, or why not.
    pub(super) async fn build(&mut self, t: &mut Tried) -> Result<Worktree, String> {
        let short = t.commit.short().to_owned();
        let path = std::env::temp_dir().join(format!("loadlab-bisect-{}-{short}", std::process::id()));
        let tree = self.repo.worktree(&t.commit.hash, &path)?;
        let Some(build) = &self.req.build else { return Ok(tree) };
        let log = self.req.out.join(format!("{short}-build.log"));
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        (self.say)(&format!("bisect: building {short} ({}): {build}", t.commit.subject));
        let started = Instant::now();
        // In a group of its own, stopped whole however the build ends (done, timed out, a
        // signal, an error, a panic): `sleep 1002 & make` leaves nothing behind.
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", build])
            .current_dir(&tree.path)
            .stdin(std::process::Stdio::null())
            .stdout(file)
            .stderr(err)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let _group = child.id().map(Group);
        let limit = self.req.build_timeout;
        let status = tokio::select! {
            s = child.wait() => s.map_err(|e| e.to_string())?,
            () = tokio::time::sleep(limit) => {
                return Err(format!(
                    "its build ran past --build-timeout ({}): stopped, and the commit skipped as one that does not \
                     build (see {})",
                    results::duration::span(limit),
                    log.display()
                ));
            }
            () = self.signals.stop.cancelled() => return Err("stopped by a signal while building".into()),
        };
        t.build = Some((started.elapsed(), log.clone()));
        if !status.success() {
            return Err(format!("its build failed ({status}; see {})", log.display()));
        }
        (self.say)(&format!("bisect: built {short} in {:.1} s", started.elapsed().as_secs_f64()));
        Ok(tree)
    }
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
