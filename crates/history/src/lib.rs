//! A history of labs, to answer "when did it get slower?": every counted step's figures kept by
//! plan, target, load point and machine, stamped with the commit; each series' change points
//! across commits (Apache Otava's method, in `stats`); a gate that judges the newest lab against
//! the current level of its series rather than one baseline run.
//!
//! Modules, each using only those above it:
//! - `accept`: a change someone accepted, and what it covers (pure);
//! - `admit`: what a history keeps: a lab held to what a lab can measure, names without
//!   control characters;
//! - `entry`: what a lab adds to a history (through the lab's own types);
//! - `store`: the SQLite file or PostgreSQL database, one schema;
//! - `machine_change`: which change points the machine made (loadlab's own CPU moved alike);
//! - `series`: the stored labs as series, with their change points;
//! - `check`: the gate on the newest lab;
//! - `recording`: a lab added and judged, the one path every command takes;
//! - `overview`: what changed, newest first, and the last checks (history.md, the page's top,
//!   the end of `history show`);
//! - `render`: tables (text, Markdown), JSON, Otava's CSV;
//! - `page`: history.html, the overview and the series as small multiples.

mod accept;
mod admit;
mod check;
mod entry;
mod figures;
mod machine_change;
mod overview;
mod page;
mod recording;
mod render;
mod series;
mod store;

pub use accept::{who_default, Acceptance, MIN_COMMIT};
pub use admit::{plain, reorders_or_controls, Refused};
pub use check::{
    check, CheckError, Checked, HeldTo, Judged, Outcome, Pending, Regression, Rules, ALONE_FLOORS, ALONE_P,
    ALONE_TIMES, IN_A_ROW, LEVEL, MIN_LEVEL, TRIM,
};
pub use entry::{uid, Entry, Step, FUNCTION, RECORDED, SPAN};
pub use machine_change::machine_explains;
pub use page::html;
pub use recording::{judge_lab, record, JudgeError, RecordError, Recorded, Recording};
pub use render::{check_text, csv, json, list_text, markdown, show_text, write_json, write_show};
pub use series::{md_cell, on_line, series, series_where, show, Key, LabOf, Point, Query, Series, AB_TAG, BISECT_TAG};
pub use store::{
    locate, shown, stop_waiting, tables_of_schema_2, Added, Filter, History, HistoryError, Stored, SCHEMA,
};

/// Where a history is when none is given: the `LOADLAB_HISTORY` environment variable.
pub const ENV: &str = "LOADLAB_HISTORY";
