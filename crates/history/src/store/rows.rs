//! Rows of either database read into a history's types.

use super::{postgres_error, sqlite_error, Acceptance, Entry, HistoryError, Stored};

/// A value both databases read.
pub(super) trait Cell: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a> {}
impl<T: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a>> Cell for T {}

/// A row of either database.
pub(super) trait Cells {
    fn at<T: Cell>(&self, i: usize) -> Result<T, HistoryError>;
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
        plan: r.at(2)?,
        started_unix_s: r.at(3)?,
        commit: r.at(4)?,
        branch: r.at(5)?,
        tags: r.at(6)?,
        loadlab: r.at(7)?,
        measurement: r.at::<i64>(8)? as u32,
        machine: r.at(9)?,
        machine_text: r.at(10)?,
        path: r.at(11)?,
        quick: r.at::<i64>(12)? != 0,
        steps: Vec::new(),
    };
    Ok((r.at(0)?, entry))
}

/// A row of SELECT_STEPS: the lab's key and the step.
pub(super) fn step_of(r: &impl Cells) -> Result<(i64, crate::entry::Step), HistoryError> {
    let step = crate::entry::Step {
        id: r.at(1)?,
        target: r.at(2)?,
        load: r.at(3)?,
        label: r.at(4)?,
        repeat: r.at::<i64>(5)? as u32,
        not_counted: r.at(6)?,
        values: Vec::new(),
    };
    Ok((r.at(0)?, step))
}

/// A row of SELECT_ACCEPTED.
pub(super) fn acceptance_of(r: &impl Cells) -> Result<Acceptance, HistoryError> {
    Ok(Acceptance {
        commit: r.at(0)?,
        plan: r.at(1)?,
        metric: r.at(2)?,
        reason: r.at(3)?,
        who: r.at(4)?,
        at_unix_s: r.at(5)?,
    })
}
