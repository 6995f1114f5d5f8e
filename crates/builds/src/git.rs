//! The repository a build is made from, through the `git` command: revisions resolved, the
//! commits of a range, and worktrees of their own (the repository's own tree and HEAD are never
//! touched).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A commit of the range.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
}

impl Commit {
    /// The first 10 characters of the hash.
    pub fn short(&self) -> &str {
        &self.hash[..self.hash.len().min(10)]
    }
}

/// A git repository, by its top folder.
#[derive(Clone, Debug)]
pub struct Repo {
    pub root: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e} (is git installed?)"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(why.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed").trim().to_owned())
    }
}

impl Repo {
    /// The repository that holds `path`.
    pub fn holding(path: &Path) -> Result<Repo, String> {
        let dir = if path.is_dir() { path } else { path.parent().unwrap_or(Path::new(".")) };
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        let root = git(dir, &["rev-parse", "--show-toplevel"])
            .map_err(|e| format!("{}: not in a git repository ({e})", path.display()))?;
        Ok(Repo { root: PathBuf::from(root) })
    }

    /// The full hash of the commit `rev` names.
    pub fn resolve(&self, rev: &str) -> Result<String, String> {
        git(&self.root, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .ok()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{rev}: git knows no such commit"))
    }

    /// Whether `a` is an ancestor of `b`.
    pub fn is_ancestor(&self, a: &str, b: &str) -> bool {
        Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(["merge-base", "--is-ancestor", a, b])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The commits after `good` up to `bad`, oldest first: the first-parent line, or with
    /// `merged` every commit in topological order.
    pub fn range(&self, good: &str, bad: &str, merged: bool) -> Result<Vec<Commit>, String> {
        let mut args = vec!["log", "--reverse", "--format=%H%x00%s"];
        args.push(if merged { "--topo-order" } else { "--first-parent" });
        let range = format!("{good}..{bad}");
        args.push(&range);
        let text = git(&self.root, &args)?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_once('\0'))
            .map(|(hash, subject)| Commit { hash: hash.to_owned(), subject: history::plain(subject) })
            .collect())
    }

    /// The commit `hash` with its subject.
    pub fn commit(&self, hash: &str) -> Result<Commit, String> {
        let subject = git(&self.root, &["log", "-1", "--format=%s", hash])?;
        // A subject is anyone's words: no control character reaches a terminal.
        Ok(Commit { hash: hash.to_owned(), subject: history::plain(&subject) })
    }

    /// A worktree of `hash` at `path` (detached: no branch is made or moved).
    pub fn worktree(&self, hash: &str, path: &Path) -> Result<Worktree, String> {
        let at = path.to_string_lossy();
        git(&self.root, &["worktree", "add", "--detach", "--force", &at, hash])
            .map_err(|e| format!("git worktree add {at}: {e}"))?;
        Ok(Worktree { root: self.root.clone(), path: path.to_path_buf() })
    }
}

/// A worktree, removed (with what its build made) when dropped.
#[derive(Debug)]
pub struct Worktree {
    root: PathBuf,
    pub path: PathBuf,
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let _ = git(&self.root, &["worktree", "remove", "--force", "--force", &self.path.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&self.path);
        let _ = git(&self.root, &["worktree", "prune"]);
    }
}

/// Where a commit's plan is in its worktree: its own at `plan_in_repo`, or (when
/// `from_working_tree`, or when the commit holds none) `working_plan` copied to where its own
/// would be, so that its relative paths (`./svc`, a recipe) are the commit's. Also whether the
/// commit held none.
pub fn plan_in_tree(
    tree: &Worktree,
    plan_in_repo: &Path,
    working_plan: &Path,
    from_working_tree: bool,
) -> Result<(PathBuf, bool), String> {
    let in_tree = tree.path.join(plan_in_repo);
    let absent = !in_tree.is_file();
    if from_working_tree || absent {
        if let Some(dir) = in_tree.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::copy(working_plan, &in_tree).map_err(|e| format!("{}: {e}", in_tree.display()))?;
    }
    Ok((in_tree, absent))
}
