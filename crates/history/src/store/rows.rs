//! Rows of either database read into a history's types.

use super::{postgres_error, sqlite_error, Acceptance, Entry, HistoryError, Stored};
use crate::admit::plain;

/// A value both databases read.
pub(super) trait Cell: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a> {}
impl<T: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a>> Cell for T {}

/// A row of either database.
pub(super) trait Cells {
    fn at<T: Cell>(&self, i: usize) -> Result<T, HistoryError>;

    /// A text as people will see it ([`plain`]): whatever wrote the history (a hostile lab.json,
    /// an older loadlab, SQL by hand), no terminal or page acts on what it reads.
    fn text(&self, i: usize) -> Result<String, HistoryError> {
        self.at::<String>(i).map(|s| plain(&s))
    }

    fn maybe_text(&self, i: usize) -> Result<Option<String>, HistoryError> {
        self.at::<Option<String>>(i).map(|s| s.as_deref().map(plain))
    }
}

impl Cells for rusqlite::Row<'_> {
    fn at<T: Cell>(&self, i: usize) -> Result<T, HistoryError> {
        self.get(i).map_err(sqlite_error)
    }
}

impl Cells for tokio_postgres::Row {
    fn at<T: Cell>(&self, i: usize) -> Result<T, HistoryError> {
        self.try_get(i).map_err(postgres_error)
    }
}

/// A row of SELECT_LABS.
pub(super) fn lab_of(r: &impl Cells) -> Result<Stored, HistoryError> {
    let entry = Entry {
        uid: r.at(1)?,
        plan: r.text(2)?,
        started_unix_s: r.at(3)?,
        commit: r.maybe_text(4)?,
        branch: r.maybe_text(5)?,
        tags: r.at(6)?,
        loadlab: r.text(7)?,
        measurement: r.at::<i64>(8)? as u32,
        machine: r.text(9)?,
        machine_text: r.text(10)?,
        path: r.text(11)?,
        quick: r.at::<i64>(12)? != 0,
        steps: Vec::new(),
    };
    Ok((r.at(0)?, entry))
}

/// A row of SELECT_STEPS: the lab's key and the step.
pub(super) fn step_of(r: &impl Cells) -> Result<(i64, crate::entry::Step), HistoryError> {
    let step = crate::entry::Step {
        id: r.at(1)?,
        target: r.text(2)?,
        load: r.at(3)?,
        label: r.text(4)?,
        repeat: r.at::<i64>(5)? as u32,
        not_counted: r.maybe_text(6)?,
        values: Vec::new(),
    };
    Ok((r.at(0)?, step))
}

/// A row of SELECT_ACCEPTED.
pub(super) fn acceptance_of(r: &impl Cells) -> Result<Acceptance, HistoryError> {
    Ok(Acceptance {
        commit: r.text(0)?,
        plan: r.maybe_text(1)?,
        metric: r.maybe_text(2)?,
        reason: r.text(3)?,
        who: r.text(4)?,
        at_unix_s: r.at(5)?,
    })
}
