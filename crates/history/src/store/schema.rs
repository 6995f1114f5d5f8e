//! The tables of a history, and how a history written by an earlier loadlab is brought up to
//! this one's: in the transaction that opens it, so a failed upgrade leaves it as it was.
//!
//! Versions: 1, the first; 2 added `accepted` (`history accept`); 3 gave each lab an identity
//! of its own (`uid`) in place of the key plan + start second + machine, which two labs started
//! in the same second shared, and the indexes a filtered read uses.

/// The schema's version, kept in the database: a history written by a later loadlab is refused,
/// an earlier one is brought up to this one.
pub const SCHEMA: i64 = 3;

/// The statements that create an empty history; `id` is the key column's type.
pub(crate) fn tables(id: &str) -> Vec<String> {
    let mut all = vec![
        "CREATE TABLE IF NOT EXISTS loadlab_schema (version BIGINT NOT NULL)".to_owned(),
        labs("labs", id),
        "CREATE TABLE IF NOT EXISTS steps (lab_id BIGINT NOT NULL REFERENCES labs (id), step TEXT NOT NULL, \
         target TEXT NOT NULL, load_key TEXT NOT NULL, label TEXT NOT NULL, repeat_no BIGINT NOT NULL, \
         not_counted TEXT, PRIMARY KEY (lab_id, step))"
            .into(),
        "CREATE TABLE IF NOT EXISTS figures (lab_id BIGINT NOT NULL, step TEXT NOT NULL, metric TEXT NOT NULL, \
         value DOUBLE PRECISION NOT NULL, PRIMARY KEY (lab_id, step, metric), \
         FOREIGN KEY (lab_id, step) REFERENCES steps (lab_id, step))"
            .into(),
        accepted(id),
    ];
    all.extend(indexes());
    all
}

/// The labs table under `name`.
fn labs(name: &str, id: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {name} (id {id}, uid TEXT NOT NULL UNIQUE, plan TEXT NOT NULL, \
         started_unix_s BIGINT NOT NULL, commit_sha TEXT, branch TEXT, tags TEXT NOT NULL, loadlab TEXT NOT NULL, \
         measurement BIGINT NOT NULL, machine TEXT NOT NULL, machine_text TEXT NOT NULL, path TEXT NOT NULL, \
         quick BIGINT NOT NULL, recorded_unix_s BIGINT NOT NULL)"
    )
}

fn accepted(id: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS accepted (id {id}, commit_sha TEXT NOT NULL, plan TEXT, metric TEXT, \
         reason TEXT NOT NULL, who TEXT NOT NULL, accepted_unix_s BIGINT NOT NULL)"
    )
}

/// What a filtered read needs: labs of a plan in time order, a metric's figures.
fn indexes() -> Vec<String> {
    vec![
        "CREATE INDEX IF NOT EXISTS labs_by_time ON labs (started_unix_s)".into(),
        "CREATE INDEX IF NOT EXISTS labs_by_plan ON labs (plan, started_unix_s)".into(),
        "CREATE INDEX IF NOT EXISTS figures_by_metric ON figures (metric, lab_id)".into(),
    ]
}

/// The columns both layouts of `labs` share, in order.
const LAB_COLUMNS: &str = "id, plan, started_unix_s, commit_sha, branch, tags, loadlab, measurement, machine, \
     machine_text, path, quick, recorded_unix_s";

/// The uid a lab stored before schema 3 is given: the one [`crate::entry::uid`] gives its
/// folder, so adding that folder again still finds it.
const OLD_UID: &str = "'key:' || plan || '|' || started_unix_s || '|' || machine";

/// The statements that bring a history of version `from` up to [`SCHEMA`]. `sqlite` because
/// SQLite cannot drop a constraint: its labs table is copied into one without it.
pub(crate) fn upgrade(from: i64, sqlite: bool, id: &str) -> Vec<String> {
    let mut all = Vec::new();
    if from < 2 {
        all.push(accepted(id));
    }
    if from < 3 {
        if sqlite {
            // SQLite's own recipe for a changed table: a new one, the rows copied, the old one
            // dropped and the new one renamed (foreign keys are not enforced during it).
            all.push(labs("labs_next", id));
            all.push(format!("INSERT INTO labs_next ({LAB_COLUMNS}, uid) SELECT {LAB_COLUMNS}, {OLD_UID} FROM labs"));
            all.push("DROP TABLE labs".into());
            all.push("ALTER TABLE labs_next RENAME TO labs".into());
        } else {
            all.push("ALTER TABLE labs ADD COLUMN uid TEXT".into());
            all.push(format!("UPDATE labs SET uid = {OLD_UID}"));
            all.push("ALTER TABLE labs ALTER COLUMN uid SET NOT NULL".into());
            all.push("ALTER TABLE labs DROP CONSTRAINT IF EXISTS labs_plan_started_unix_s_machine_key".into());
            all.push("ALTER TABLE labs ADD CONSTRAINT labs_uid_key UNIQUE (uid)".into());
        }
        all.extend(indexes());
    }
    all.push(format!("UPDATE loadlab_schema SET version = {SCHEMA}"));
    all
}

/// The tables of schema 2, as a loadlab of that schema created them: for the test that opens
/// such a history.
#[doc(hidden)]
pub fn tables_of_schema_2(id: &str) -> Vec<String> {
    vec![
        "CREATE TABLE loadlab_schema (version BIGINT NOT NULL)".to_owned(),
        format!(
            "CREATE TABLE labs (id {id}, plan TEXT NOT NULL, started_unix_s BIGINT NOT NULL, \
             commit_sha TEXT, branch TEXT, tags TEXT NOT NULL, loadlab TEXT NOT NULL, measurement BIGINT NOT NULL, \
             machine TEXT NOT NULL, machine_text TEXT NOT NULL, path TEXT NOT NULL, quick BIGINT NOT NULL, \
             recorded_unix_s BIGINT NOT NULL, UNIQUE (plan, started_unix_s, machine))"
        ),
        "CREATE TABLE steps (lab_id BIGINT NOT NULL REFERENCES labs (id), step TEXT NOT NULL, \
         target TEXT NOT NULL, load_key TEXT NOT NULL, label TEXT NOT NULL, repeat_no BIGINT NOT NULL, \
         not_counted TEXT, PRIMARY KEY (lab_id, step))"
            .into(),
        "CREATE TABLE figures (lab_id BIGINT NOT NULL, step TEXT NOT NULL, metric TEXT NOT NULL, \
         value DOUBLE PRECISION NOT NULL, PRIMARY KEY (lab_id, step, metric), \
         FOREIGN KEY (lab_id, step) REFERENCES steps (lab_id, step))"
            .into(),
        "CREATE INDEX labs_by_time ON labs (started_unix_s)".into(),
        accepted(id),
        "INSERT INTO loadlab_schema (version) VALUES (2)".into(),
    ]
}
