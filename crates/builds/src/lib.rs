//! Commits built where they cannot touch the repository: `history bisect` and `lab ab` check a
//! commit out in a git worktree of its own and run the team's build command there.
//!
//! Modules, each using only those above it:
//! - `git`: revisions, ranges and worktrees through the `git` command, and where a commit's plan
//!   is in its worktree;
//! - `build`: a build command run in a worktree, in a process group of its own, bounded in time
//!   and stopped whole however it ends.

mod build;
mod git;

pub use build::{build, Build, Built};
pub use git::{plan_in_tree, Commit, Repo, Worktree};
