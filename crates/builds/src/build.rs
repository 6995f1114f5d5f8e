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
    // an error, a panic): `sleep 1002 & make` leaves nothing behind. Where the kernel allows, also
    // in a PID namespace of its own, whose every process the kernel kills when its first (the
    // build's shell) ends: a daemon the build starts with `setsid` ends with it too.
    let (program, args) = contained(command);
    let mut child = tokio::process::Command::new(program)
        .args(&args)
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

/// The program and arguments that run `command` with sh: inside `unshare --pid --fork
/// --kill-child` where that works here (root, or unprivileged user namespaces), so that killing
/// the build kills its every descendant (`--kill-child`: unshare's end takes its shell, and the
/// shell's end the namespace); else sh alone, in its process group.
fn contained(command: &str) -> (&'static str, Vec<String>) {
    static NAMESPACE: std::sync::OnceLock<Option<Vec<&'static str>>> = std::sync::OnceLock::new();
    let prefix = NAMESPACE.get_or_init(|| {
        let works = |args: &[&str]| {
            std::process::Command::new("unshare")
                .args(args)
                .arg("true")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        const ROOT: &[&str] = &["--pid", "--fork", "--kill-child"];
        const USER: &[&str] = &["--user", "--map-current-user", "--pid", "--fork", "--kill-child"];
        [ROOT, USER].into_iter().find(|a| works(a)).map(<[&str]>::to_vec)
    });
    let sh = ["sh".to_owned(), "-c".to_owned(), command.to_owned()];
    match prefix {
        Some(p) => ("unshare", p.iter().map(|a| (*a).to_owned()).chain(sh).collect()),
        None => ("sh", sh[1..].to_vec()),
    }
}

/// Whether a build's descendants end with it wherever they went (a PID namespace of its own).
#[cfg(test)]
fn contained_whole() -> bool {
    contained("true").0 == "unshare"
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes whose command line holds `mark`.
    fn running(mark: &str) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).contains(mark))
            .count()
    }

    fn repo(dir: &std::path::Path) -> (Repo, Commit) {
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git").args(args).current_dir(dir).status().unwrap().success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.join("f"), "x").unwrap();
        git(&["add", "f"]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
        let repo = Repo::holding(dir).unwrap();
        let head = repo.resolve("HEAD").unwrap();
        let commit = repo.commit(&head).unwrap();
        (repo, commit)
    }

    /// A daemon the build starts in a session of its own (`setsid`), out of its process group,
    /// ends with the build: when the build succeeds, and when it runs past its time limit.
    #[tokio::test]
    async fn a_build_s_every_descendant_ends_with_it() {
        assert!(contained_whole(), "this machine allows a PID namespace (root or user namespaces)");
        let dir = std::env::temp_dir().join(format!("loadlab-build-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (repo, commit) = repo(&dir);
        let stop = CancellationToken::new();
        for (n, (command, timeout)) in
            [("setsid sleep 1001.31 & sleep 0.2", 30), ("setsid sleep 1001.32 & sleep 30", 1)].into_iter().enumerate()
        {
            let how = Build {
                command: Some(command),
                tree: dir.join(format!("tree-{n}")),
                log: dir.join(format!("log-{n}")),
                timeout: Duration::from_secs(timeout),
                stop: &stop,
            };
            let built = build(&repo, &commit, &how, &|_| {}).await;
            assert_eq!(built.is_ok(), timeout == 30, "{command}: {:?}", built.as_ref().err());
            drop(built);
            let mark = &command[13..20];
            // The kernel's kill of a namespace is not instant: a bounded wait.
            let deadline = Instant::now() + Duration::from_secs(10);
            while running(mark) > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(running(mark), 0, "{command}: its daemon outlived the build");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
