//! Where a history is kept: an SQLite file (created on first use; nothing to install or
//! start) or, for a team, a PostgreSQL database (`postgres://...`). One schema and the same
//! statements for both (only the key column's type differs), one interface (`backend`) that
//! `sqlite` and `postgres` implement; `History` names the history in every error and bounds
//! every call.

use crate::accept::Acceptance;
use crate::entry::Entry;

mod backend;
mod postgres;
mod read;
mod rows;
mod schema;
mod sqlite;
mod tls;

use backend::Backend;
use postgres::postgres_error;
pub use read::Filter;
use read::Labs;
pub use schema::{tables_of_schema_2, SCHEMA};
use sqlite::sqlite_error;
pub use sqlite::stop_waiting;

/// What went wrong with a history, in one line that names it (its password masked).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HistoryError(pub String);

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

/// `$call` on whichever database `$db` is: the one place the two meet.
macro_rules! on {
    ($db:expr, $c:ident => $call:expr) => {
        match $db {
            Db::Sqlite($c) => $call,
            Db::Postgres($c) => $call,
        }
    };
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
        // A reader must not write a schema into an empty file meant as something else (a
        // writer may: another writer may be creating the history this moment).
        if !is_postgres(spec) && std::fs::metadata(spec).is_ok_and(|m| m.is_file() && m.len() == 0) {
            return Err(HistoryError(format!(
                "history {spec}: an empty file, not a history (a history is created by recording a lab into it)"
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
            Db::Postgres(postgres::connect(spec).await?)
        } else {
            Db::Sqlite(sqlite::open(std::path::Path::new(spec))?)
        };
        let mut h = History { name: name.to_owned(), db };
        // Reads only when the schema is this one's: a read-only history can be read.
        if on!(&h.db, c => c.version().await)? != Some(SCHEMA) {
            on!(&mut h.db, c => c.bring_up_to_date().await)?;
        }
        Ok(h)
    }

    /// Whether a lab could be added now (a read-only file, a role without INSERT): asked before
    /// a lab runs, so that it does not run for an hour and then fail to record.
    pub async fn check_writable(&mut self) -> Result<(), HistoryError> {
        let check = on!(&mut self.db, c => within(ANSWER, "checking it can be written", c.check_writable()).await);
        check.map_err(|e| named(&self.name, e))
    }

    /// Adds a lab with its steps, in one transaction, once it is admitted
    /// ([`Entry::admissible`]); a lab of a known id adds nothing (`recording::record` says
    /// whether it is the same lab).
    pub async fn add(&mut self, e: &Entry) -> Result<Added, HistoryError> {
        e.admissible().map_err(|r| HistoryError(format!("lab {} refused: {r}", crate::admit::plain(&e.path))))?;
        let recorded = chrono::Utc::now().timestamp();
        let added = on!(&mut self.db, c => within(ANSWER, "adding the lab", c.add(e, recorded)).await);
        added.map_err(|e| named(&self.name, e))
    }

    /// Records that a change was accepted.
    pub async fn accept(&mut self, a: &Acceptance) -> Result<(), HistoryError> {
        let done = on!(&self.db, c => within(ANSWER, "recording the acceptance", c.accept(a)).await);
        done.map_err(|e| named(&self.name, e))
    }

    /// Every acceptance, oldest first.
    pub async fn acceptances(&self) -> Result<Vec<Acceptance>, HistoryError> {
        let all = on!(&self.db, c => within(ANSWER, "reading the acceptances", c.acceptances()).await);
        all.map_err(|e| named(&self.name, e))
    }

    /// Every lab in the history with its steps and figures, oldest first.
    pub async fn labs(&self) -> Result<Vec<Stored>, HistoryError> {
        self.labs_where(&Filter::default()).await
    }

    /// The labs `filter` takes, oldest first, with the steps and figures it takes.
    pub async fn labs_where(&self, filter: &Filter) -> Result<Vec<Stored>, HistoryError> {
        let statements = filter.statements();
        let mut labs = Labs::default();
        let read = on!(&self.db, c => within(ANSWER, "reading the labs", c.read(&statements, &mut labs)).await);
        read.map_err(|e| named(&self.name, e))?;
        Ok(labs.into_labs())
    }

    /// What a check of lab `id` reads: the labs of its plan (on its machine, unless
    /// `any_machine`), with every figure.
    pub async fn labs_for_check(&self, id: i64, any_machine: bool) -> Result<Vec<Stored>, HistoryError> {
        let found = on!(&self.db, c => within(ANSWER, "reading the labs", c.plan_and_machine(id)).await);
        let Some((plan, machine)) = found.map_err(|e| named(&self.name, e))? else { return Ok(Vec::new()) };
        let filter = Filter { plan: Some(plan), machine: (!any_machine).then_some(machine), ..Default::default() };
        self.labs_where(&filter).await
    }

    /// The newest lab's key (the last `labs` gives), none in an empty history.
    pub async fn newest(&self) -> Result<Option<i64>, HistoryError> {
        let newest = on!(&self.db, c => within(ANSWER, "reading the labs", c.newest()).await);
        newest.map_err(|e| named(&self.name, e))
    }
}

/// How long connecting to a PostgreSQL history may take.
pub(crate) const CONNECT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long any one call on a history may take (opening it included): a server that accepts
/// and never answers is an error, not a CI job that hangs until it is killed.
pub(crate) const ANSWER: std::time::Duration = std::time::Duration::from_secs(60);

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
