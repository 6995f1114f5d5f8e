//! A history in an SQLite file (created on first use; nothing to install or start).

use rusqlite::{params, Connection, TransactionBehavior};

use super::backend::{
    Backend, INSERT_ACCEPTED, INSERT_FIGURE, INSERT_LAB, INSERT_STEP, LAB_BY_UID, NEWEST, PLAN_AND_MACHINE,
    SCHEMA_VERSION, SELECT_ACCEPTED,
};
use super::read::Labs;
use super::rows::{acceptance_of, lab_of, step_of};
use super::{todo, Added, HistoryError};
use crate::accept::Acceptance;
use crate::entry::Entry;

pub(super) fn sqlite_error(e: rusqlite::Error) -> HistoryError {
    HistoryError(e.to_string())
}

/// The file at `path`, whose folder must exist.
pub(super) fn open(path: &std::path::Path) -> Result<Connection, HistoryError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        return Err(HistoryError(format!("no folder {}", dir.display())));
    }
    // SQLite would open a device and leave `/dev/null-journal` beside it.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(HistoryError("not a file (a device or a folder), so not a history".into()));
    }
    let c = Connection::open(path).map_err(sqlite_error)?;
    // Another lab may be writing it (two CI jobs on one runner): wait rather than fail, but not
    // past a signal.
    c.busy_handler(Some(busy)).map_err(sqlite_error)?;
    Ok(c)
}

/// Set when the process is asked to stop: a lock wait gives up at once.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ends any wait for another writer's lock now, and every later one (a signal asked the process
/// to stop).
pub fn stop_waiting() {
    STOPPING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// How long an SQLite history waits for another writer's lock, in 10 ms turns: 30 s.
const BUSY_TURNS: i32 = 3000;

/// SQLite's busy handler: wait 10 ms and try again, up to [`BUSY_TURNS`], unless stopping.
fn busy(turn: i32) -> bool {
    if STOPPING.load(std::sync::atomic::Ordering::Relaxed) || turn >= BUSY_TURNS {
        return false;
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
    true
}

/// Every row of `sql` (no parameters) read by `of`.
fn all<T>(
    c: &Connection,
    sql: &str,
    of: impl Fn(&rusqlite::Row<'_>) -> Result<T, HistoryError>,
) -> Result<Vec<T>, HistoryError> {
    let mut st = c.prepare(sql).map_err(sqlite_error)?;
    let mut rows = st.query([]).map_err(sqlite_error)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sqlite_error)? {
        out.push(of(r)?);
    }
    Ok(out)
}

impl Backend for Connection {
    async fn version(&self) -> Result<Option<i64>, HistoryError> {
        let exists: i64 = self
            .query_row("SELECT COUNT(*) FROM sqlite_master WHERE name = 'loadlab_schema'", [], |r| r.get(0))
            .map_err(sqlite_error)?;
        if exists == 0 {
            return Ok(None);
        }
        self.query_row(SCHEMA_VERSION, [], |r| r.get(0)).map_err(sqlite_error)
    }

    async fn bring_up_to_date(&mut self) -> Result<(), HistoryError> {
        // An upgrade copies the labs table, which its foreign keys would forbid: they are off
        // meanwhile (SQLite takes this only outside a transaction) and checked after.
        self.execute_batch("PRAGMA foreign_keys = OFF").map_err(sqlite_error)?;
        let upgraded = (|| {
            let tx = self.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite_error)?;
            tx.execute_batch(&super::schema::tables("INTEGER PRIMARY KEY")[0]).map_err(sqlite_error)?;
            let found: Option<i64> = tx.query_row(SCHEMA_VERSION, [], |r| r.get(0)).map_err(sqlite_error)?;
            for statement in todo(found, true, "INTEGER PRIMARY KEY")? {
                tx.execute_batch(&statement).map_err(sqlite_error)?;
            }
            let broken: i64 = tx
                .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| r.get(0))
                .map_err(sqlite_error)?;
            if broken > 0 {
                return Err(HistoryError(format!("{broken} rows lost their lab while upgrading")));
            }
            tx.commit().map_err(sqlite_error)
        })();
        self.execute_batch("PRAGMA foreign_keys = ON").map_err(sqlite_error)?;
        upgraded
    }

    async fn check_writable(&mut self) -> Result<(), HistoryError> {
        // Taking the write lock is what a read-only file or folder refuses.
        let tx = self.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite_error)?;
        tx.execute("DELETE FROM labs WHERE id < 0", []).map_err(sqlite_error)?;
        tx.rollback().map_err(sqlite_error)
    }

    async fn add(&mut self, e: &Entry, recorded_unix_s: i64) -> Result<Added, HistoryError> {
        let tx = self.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite_error)?;
        let id: Option<i64> = {
            let mut st = tx.prepare(INSERT_LAB).map_err(sqlite_error)?;
            let mut rows = st
                .query(params![
                    e.uid,
                    e.plan,
                    e.started_unix_s,
                    e.commit,
                    e.branch,
                    e.tags,
                    e.loadlab,
                    i64::from(e.measurement),
                    e.machine,
                    e.machine_text,
                    e.path,
                    i64::from(e.quick),
                    recorded_unix_s
                ])
                .map_err(sqlite_error)?;
            rows.next().map_err(sqlite_error)?.map(|r| r.get(0)).transpose().map_err(sqlite_error)?
        };
        let Some(id) = id else {
            let id = tx.query_row(LAB_BY_UID, [&e.uid], |r| r.get(0)).map_err(sqlite_error)?;
            return Ok(Added::Already(id));
        };
        {
            let mut step = tx.prepare(INSERT_STEP).map_err(sqlite_error)?;
            let mut figure = tx.prepare(INSERT_FIGURE).map_err(sqlite_error)?;
            for s in &e.steps {
                step.execute(params![id, s.id, s.target, s.load, s.label, i64::from(s.repeat), s.not_counted])
                    .map_err(sqlite_error)?;
                for (m, v) in &s.values {
                    figure.execute(params![id, s.id, m, v]).map_err(sqlite_error)?;
                }
            }
        }
        tx.commit().map_err(sqlite_error)?;
        Ok(Added::New(id))
    }

    async fn accept(&self, a: &Acceptance) -> Result<(), HistoryError> {
        self.execute(INSERT_ACCEPTED, params![a.commit, a.plan, a.metric, a.reason, a.who, a.at_unix_s])
            .map(|_| ())
            .map_err(sqlite_error)
    }

    async fn acceptances(&self) -> Result<Vec<Acceptance>, HistoryError> {
        all(self, SELECT_ACCEPTED, |r| acceptance_of(r))
    }

    async fn plan_and_machine(&self, id: i64) -> Result<Option<(String, String)>, HistoryError> {
        let mut st = self.prepare(PLAN_AND_MACHINE).map_err(sqlite_error)?;
        let mut rows = st.query([id]).map_err(sqlite_error)?;
        match rows.next().map_err(sqlite_error)? {
            Some(r) => Ok(Some((r.get(0).map_err(sqlite_error)?, r.get(1).map_err(sqlite_error)?))),
            None => Ok(None),
        }
    }

    async fn newest(&self) -> Result<Option<i64>, HistoryError> {
        let mut st = self.prepare(NEWEST).map_err(sqlite_error)?;
        let mut rows = st.query([]).map_err(sqlite_error)?;
        rows.next().map_err(sqlite_error)?.map(|r| r.get(0)).transpose().map_err(sqlite_error)
    }

    async fn read(&self, statements: &[(String, Vec<String>); 3], labs: &mut Labs) -> Result<(), HistoryError> {
        let [(labs_sql, labs_by), (steps_sql, steps_by), (figures_sql, figures_by)] = statements;
        let params = |values: &Vec<String>| rusqlite::params_from_iter(values.clone());
        let mut st = self.prepare(labs_sql).map_err(sqlite_error)?;
        let mut rows = st.query(params(labs_by)).map_err(sqlite_error)?;
        while let Some(r) = rows.next().map_err(sqlite_error)? {
            labs.lab(lab_of(r)?);
        }
        labs.index();
        let mut st = self.prepare(steps_sql).map_err(sqlite_error)?;
        let mut rows = st.query(params(steps_by)).map_err(sqlite_error)?;
        while let Some(r) = rows.next().map_err(sqlite_error)? {
            labs.step(step_of(r)?);
        }
        // Figure by figure, as read: 500,000 of them are not held twice.
        let mut st = self.prepare(figures_sql).map_err(sqlite_error)?;
        let mut rows = st.query(params(figures_by)).map_err(sqlite_error)?;
        while let Some(r) = rows.next().map_err(sqlite_error)? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(sqlite_error);
            labs.figure(r.get(0).map_err(sqlite_error)?, text(1)?, text(2)?, r.get(3).map_err(sqlite_error)?);
        }
        Ok(())
    }
}
