//! A team's history in a PostgreSQL database (`postgres://...`), over TLS or not (`tls`).

use futures_core::Stream;
use tokio_postgres::Client;

use super::backend::{
    Backend, INSERT_ACCEPTED, INSERT_FIGURE, INSERT_LAB, INSERT_STEP, LAB_BY_UID, NEWEST, PLAN_AND_MACHINE,
    SCHEMA_LOCK, SCHEMA_VERSION, SELECT_ACCEPTED,
};
use super::read::Labs;
use super::rows::{acceptance_of, lab_of, step_of};
use super::{tls, todo, within, Added, HistoryError, CONNECT};
use crate::accept::Acceptance;
use crate::entry::Entry;

pub(super) fn postgres_error(e: tokio_postgres::Error) -> HistoryError {
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
             them, and it is not in sslrootcert: give that certificate itself as sslrootcert=FILE, \
             or encrypt without checking it with sslmode=require)"
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

/// Connects to the database at `spec` (libpq's `sslmode` and `sslrootcert` read from it).
pub(super) async fn connect(spec: &str) -> Result<Client, HistoryError> {
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
                let (client, connection) = config.connect(tokio_postgres::NoTls).await.map_err(postgres_error)?;
                tokio::spawn(connection);
                Ok(client)
            }
        }
    };
    within(CONNECT, "connecting", connect).await
}

fn values(values: &[String]) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)).collect()
}

impl Backend for Client {
    async fn version(&self) -> Result<Option<i64>, HistoryError> {
        let exists: bool = self
            .query_one("SELECT to_regclass('loadlab_schema') IS NOT NULL", &[])
            .await
            .map_err(postgres_error)?
            .get(0);
        if !exists {
            return Ok(None);
        }
        Ok(self.query_one(SCHEMA_VERSION, &[]).await.map_err(postgres_error)?.get(0))
    }

    async fn bring_up_to_date(&mut self) -> Result<(), HistoryError> {
        let tx = self.transaction().await.map_err(postgres_error)?;
        tx.query("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(postgres_error)?;
        tx.batch_execute(&super::schema::tables("BIGSERIAL PRIMARY KEY")[0]).await.map_err(postgres_error)?;
        let found: Option<i64> = tx.query_one(SCHEMA_VERSION, &[]).await.map_err(postgres_error)?.get(0);
        for statement in todo(found, false, "BIGSERIAL PRIMARY KEY")? {
            tx.batch_execute(&statement).await.map_err(postgres_error)?;
        }
        tx.commit().await.map_err(postgres_error)
    }

    async fn check_writable(&mut self) -> Result<(), HistoryError> {
        let may: bool = self
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

    async fn add(&mut self, e: &Entry, recorded_unix_s: i64) -> Result<Added, HistoryError> {
        let (measurement, quick) = (i64::from(e.measurement), i64::from(e.quick));
        let tx = self.transaction().await.map_err(postgres_error)?;
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
                    &recorded_unix_s,
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

    async fn accept(&self, a: &Acceptance) -> Result<(), HistoryError> {
        self.execute(INSERT_ACCEPTED, &[&a.commit, &a.plan, &a.metric, &a.reason, &a.who, &a.at_unix_s])
            .await
            .map(|_| ())
            .map_err(postgres_error)
    }

    async fn acceptances(&self) -> Result<Vec<Acceptance>, HistoryError> {
        self.query(SELECT_ACCEPTED, &[]).await.map_err(postgres_error)?.iter().map(acceptance_of).collect()
    }

    async fn plan_and_machine(&self, id: i64) -> Result<Option<(String, String)>, HistoryError> {
        Ok(self.query_opt(PLAN_AND_MACHINE, &[&id]).await.map_err(postgres_error)?.map(|r| (r.get(0), r.get(1))))
    }

    async fn newest(&self) -> Result<Option<i64>, HistoryError> {
        Ok(self.query_opt(NEWEST, &[]).await.map_err(postgres_error)?.map(|r| r.get(0)))
    }

    async fn read(&self, statements: &[(String, Vec<String>); 3], labs: &mut Labs) -> Result<(), HistoryError> {
        let [(labs_sql, labs_by), (steps_sql, steps_by), (figures_sql, figures_by)] = statements;
        for r in self.query(labs_sql, &values(labs_by)).await.map_err(postgres_error)? {
            labs.lab(lab_of(&r)?);
        }
        labs.index();
        for r in self.query(steps_sql, &values(steps_by)).await.map_err(postgres_error)? {
            labs.step(step_of(&r)?);
        }
        // Figure by figure, as the server sends them.
        let rows = self.query_raw(figures_sql, figures_by.iter()).await.map_err(postgres_error)?;
        let mut rows = std::pin::pin!(rows);
        while let Some(r) = std::future::poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
            let r = r.map_err(postgres_error)?;
            let text = |i| r.try_get::<_, &str>(i).map_err(postgres_error);
            let (lab, value) = (r.try_get(0).map_err(postgres_error)?, r.try_get(3).map_err(postgres_error)?);
            labs.figure(lab, text(1)?, text(2)?, value);
        }
        Ok(())
    }
}
