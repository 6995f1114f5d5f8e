//! Base against head in one job: `loadlab lab ab` builds two commits in worktrees of their own
//! and labs them in interleaved pairs, for a pull request's verdict before it merges.
//!
//! Modules, each using only those above it:
//! - `judge`: head against base at one look (pure): the paired test per cell, the gates, what
//!   the run could have seen;
//! - `duet`: whether a pair's two labs run at once (both builds together, in step) or one after
//!   the other;
//! - `profiles`: the differential profiles of cells profiled on both sides;
//! - `run`: builds (`run::ready`: a side checked out, built, its plan loaded), pairs of labs (at
//!   once, or one at a time in ABBA order), looks, the history;
//! - `report`: the last line, ab.md, ab.json.

mod duet;
mod judge;
mod profiles;
mod report;
mod run;

pub use duet::Pairing;
pub use judge::{CellPairs, Look, Machine, Row, Said, ALPHA, MIN_PAIRS, POWER};
pub use report::{failed, json, last_line, markdown};
pub use run::{ab, first_of_pair, Built, Ending, Failure, Repeats, Report, Request, Signals, Which};
