//! Which commit made it slower: `loadlab history bisect` builds and labs the commits between a
//! good and a bad one in worktrees of their own, halving the range as git bisect does, each
//! commit judged against the good and the bad level with a sequential test that labs it again
//! while it cannot tell.
//!
//! Modules, each using only those above it:
//! - `judge`: good, bad or undecided between two levels (pure);
//! - `search`: the halving over commits, with skips (pure);
//! - `run`: the bisect from start to end (builds through the `builds` crate, labs recorded in the
//!   history);
//! - `report`: the last line and bisect.md.

mod judge;
mod report;
mod run;
mod search;

pub use builds::{Commit, Repo};
pub use judge::{Levels, Verdict, ERROR, LEVEL_LABS, MIN_SPREAD, MOST_LABS, OUTLIER_SPREADS, SPREAD_MARGIN};
pub use report::{last_line, markdown};
pub use run::{bisect, Change, Ending, Failure, Report, Request, Signals, Tried, CHOICE_P, CHOSEN_FROM};
pub use search::{Answer, Search, State};
