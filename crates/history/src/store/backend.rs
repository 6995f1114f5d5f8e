//! The one interface a history's database is used through. `sqlite` and `postgres` implement it
//! with the same statements (below, and `read`'s); `History` holds one of them and says which
//! history an error is of and how long a call may take.
//!
//! A trait with static dispatch (async functions, nothing boxed) over the two drivers rather
//! than one query layer such as sqlx: rusqlite is synchronous and bundles SQLite, tokio-postgres
//! is async and speaks TLS through the client's rustls settings; sqlx would bring its own SQLite
//! build, TLS stack and macros to a build whose time is watched (docs/DECISIONS.md), for eight
//! statements.

use super::read::Labs;
use super::{Added, HistoryError};
use crate::accept::Acceptance;
use crate::entry::Entry;

/// The advisory lock a PostgreSQL history's tables are created under ("loadlab" in ASCII).
pub(super) const SCHEMA_LOCK: i64 = 0x006c_6f61_646c_6162;

pub(super) const INSERT_LAB: &str = "INSERT INTO labs (uid, plan, started_unix_s, commit_sha, branch, tags, loadlab, \
     measurement, machine, machine_text, path, quick, recorded_unix_s) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING RETURNING id";
pub(super) const LAB_BY_UID: &str = "SELECT id FROM labs WHERE uid = $1";
pub(super) const INSERT_STEP: &str =
    "INSERT INTO steps (lab_id, step, target, load_key, label, repeat_no, not_counted) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
pub(super) const INSERT_FIGURE: &str = "INSERT INTO figures (lab_id, step, metric, value) VALUES ($1, $2, $3, $4)";
pub(super) const INSERT_ACCEPTED: &str =
    "INSERT INTO accepted (commit_sha, plan, metric, reason, who, accepted_unix_s) VALUES ($1, $2, $3, $4, $5, $6)";
pub(super) const SELECT_ACCEPTED: &str =
    "SELECT commit_sha, plan, metric, reason, who, accepted_unix_s FROM accepted ORDER BY accepted_unix_s, id";
pub(super) const SCHEMA_VERSION: &str = "SELECT MAX(version) FROM loadlab_schema";
pub(super) const PLAN_AND_MACHINE: &str = "SELECT plan, machine FROM labs WHERE id = $1";
pub(super) const NEWEST: &str = "SELECT id FROM labs ORDER BY started_unix_s DESC, id DESC LIMIT 1";

/// A history's database.
pub(super) trait Backend {
    /// The schema's version; none in an empty database.
    async fn version(&self) -> Result<Option<i64>, HistoryError>;
    /// Creates the tables of an empty database or upgrades older ones (`super::todo`), under a
    /// lock, in one transaction.
    async fn bring_up_to_date(&mut self) -> Result<(), HistoryError>;
    /// Whether a lab could be added now.
    async fn check_writable(&mut self) -> Result<(), HistoryError>;
    /// Adds a lab with its steps and figures, in one transaction, unless its uid is there.
    async fn add(&mut self, e: &Entry, recorded_unix_s: i64) -> Result<Added, HistoryError>;
    async fn accept(&self, a: &Acceptance) -> Result<(), HistoryError>;
    /// Every acceptance, oldest first.
    async fn acceptances(&self) -> Result<Vec<Acceptance>, HistoryError>;
    /// Lab `id`'s plan and machine.
    async fn plan_and_machine(&self, id: i64) -> Result<Option<(String, String)>, HistoryError>;
    /// The newest lab's key.
    async fn newest(&self) -> Result<Option<i64>, HistoryError>;
    /// Runs `read`'s three statements (labs, steps, figures), each with its parameters, into
    /// `labs` as the rows come.
    async fn read(&self, statements: &[(String, Vec<String>); 3], labs: &mut Labs) -> Result<(), HistoryError>;
}
