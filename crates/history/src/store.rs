//! Where a history is kept: an SQLite file (created on first use; nothing to install or
//! start) or, for a team, a PostgreSQL database (`postgres://...`). One schema and the same
//! statements for both; only the key column's type differs.

use crate::accept::Acceptance;
use crate::entry::Entry;

/// The advisory lock a PostgreSQL history's tables are created under ("loadlab" in ASCII).
const SCHEMA_LOCK: i64 = 0x006c_6f61_646c_6162;

/// The schema's version, kept in the database: a history written by a later loadlab is refused,
/// an earlier one is brought up to this one. 2: the `accepted` table (`history accept`).
const SCHEMA: i64 = 2;

fn tables(id: &str) -> Vec<String> {
    vec![
        "CREATE TABLE IF NOT EXISTS loadlab_schema (version BIGINT NOT NULL)".into(),
        format!(
            "CREATE TABLE IF NOT EXISTS labs (id {id}, plan TEXT NOT NULL, started_unix_s BIGINT NOT NULL, \
             commit_sha TEXT, branch TEXT, tags TEXT NOT NULL, loadlab TEXT NOT NULL, measurement BIGINT NOT NULL, \
             machine TEXT NOT NULL, machine_text TEXT NOT NULL, path TEXT NOT NULL, quick BIGINT NOT NULL, \
             recorded_unix_s BIGINT NOT NULL, UNIQUE (plan, started_unix_s, machine))"
        ),
        "CREATE TABLE IF NOT EXISTS steps (lab_id BIGINT NOT NULL REFERENCES labs (id), step TEXT NOT NULL, \
         target TEXT NOT NULL, load_key TEXT NOT NULL, label TEXT NOT NULL, repeat_no BIGINT NOT NULL, \
         not_counted TEXT, PRIMARY KEY (lab_id, step))"
            .into(),
        "CREATE TABLE IF NOT EXISTS figures (lab_id BIGINT NOT NULL, step TEXT NOT NULL, metric TEXT NOT NULL, \
         value DOUBLE PRECISION NOT NULL, PRIMARY KEY (lab_id, step, metric), \
         FOREIGN KEY (lab_id, step) REFERENCES steps (lab_id, step))"
            .into(),
        "CREATE INDEX IF NOT EXISTS labs_by_time ON labs (started_unix_s)".into(),
        format!(
            "CREATE TABLE IF NOT EXISTS accepted (id {id}, commit_sha TEXT NOT NULL, plan TEXT, metric TEXT, \
             reason TEXT NOT NULL, who TEXT NOT NULL, accepted_unix_s BIGINT NOT NULL)"
        ),
    ]
}

const INSERT_LAB: &str = "INSERT INTO labs (plan, started_unix_s, commit_sha, branch, tags, loadlab, measurement, \
     machine, machine_text, path, quick, recorded_unix_s) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
     ON CONFLICT DO NOTHING RETURNING id";
const INSERT_STEP: &str = "INSERT INTO steps (lab_id, step, target, load_key, label, repeat_no, not_counted) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
const INSERT_FIGURE: &str = "INSERT INTO figures (lab_id, step, metric, value) VALUES ($1, $2, $3, $4)";
const SELECT_LABS: &str = "SELECT id, plan, started_unix_s, commit_sha, branch, tags, loadlab, measurement, machine, \
     machine_text, path, quick FROM labs ORDER BY started_unix_s, id";
const SELECT_STEPS: &str =
    "SELECT lab_id, step, target, load_key, label, repeat_no, not_counted FROM steps ORDER BY lab_id, step";
const SELECT_FIGURES: &str = "SELECT lab_id, step, metric, value FROM figures ORDER BY lab_id, step, metric";
const INSERT_ACCEPTED: &str =
    "INSERT INTO accepted (commit_sha, plan, metric, reason, who, accepted_unix_s) VALUES ($1, $2, $3, $4, $5, $6)";
const SELECT_ACCEPTED: &str =
    "SELECT commit_sha, plan, metric, reason, who, accepted_unix_s FROM accepted ORDER BY accepted_unix_s, id";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HistoryError(pub String);

fn sqlite_error(e: rusqlite::Error) -> HistoryError {
    HistoryError(format!("history: {e}"))
}

fn postgres_error(e: tokio_postgres::Error) -> HistoryError {
    // The server's own words (a missing database, a refused login) are in the source.
    let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| format!("{e}: {s}"));
    HistoryError(format!("history: {why}"))
}

/// The history a lab records into: `flag` (`--history`), else the plan's `[history] path`, else
/// the `LOADLAB_HISTORY` environment variable; none when none is set.
pub fn locate(flag: Option<&str>, plan: Option<&str>) -> Option<String> {
    flag.map(str::to_owned)
        .or_else(|| plan.map(str::to_owned))
        .or_else(|| std::env::var(crate::ENV).ok().filter(|v| !v.trim().is_empty()))
}

/// The history as a person may read it: a PostgreSQL URL's password replaced by `***` (a CI log
/// is read by more people than know the password).
pub fn shown(spec: &str) -> String {
    let Some((scheme, rest)) = spec.split_once("://") else { return spec.to_owned() };
    let Some((userinfo, host)) = rest.split_once('@') else { return spec.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => spec.to_owned(),
    }
}

/// A lab as the history holds it: its entry with its key.
pub type Stored = (i64, Entry);

/// An open history.
pub enum History {
    Sqlite(rusqlite::Connection),
    Postgres(tokio_postgres::Client),
}

/// What adding a lab did.
#[derive(Debug, PartialEq)]
pub enum Added {
    New(i64),
    /// The same plan, start time and machine were there: the lab was added before.
    Already,
}

impl History {
    /// An existing history, to read: a missing SQLite file is an error (a mistyped path read as
    /// an empty history would pass a gate), not created.
    pub async fn open_existing(spec: &str) -> Result<History, HistoryError> {
        if !is_postgres(spec) && !std::path::Path::new(spec).exists() {
            return Err(HistoryError(format!(
                "history {spec}: no such file (a history is created by recording a lab into it)"
            )));
        }
        History::open(spec).await
    }

    /// The history at `spec`: a `postgres://` (or `postgresql://`) URL, else an SQLite file,
    /// created with its tables on first use. A server that does not answer is given up on
    /// ([`CONNECT`] to connect, [`ANSWER`] in all), not waited for.
    pub async fn open(spec: &str) -> Result<History, HistoryError> {
        within(ANSWER, &format!("history {}: opening it", shown(spec)), History::open_now(spec)).await
    }

    async fn open_now(spec: &str) -> Result<History, HistoryError> {
        let h = if is_postgres(spec) {
            let connect = async { tokio_postgres::connect(spec, tokio_postgres::NoTls).await.map_err(postgres_error) };
            let (mut client, connection) =
                within(CONNECT, &format!("history {}: connecting", shown(spec)), connect).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            // Two first uses at once would both create the tables (and one fail on a duplicate
            // key in pg_type): under a transaction's advisory lock, one creates, the other finds.
            let tx = client.transaction().await.map_err(postgres_error)?;
            tx.query("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(postgres_error)?;
            for t in tables("BIGSERIAL PRIMARY KEY") {
                tx.batch_execute(&t).await.map_err(postgres_error)?;
            }
            tx.commit().await.map_err(postgres_error)?;
            History::Postgres(client)
        } else {
            let path = std::path::Path::new(spec);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
                return Err(HistoryError(format!("history {spec}: no folder {}", dir.display())));
            }
            let c = rusqlite::Connection::open(path).map_err(|e| HistoryError(format!("history {spec}: {e}")))?;
            // Another lab may be writing it (two CI jobs on one runner): wait rather than fail.
            c.busy_timeout(std::time::Duration::from_secs(30)).map_err(sqlite_error)?;
            for t in tables("INTEGER PRIMARY KEY") {
                c.execute_batch(&t).map_err(|e| HistoryError(format!("history {spec}: {e}")))?;
            }
            History::Sqlite(c)
        };
        h.check_schema(spec).await?;
        Ok(h)
    }

    async fn check_schema(&self, spec: &str) -> Result<(), HistoryError> {
        let found: Option<i64> = match self {
            History::Sqlite(c) => {
                c.query_row("SELECT MAX(version) FROM loadlab_schema", [], |r| r.get(0)).map_err(sqlite_error)?
            }
            History::Postgres(c) => {
                c.query_one("SELECT MAX(version) FROM loadlab_schema", &[]).await.map_err(postgres_error)?.get(0)
            }
        };
        match found {
            Some(v) if v == SCHEMA => Ok(()),
            // Schema 1 lacked the `accepted` table, which opening created: say so.
            Some(1) => {
                let update = "UPDATE loadlab_schema SET version = $1";
                match self {
                    History::Sqlite(c) => c.execute(update, [SCHEMA]).map(|_| ()).map_err(sqlite_error),
                    History::Postgres(c) => c.execute(update, &[&SCHEMA]).await.map(|_| ()).map_err(postgres_error),
                }
            }
            Some(v) => Err(HistoryError(format!(
                "history {}: written by a loadlab with schema {v}; this one reads schema {SCHEMA}",
                shown(spec)
            ))),
            None => {
                let insert = "INSERT INTO loadlab_schema (version) VALUES ($1)";
                match self {
                    History::Sqlite(c) => c.execute(insert, [SCHEMA]).map(|_| ()).map_err(sqlite_error),
                    History::Postgres(c) => c.execute(insert, &[&SCHEMA]).await.map(|_| ()).map_err(postgres_error),
                }
            }
        }
    }

    /// Adds a lab with its steps, in one transaction.
    pub async fn add(&mut self, e: &Entry) -> Result<Added, HistoryError> {
        within(ANSWER, "history: adding the lab", self.add_now(e)).await
    }

    async fn add_now(&mut self, e: &Entry) -> Result<Added, HistoryError> {
        let recorded = chrono::Utc::now().timestamp();
        let quick = i64::from(e.quick);
        let measurement = i64::from(e.measurement);
        match self {
            History::Sqlite(c) => {
                let tx = c.transaction().map_err(sqlite_error)?;
                let id: Option<i64> = {
                    let mut st = tx.prepare(INSERT_LAB).map_err(sqlite_error)?;
                    let mut rows = st
                        .query(rusqlite::params![
                            e.plan,
                            e.started_unix_s,
                            e.commit,
                            e.branch,
                            e.tags,
                            e.loadlab,
                            measurement,
                            e.machine,
                            e.machine_text,
                            e.path,
                            quick,
                            recorded
                        ])
                        .map_err(sqlite_error)?;
                    rows.next().map_err(sqlite_error)?.map(|r| r.get(0)).transpose().map_err(sqlite_error)?
                };
                let Some(id) = id else { return Ok(Added::Already) };
                for s in &e.steps {
                    tx.execute(
                        INSERT_STEP,
                        rusqlite::params![id, s.id, s.target, s.load, s.label, i64::from(s.repeat), s.not_counted],
                    )
                    .map_err(sqlite_error)?;
                    for (m, v) in &s.values {
                        tx.execute(INSERT_FIGURE, rusqlite::params![id, s.id, m, v]).map_err(sqlite_error)?;
                    }
                }
                tx.commit().map_err(sqlite_error)?;
                Ok(Added::New(id))
            }
            History::Postgres(c) => {
                let tx = c.transaction().await.map_err(postgres_error)?;
                let row = tx
                    .query_opt(
                        INSERT_LAB,
                        &[
                            &e.plan,
                            &e.started_unix_s,
                            &e.commit,
                            &e.branch,
                            &e.tags,
                            &e.loadlab,
                            &measurement,
                            &e.machine,
                            &e.machine_text,
                            &e.path,
                            &quick,
                            &recorded,
                        ],
                    )
                    .await
                    .map_err(postgres_error)?;
                let Some(row) = row else { return Ok(Added::Already) };
                let id: i64 = row.get(0);
                let (step, figure) = (
                    tx.prepare(INSERT_STEP).await.map_err(postgres_error)?,
                    tx.prepare(INSERT_FIGURE).await.map_err(postgres_error)?,
                );
                for s in &e.steps {
                    let repeat = i64::from(s.repeat);
                    tx.execute(&step, &[&id, &s.id, &s.target, &s.load, &s.label, &repeat, &s.not_counted])
                        .await
                        .map_err(postgres_error)?;
                    for (m, v) in &s.values {
                        tx.execute(&figure, &[&id, &s.id, m, v]).await.map_err(postgres_error)?;
                    }
                }
                tx.commit().await.map_err(postgres_error)?;
                Ok(Added::New(id))
            }
        }
    }

    /// Records that a change was accepted.
    pub async fn accept(&mut self, a: &Acceptance) -> Result<(), HistoryError> {
        within(ANSWER, "history: recording the acceptance", self.accept_now(a)).await
    }

    async fn accept_now(&mut self, a: &Acceptance) -> Result<(), HistoryError> {
        match self {
            History::Sqlite(c) => c
                .execute(INSERT_ACCEPTED, rusqlite::params![a.commit, a.plan, a.metric, a.reason, a.who, a.at_unix_s])
                .map(|_| ())
                .map_err(sqlite_error),
            History::Postgres(c) => c
                .execute(INSERT_ACCEPTED, &[&a.commit, &a.plan, &a.metric, &a.reason, &a.who, &a.at_unix_s])
                .await
                .map(|_| ())
                .map_err(postgres_error),
        }
    }

    /// Every acceptance, oldest first.
    pub async fn acceptances(&self) -> Result<Vec<Acceptance>, HistoryError> {
        within(ANSWER, "history: reading the acceptances", self.acceptances_now()).await
    }

    async fn acceptances_now(&self) -> Result<Vec<Acceptance>, HistoryError> {
        match self {
            History::Sqlite(c) => sqlite_all(c, SELECT_ACCEPTED, |r| acceptance_of(r)),
            History::Postgres(c) => {
                c.query(SELECT_ACCEPTED, &[]).await.map_err(postgres_error)?.iter().map(acceptance_of).collect()
            }
        }
    }

    /// Every lab in the history with its steps and figures, oldest first.
    pub async fn labs(&self) -> Result<Vec<Stored>, HistoryError> {
        within(ANSWER, "history: reading the labs", self.labs_now()).await
    }

    async fn labs_now(&self) -> Result<Vec<Stored>, HistoryError> {
        let (labs, steps, figures) = match self {
            History::Sqlite(c) => (
                sqlite_all(c, SELECT_LABS, |r| lab_of(r))?,
                sqlite_all(c, SELECT_STEPS, |r| step_of(r))?,
                sqlite_all(c, SELECT_FIGURES, |r| figure_of(r))?,
            ),
            History::Postgres(c) => {
                let labs = c.query(SELECT_LABS, &[]).await.map_err(postgres_error)?;
                let steps = c.query(SELECT_STEPS, &[]).await.map_err(postgres_error)?;
                let figures = c.query(SELECT_FIGURES, &[]).await.map_err(postgres_error)?;
                (
                    labs.iter().map(lab_of).collect::<Result<Vec<_>, _>>()?,
                    steps.iter().map(step_of).collect::<Result<Vec<_>, _>>()?,
                    figures.iter().map(figure_of).collect::<Result<Vec<_>, _>>()?,
                )
            }
        };
        let mut out = labs;
        let index: std::collections::HashMap<i64, usize> =
            out.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        for (lab, step) in steps {
            if let Some(&i) = index.get(&lab) {
                out[i].1.steps.push(step);
            }
        }
        for (lab, step, metric, value) in figures {
            if let Some(&i) = index.get(&lab) {
                if let Some(s) = out[i].1.steps.iter_mut().find(|s| s.id == step) {
                    s.values.push((metric, value));
                }
            }
        }
        Ok(out)
    }
}

/// How long connecting to a PostgreSQL history may take.
pub const CONNECT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long any one call on a history may take (opening it included): a server that accepts
/// and never answers is an error, not a CI job that hangs until it is killed.
pub const ANSWER: std::time::Duration = std::time::Duration::from_secs(60);

/// `f`, or an error naming `what` when it has not answered within `limit`.
async fn within<T>(
    limit: std::time::Duration,
    what: &str,
    f: impl std::future::Future<Output = Result<T, HistoryError>>,
) -> Result<T, HistoryError> {
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or_else(|_| Err(HistoryError(format!("{what}: no answer in {} s", limit.as_secs()))))
}

fn is_postgres(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// A value both databases read.
trait Cell: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a> {}
impl<T: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a>> Cell for T {}

/// A row of either database.
trait Cells {
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

fn sqlite_all<T>(
    c: &rusqlite::Connection,
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

/// A row of SELECT_LABS.
fn lab_of(r: &impl Cells) -> Result<Stored, HistoryError> {
    let entry = Entry {
        plan: r.at(1)?,
        started_unix_s: r.at(2)?,
        commit: r.at(3)?,
        branch: r.at(4)?,
        tags: r.at(5)?,
        loadlab: r.at(6)?,
        measurement: r.at::<i64>(7)? as u32,
        machine: r.at(8)?,
        machine_text: r.at(9)?,
        path: r.at(10)?,
        quick: r.at::<i64>(11)? != 0,
        steps: Vec::new(),
    };
    Ok((r.at(0)?, entry))
}

/// A row of SELECT_STEPS: the lab's key and the step.
fn step_of(r: &impl Cells) -> Result<(i64, crate::entry::Step), HistoryError> {
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
fn acceptance_of(r: &impl Cells) -> Result<Acceptance, HistoryError> {
    Ok(Acceptance {
        commit: r.at(0)?,
        plan: r.at(1)?,
        metric: r.at(2)?,
        reason: r.at(3)?,
        who: r.at(4)?,
        at_unix_s: r.at(5)?,
    })
}

/// A row of SELECT_FIGURES: lab, step, metric, value.
fn figure_of(r: &impl Cells) -> Result<(i64, String, String, f64), HistoryError> {
    Ok((r.at(0)?, r.at(1)?, r.at(2)?, r.at(3)?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(super::shown("postgres://ci:secret@127.0.0.1:5432/labs"), "postgres://ci:***@127.0.0.1:5432/labs");
        assert_eq!(super::shown("postgresql://ci@db/labs"), "postgresql://ci@db/labs");
        assert_eq!(super::shown("labs/history.db"), "labs/history.db");
    }
}
