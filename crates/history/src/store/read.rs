//! Reading labs back: only those a command asks for (filtered in SQL, on the indexes the schema
//! keeps), their steps and figures put in place as the rows come, a metric's name held once.

use std::collections::HashMap;
use std::sync::Arc;

use futures_core::Stream;

use super::rows::{lab_of, step_of};
use super::{named, postgres_error, sqlite_error, within, Db, History, HistoryError, Stored, ANSWER};

/// Which labs, steps and figures to read; none set: all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    pub plan: Option<String>,
    pub machine: Option<String>,
    pub branch: Option<String>,
    pub target: Option<String>,
    /// A metric's name, or `fn:` for every profiled function's.
    pub metric: Option<String>,
}

const LAB_COLUMNS: &str = "l.id, l.uid, l.plan, l.started_unix_s, l.commit_sha, l.branch, l.tags, l.loadlab, \
     l.measurement, l.machine, l.machine_text, l.path, l.quick";

/// A statement's conditions and the values of its parameters, numbered in order (`$1`...: both
/// databases bind them so).
#[derive(Clone, Default)]
struct Where {
    conditions: Vec<String>,
    values: Vec<String>,
}

impl Where {
    fn equal(&mut self, column: &str, value: Option<&String>) {
        if let Some(v) = value {
            self.values.push(v.clone());
            self.conditions.push(format!("{column} = ${}", self.values.len()));
        }
    }

    fn text(&self) -> String {
        if self.conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conditions.join(" AND "))
        }
    }
}

impl Filter {
    /// The statements that read labs, steps and figures, each with its parameters' values.
    fn statements(&self) -> [(String, Vec<String>); 3] {
        let mut labs = Where::default();
        labs.equal("l.plan", self.plan.as_ref());
        labs.equal("l.machine", self.machine.as_ref());
        labs.equal("l.branch", self.branch.as_ref());
        let mut steps = labs.clone();
        steps.equal("s.target", self.target.as_ref());
        let mut figures = labs.clone();
        match self.metric.as_deref() {
            Some(crate::entry::FUNCTION) => {
                figures.conditions.push(format!("f.metric LIKE '{}%'", crate::entry::FUNCTION));
            }
            other => figures.equal("f.metric", other.map(str::to_owned).as_ref()),
        }
        [
            (format!("SELECT {LAB_COLUMNS} FROM labs l{} ORDER BY l.started_unix_s, l.id", labs.text()), labs.values),
            (
                format!(
                    "SELECT s.lab_id, s.step, s.target, s.load_key, s.label, s.repeat_no, s.not_counted \
                     FROM steps s JOIN labs l ON l.id = s.lab_id{} ORDER BY s.lab_id, s.step",
                    steps.text()
                ),
                steps.values,
            ),
            (
                format!(
                    "SELECT f.lab_id, f.step, f.metric, f.value FROM figures f JOIN labs l ON l.id = f.lab_id{} \
                     ORDER BY f.lab_id, f.step, f.metric",
                    figures.text()
                ),
                figures.values,
            ),
        ]
    }
}

impl History {
    /// Every lab in the history with its steps and figures, oldest first.
    pub async fn labs(&self) -> Result<Vec<Stored>, HistoryError> {
        self.labs_where(&Filter::default()).await
    }

    /// The labs `filter` takes, oldest first, with the steps and figures it takes.
    pub async fn labs_where(&self, filter: &Filter) -> Result<Vec<Stored>, HistoryError> {
        within(ANSWER, "reading the labs", self.read(filter)).await.map_err(|e| named(&self.name, e))
    }

    /// What a check of lab `id` reads: the labs of its plan (on its machine, unless
    /// `any_machine`), with every figure.
    pub async fn labs_for_check(&self, id: i64, any_machine: bool) -> Result<Vec<Stored>, HistoryError> {
        let key = "SELECT plan, machine FROM labs WHERE id = $1";
        let found: Option<(String, String)> = match &self.db {
            Db::Sqlite(c) => {
                let mut st = c.prepare(key).map_err(sqlite_error)?;
                let mut rows = st.query([id]).map_err(sqlite_error)?;
                match rows.next().map_err(sqlite_error)? {
                    Some(r) => Some((r.get(0).map_err(sqlite_error)?, r.get(1).map_err(sqlite_error)?)),
                    None => None,
                }
            }
            Db::Postgres(c) => c.query_opt(key, &[&id]).await.map_err(postgres_error)?.map(|r| (r.get(0), r.get(1))),
        };
        let Some((plan, machine)) = found else { return Ok(Vec::new()) };
        let filter = Filter { plan: Some(plan), machine: (!any_machine).then_some(machine), ..Default::default() };
        self.labs_where(&filter).await
    }

    /// The newest lab's key (the last `labs` gives), none in an empty history.
    pub async fn newest(&self) -> Result<Option<i64>, HistoryError> {
        let sql = "SELECT id FROM labs ORDER BY started_unix_s DESC, id DESC LIMIT 1";
        let newest = async {
            match &self.db {
                Db::Sqlite(c) => {
                    let mut st = c.prepare(sql).map_err(sqlite_error)?;
                    let mut rows = st.query([]).map_err(sqlite_error)?;
                    rows.next().map_err(sqlite_error)?.map(|r| r.get(0)).transpose().map_err(sqlite_error)
                }
                Db::Postgres(c) => Ok(c.query_opt(sql, &[]).await.map_err(postgres_error)?.map(|r| r.get(0))),
            }
        };
        within(ANSWER, "reading the labs", newest).await.map_err(|e| named(&self.name, e))
    }

    async fn read(&self, filter: &Filter) -> Result<Vec<Stored>, HistoryError> {
        let [(labs_sql, labs_by), (steps_sql, steps_by), (figures_sql, figures_by)] = filter.statements();
        let mut labs = Labs::default();
        match &self.db {
            Db::Sqlite(c) => {
                let params = |values: &Vec<String>| rusqlite::params_from_iter(values.clone());
                let all = |sql: &str| c.prepare(sql).map_err(sqlite_error);
                let mut st = all(&labs_sql)?;
                let mut rows = st.query(params(&labs_by)).map_err(sqlite_error)?;
                while let Some(r) = rows.next().map_err(sqlite_error)? {
                    labs.labs.push(lab_of(r)?);
                }
                labs.index();
                let mut st = all(&steps_sql)?;
                let mut rows = st.query(params(&steps_by)).map_err(sqlite_error)?;
                while let Some(r) = rows.next().map_err(sqlite_error)? {
                    labs.step(step_of(r)?);
                }
                // Figure by figure, as read: 500,000 of them are not held twice.
                let mut st = all(&figures_sql)?;
                let mut rows = st.query(params(&figures_by)).map_err(sqlite_error)?;
                while let Some(r) = rows.next().map_err(sqlite_error)? {
                    let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(sqlite_error);
                    labs.figure(r.get(0).map_err(sqlite_error)?, text(1)?, text(2)?, r.get(3).map_err(sqlite_error)?);
                }
            }
            Db::Postgres(c) => {
                for r in c.query(&labs_sql, &pg_params(&labs_by)).await.map_err(postgres_error)? {
                    labs.labs.push(lab_of(&r)?);
                }
                labs.index();
                for r in c.query(&steps_sql, &pg_params(&steps_by)).await.map_err(postgres_error)? {
                    labs.step(step_of(&r)?);
                }
                let rows = c.query_raw(&figures_sql, figures_by.iter()).await.map_err(postgres_error)?;
                let mut rows = std::pin::pin!(rows);
                while let Some(r) = std::future::poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
                    let r = r.map_err(postgres_error)?;
                    let text = |i| r.try_get::<_, &str>(i).map_err(postgres_error);
                    let (lab, value) = (r.try_get(0).map_err(postgres_error)?, r.try_get(3).map_err(postgres_error)?);
                    labs.figure(lab, text(1)?, text(2)?, value);
                }
            }
        }
        Ok(labs.labs)
    }
}

fn pg_params(values: &[String]) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)).collect()
}

/// Labs being read: their steps and figures put in place as they come.
#[derive(Default)]
struct Labs {
    labs: Vec<Stored>,
    /// A lab's place by its key.
    at: HashMap<i64, usize>,
    /// Each metric's name, once.
    names: HashMap<String, Arc<str>>,
}

impl Labs {
    fn index(&mut self) {
        self.at = self.labs.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
    }

    fn step(&mut self, (lab, step): (i64, crate::entry::Step)) {
        if let Some(&i) = self.at.get(&lab) {
            self.labs[i].1.steps.push(step);
        }
    }

    fn figure(&mut self, lab: i64, step: &str, metric: &str, value: f64) {
        let Some(&i) = self.at.get(&lab) else { return };
        let Some(s) = self.labs[i].1.steps.iter_mut().find(|s| s.id == step) else { return };
        let name = match self.names.get(metric) {
            Some(n) => Arc::clone(n),
            None => {
                let n: Arc<str> = metric.into();
                self.names.insert(metric.to_owned(), Arc::clone(&n));
                n
            }
        };
        s.values.push((name, value));
    }
}
