//! Where a history is kept: an SQLite file (created on first use; nothing to install or
//! start) or, for a team, a PostgreSQL database (`postgres://...`). One schema and the same
//! statements for both; only the key column's type differs.

use crate::accept::Acceptance;
use crate::entry::Entry;

mod read;
mod rows;
mod schema;
mod tls;

pub use read::Filter;

use rows::{acceptance_of, sqlite_all};
pub use schema::{tables_of_schema_2, SCHEMA};

/// The advisory lock a PostgreSQL history's tables are created under ("loadlab" in ASCII).
const SCHEMA_LOCK: i64 = 0x006c_6f61_646c_6162;

const INSERT_LAB: &str = "INSERT INTO labs (uid, plan, started_unix_s, commit_sha, branch, tags, loadlab, \
     measurement, machine, machine_text, path, quick, recorded_unix_s) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING RETURNING id";
const LAB_BY_UID: &str = "SELECT id FROM labs WHERE uid = $1";
const INSERT_STEP: &str = "INSERT INTO steps (lab_id, step, target, load_key, label, repeat_no, not_counted) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
const INSERT_FIGURE: &str = "INSERT INTO figures (lab_id, step, metric, value) VALUES ($1, $2, $3, $4)";
const INSERT_ACCEPTED: &str =
    "INSERT INTO accepted (commit_sha, plan, metric, reason, who, accepted_unix_s) VALUES ($1, $2, $3, $4, $5, $6)";
const SELECT_ACCEPTED: &str =
    "SELECT commit_sha, plan, metric, reason, who, accepted_unix_s FROM accepted ORDER BY accepted_unix_s, id";

/// What went wrong with a history, in one line that names it (its password masked).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HistoryError(pub String);

fn sqlite_error(e: rusqlite::Error) -> HistoryError {
    HistoryError(e.to_string())
}

fn postgres_error(e: tokio_postgres::Error) -> HistoryError {
    // The server's own words (a missing database, a refused login) are in the source.
    let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| format!("{e}: {s}"));
    if why.contains("UnknownIssuer") {
        return HistoryError(format!(
            "{why} (the server's certificate is not trusted: give the CA that signed it with \
             sslrootcert=FILE, or encrypt without checking it with sslmode=require)"
        ));
    }
    if why.contains("CaUsedAsEndEntity") {
        return HistoryError(format!(
            "{why} (the server presents a CA certificate as its own, as `openssl req -x509` makes \
             them; rustls refuses that: sign a server certificate with that CA, or encrypt without \
             checking it with sslmode=require)"
        ));
    }
    if why.contains("not valid for name") {
        return HistoryError(format!(
            "{why} (connect by a name the certificate is for, or check only who signed it with \
             sslmode=verify-ca)"
        ));
    }
    HistoryError(why)
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
pub struct History {
    /// As [`shown`]: what every error names.
    name: String,
    db: Db,
}

enum Db {
    Sqlite(rusqlite::Connection),
    Postgres(tokio_postgres::Client),
}

/// What adding a lab did.
#[derive(Debug, PartialEq)]
pub enum Added {
    New(i64),
    /// A lab of the same identity was there (its folder was added before): its key.
    Already(i64),
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
    /// created with its tables on first use, brought up to this schema if older. A server that
    /// does not answer is given up on ([`CONNECT`] to connect, [`ANSWER`] in all), not waited for.
    pub async fn open(spec: &str) -> Result<History, HistoryError> {
        let name = shown(spec);
        within(ANSWER, "opening it", History::open_now(spec, &name)).await.map_err(|e| named(&name, e))
    }

    /// The history as its errors name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    async fn open_now(spec: &str, name: &str) -> Result<History, HistoryError> {
        let db = if is_postgres(spec) {
            let (url, wanted) = tls::split(spec)?;
            let mut config: tokio_postgres::Config = url.parse().map_err(postgres_error)?;
            config.ssl_mode(wanted.ssl_mode());
            // libpq's `connect_timeout` in the URL bounds each attempt; CONNECT bounds them all.
            let connect = async {
                match wanted.connector()? {
                    Some(tls) => {
                        let (client, connection) = config.connect(tls).await.map_err(postgres_error)?;
                        tokio::spawn(connection);
                        Ok(client)
                    }
                    None => {
                        let (client, connection) =
                            config.connect(tokio_postgres::NoTls).await.map_err(postgres_error)?;
                        tokio::spawn(connection);
                        Ok(client)
                    }
                }
            };
            Db::Postgres(within(CONNECT, "connecting", connect).await?)
        } else {
            let path = std::path::Path::new(spec);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
                return Err(HistoryError(format!("no folder {}", dir.display())));
            }
            let c = rusqlite::Connection::open(path).map_err(sqlite_error)?;
            // Another lab may be writing it (two CI jobs on one runner): wait rather than fail,
            // but not past a signal.
            c.busy_handler(Some(busy)).map_err(sqlite_error)?;
            Db::Sqlite(c)
        };
        let mut h = History { name: name.to_owned(), db };
        h.bring_up_to_date().await?;
        Ok(h)
    }

    /// Creates the tables of an empty history, or upgrades an older one, under a lock (an
    /// advisory lock, SQLite's write lock), so that first uses at once all succeed; refuses a
    /// newer one. Reads only when the schema is this one's (a read-only history can be read).
    async fn bring_up_to_date(&mut self) -> Result<(), HistoryError> {
        if self.version().await? == Some(SCHEMA) {
            return Ok(());
        }
        match &mut self.db {
            Db::Postgres(c) => {
                let tx = c.transaction().await.map_err(postgres_error)?;
                tx.query("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(postgres_error)?;
                tx.batch_execute(&schema::tables("BIGSERIAL PRIMARY KEY")[0]).await.map_err(postgres_error)?;
                let found: Option<i64> =
                    tx.query_one("SELECT MAX(version) FROM loadlab_schema", &[]).await.map_err(postgres_error)?.get(0);
                for statement in todo(found, false, "BIGSERIAL PRIMARY KEY")? {
                    tx.batch_execute(&statement).await.map_err(postgres_error)?;
                }
                tx.commit().await.map_err(postgres_error)
            }
            Db::Sqlite(c) => {
                // An upgrade copies the labs table, which its foreign keys would forbid: they are
                // off meanwhile (SQLite takes this only outside a transaction) and checked after.
                c.execute_batch("PRAGMA foreign_keys = OFF").map_err(sqlite_error)?;
                let upgraded = (|| {
                    let tx =
                        c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite_error)?;
                    tx.execute_batch(&schema::tables("INTEGER PRIMARY KEY")[0]).map_err(sqlite_error)?;
                    let found: Option<i64> = tx
                        .query_row("SELECT MAX(version) FROM loadlab_schema", [], |r| r.get(0))
                        .map_err(sqlite_error)?;
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
                c.execute_batch("PRAGMA foreign_keys = ON").map_err(sqlite_error)?;
                upgraded
            }
        }
    }

    /// The schema's version, none in an empty database.
    async fn version(&self) -> Result<Option<i64>, HistoryError> {
        let read = "SELECT MAX(version) FROM loadlab_schema";
        match &self.db {
            Db::Sqlite(c) => {
                let exists: i64 = c
                    .query_row("SELECT COUNT(*) FROM sqlite_master WHERE name = 'loadlab_schema'", [], |r| r.get(0))
                    .map_err(sqlite_error)?;
                if exists == 0 {
                    return Ok(None);
                }
                c.query_row(read, [], |r| r.get(0)).map_err(sqlite_error)
            }
            Db::Postgres(c) => {
                let exists: bool = c
                    .query_one("SELECT to_regclass('loadlab_schema') IS NOT NULL", &[])
                    .await
                    .map_err(postgres_error)?
                    .get(0);
                if !exists {
                    return Ok(None);
                }
                Ok(c.query_one(read, &[]).await.map_err(postgres_error)?.get(0))
            }
        }
    }

    /// Whether a lab could be added now (a read-only file, a role without INSERT): asked before
    /// a lab runs, so that it does not run for an hour and then fail to record.
    pub async fn check_writable(&mut self) -> Result<(), HistoryError> {
        let name = self.name.clone();
        let check = async {
            match &mut self.db {
                Db::Sqlite(c) => {
                    // Taking the write lock is what a read-only file or folder refuses.
                    let tx =
                        c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite_error)?;
                    tx.execute("DELETE FROM labs WHERE id < 0", []).map_err(sqlite_error)?;
                    tx.rollback().map_err(sqlite_error)
                }
                Db::Postgres(c) => {
                    let may: bool = c
                        .query_one(
                            "SELECT has_table_privilege('labs', 'INSERT') AND has_table_privilege('steps', 'INSERT') \
                             AND has_table_privilege('figures', 'INSERT')",
                            &[],
                        )
                        .await
                        .map_err(postgres_error)?
                        .get(0);
                    if may {
                        Ok(())
                    } else {
                        Err(HistoryError("this role may not add labs (no INSERT on its tables)".into()))
                    }
                }
            }
        };
        within(ANSWER, "checking it can be written", check).await.map_err(|e| named(&name, e))
    }

    /// Adds a lab with its steps, in one transaction.
    pub async fn add(&mut self, e: &Entry) -> Result<Added, HistoryError> {
        let name = self.name.clone();
        within(ANSWER, "adding the lab", self.add_now(e)).await.map_err(|e| named(&name, e))
    }

    async fn add_now(&mut self, e: &Entry) -> Result<Added, HistoryError> {
        let recorded = chrono::Utc::now().timestamp();
        let quick = i64::from(e.quick);
        let measurement = i64::from(e.measurement);
        match &mut self.db {
            Db::Sqlite(c) => {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sqlite_error)?;
                let id: Option<i64> = {
                    let mut st = tx.prepare(INSERT_LAB).map_err(sqlite_error)?;
                    let mut rows = st
                        .query(rusqlite::params![
                            e.uid,
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
                let Some(id) = id else {
                    let id = tx.query_row(LAB_BY_UID, [&e.uid], |r| r.get(0)).map_err(sqlite_error)?;
                    return Ok(Added::Already(id));
                };
                {
                    let mut step = tx.prepare(INSERT_STEP).map_err(sqlite_error)?;
                    let mut figure = tx.prepare(INSERT_FIGURE).map_err(sqlite_error)?;
                    for s in &e.steps {
                        step.execute(rusqlite::params![
                            id,
                            s.id,
                            s.target,
                            s.load,
                            s.label,
                            i64::from(s.repeat),
                            s.not_counted
                        ])
                        .map_err(sqlite_error)?;
                        for (m, v) in &s.values {
                            figure.execute(rusqlite::params![id, s.id, m, v]).map_err(sqlite_error)?;
                        }
                    }
                }
                tx.commit().map_err(sqlite_error)?;
                Ok(Added::New(id))
            }
            Db::Postgres(c) => {
                let tx = c.transaction().await.map_err(postgres_error)?;
                let row = tx
                    .query_opt(
                        INSERT_LAB,
                        &[
                            &e.uid,
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
                let Some(row) = row else {
                    let id = tx.query_one(LAB_BY_UID, &[&e.uid]).await.map_err(postgres_error)?.get(0);
                    return Ok(Added::Already(id));
                };
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
                        tx.execute(&figure, &[&id, &s.id, &&**m, v]).await.map_err(postgres_error)?;
                    }
                }
                tx.commit().await.map_err(postgres_error)?;
                Ok(Added::New(id))
            }
        }
    }

    /// Records that a change was accepted.
    pub async fn accept(&mut self, a: &Acceptance) -> Result<(), HistoryError> {
        let name = self.name.clone();
        within(ANSWER, "recording the acceptance", self.accept_now(a)).await.map_err(|e| named(&name, e))
    }

    async fn accept_now(&mut self, a: &Acceptance) -> Result<(), HistoryError> {
        match &self.db {
            Db::Sqlite(c) => c
                .execute(INSERT_ACCEPTED, rusqlite::params![a.commit, a.plan, a.metric, a.reason, a.who, a.at_unix_s])
                .map(|_| ())
                .map_err(sqlite_error),
            Db::Postgres(c) => c
                .execute(INSERT_ACCEPTED, &[&a.commit, &a.plan, &a.metric, &a.reason, &a.who, &a.at_unix_s])
                .await
                .map(|_| ())
                .map_err(postgres_error),
        }
    }

    /// Every acceptance, oldest first.
    pub async fn acceptances(&self) -> Result<Vec<Acceptance>, HistoryError> {
        within(ANSWER, "reading the acceptances", self.acceptances_now()).await.map_err(|e| named(&self.name, e))
    }

    async fn acceptances_now(&self) -> Result<Vec<Acceptance>, HistoryError> {
        match &self.db {
            Db::Sqlite(c) => sqlite_all(c, SELECT_ACCEPTED, |r| acceptance_of(r)),
            Db::Postgres(c) => {
                c.query(SELECT_ACCEPTED, &[]).await.map_err(postgres_error)?.iter().map(acceptance_of).collect()
            }
        }
    }
}

/// How long connecting to a PostgreSQL history may take.
pub const CONNECT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long any one call on a history may take (opening it included): a server that accepts
/// and never answers is an error, not a CI job that hangs until it is killed.
pub const ANSWER: std::time::Duration = std::time::Duration::from_secs(60);

/// `e` as a line naming the history.
fn named(name: &str, e: HistoryError) -> HistoryError {
    HistoryError(format!("history {name}: {}", e.0))
}

/// The statements that make a history found at `found` this schema's.
fn todo(found: Option<i64>, sqlite: bool, id: &str) -> Result<Vec<String>, HistoryError> {
    match found {
        None => {
            let mut all = schema::tables(id);
            all.push(format!("INSERT INTO loadlab_schema (version) VALUES ({SCHEMA})"));
            Ok(all)
        }
        Some(v) if v == SCHEMA => Ok(Vec::new()),
        Some(v) if v < SCHEMA => Ok(schema::upgrade(v, sqlite, id)),
        Some(v) => Err(HistoryError(format!("written by a loadlab with schema {v}; this one reads schema {SCHEMA}"))),
    }
}

/// Set when the process is asked to stop: an SQLite lock wait gives up at once.
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(super::shown("postgres://ci:secret@127.0.0.1:5432/labs"), "postgres://ci:***@127.0.0.1:5432/labs");
        assert_eq!(super::shown("postgresql://ci@db/labs"), "postgresql://ci@db/labs");
        assert_eq!(super::shown("labs/history.db"), "labs/history.db");
    }
}
