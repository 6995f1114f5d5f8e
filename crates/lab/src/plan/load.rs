//! `[load]`: the steps' load, each field given as a list an axis, checked.

use std::path::Path;
use std::time::Duration;

use attack::Protocol;

use super::raw::{OneOrMany, RawLoad};
use super::{read_bounded, Doc, LoadSpec, PlanError, DEFAULT_DURATION, DEFAULT_PAUSE, MAX_BODY_BYTES};

impl Doc<'_> {
    pub(super) fn load(&self, l: RawLoad, dir: &Path, searching: bool) -> Result<LoadSpec, PlanError> {
        let rate = l.rate.map(OneOrMany::into_vec).unwrap_or_default();
        let rate = rate.iter().map(|r| self.rate("load.rate", r)).collect::<Result<Vec<_>, _>>()?;
        self.distinct("load.rate", &rate, |r| format!("{r} req/s"))?;
        let counts = |field: &str, v: Option<OneOrMany<i64>>, max: i64| -> Result<Vec<u64>, PlanError> {
            v.map(OneOrMany::into_vec).unwrap_or_default().into_iter().map(|n| self.positive(field, n, max)).collect()
        };
        let connections: Vec<usize> =
            counts("load.connections", l.connections, 1_000_000)?.into_iter().map(|n| n as usize).collect();
        self.distinct("load.connections", &connections, |c| c.to_string())?;
        let other_model = !rate.is_empty() || !connections.is_empty();
        let (replay, speed) = self.replay_load(l.replay.as_deref(), l.speed, dir, other_model, searching)?;
        if rate.is_empty() && connections.is_empty() && replay.is_none() && !searching {
            return Err(
                self.err("load", "give rate (open model) or connections (closed model), or a [capacity] search")
            );
        }
        let protocol = l
            .protocol
            .map(OneOrMany::into_vec)
            .unwrap_or_else(|| vec!["http1".into()])
            .iter()
            .map(|p| p.parse::<Protocol>().map_err(|e| self.err("load.protocol", e)))
            .collect::<Result<Vec<_>, _>>()?;
        self.distinct("load.protocol", &protocol, |p| p.to_string())?;
        let rpc = counts("load.requests_per_conn", l.requests_per_conn, i64::MAX)?;
        self.distinct("load.requests_per_conn", &rpc, |c| c.to_string())?;
        let requests_per_conn = if rpc.is_empty() { vec![None] } else { rpc.into_iter().map(Some).collect() };
        let streams = counts("load.streams", l.streams, 100_000)?;
        self.distinct("load.streams", &streams, |c| c.to_string())?;
        let streams = if streams.is_empty() { vec![1] } else { streams.into_iter().map(|n| n as usize).collect() };
        let body = match (l.body, l.body_file) {
            (Some(b), None) => Some(b.into_bytes()),
            (None, Some(f)) => Some(
                read_bounded(&dir.join(&f), MAX_BODY_BYTES)
                    .map_err(|e| self.err("load.body_file", format!("{f}: {e}")))?,
            ),
            (None, None) => None,
            _ => return Err(self.err("load.body", "body and body_file exclude each other")),
        };
        let mut defaults = attack::TargetDefaults { template_dir: dir.to_owned(), ..Default::default() };
        for h in &l.headers {
            defaults.headers.push(attack::parse_header(h).map_err(|e| self.err("load.headers", e))?);
        }
        // Templates in the headers and body are compiled now (their files read), so that a
        // mistake stops the plan before it starts anything.
        defaults.body = body.clone().map(bytes::Bytes::from);
        attack::target_from_url("GET", "http://127.0.0.1/", "load", &defaults).map_err(|e| {
            let field = if e.reason.starts_with("body:") { "load.body" } else { "load.headers" };
            self.err(field, e.reason)
        })?;
        let duration = self.duration("load.duration", l.duration.as_ref(), DEFAULT_DURATION)?;
        if duration.is_zero() {
            return Err(self.err("load.duration", "must be longer than 0"));
        }
        let timeout = self.duration("load.timeout", l.timeout.as_ref(), attack::DEFAULT_TIMEOUT)?;
        if timeout.is_zero() {
            return Err(self.err("load.timeout", "must be longer than 0"));
        }
        let pace_tick = self.duration("load.pace_tick", l.pace_tick.as_ref(), Duration::ZERO)?;
        if pace_tick > attack::MAX_PACE_TICK {
            return Err(self.err("load.pace_tick", format!("must be at most {:?}", attack::MAX_PACE_TICK)));
        }
        if !pace_tick.is_zero() && rate.is_empty() {
            return Err(self.err("load.pace_tick", "paces an open model: it needs load.rate"));
        }
        let placement = match l.placement.as_deref() {
            None => crate::plan::placement::Mode::default(),
            Some(p) => crate::plan::placement::Mode::parse(p).map_err(|e| self.err("load.placement", e))?,
        };
        Ok(LoadSpec {
            pace_tick,
            placement,
            replay,
            speed,
            rate,
            connections,
            protocol,
            requests_per_conn,
            streams,
            duration,
            warmup: self.duration("load.warmup", l.warmup.as_ref(), Duration::ZERO)?,
            repeats: l.repeats.map(|r| self.positive("load.repeats", r, 100)).transpose()?.unwrap_or(1) as u32,
            pause: self.duration("load.pause", l.pause.as_ref(), DEFAULT_PAUSE)?,
            method: l.method.unwrap_or_else(|| "GET".into()),
            headers: l.headers,
            body,
            template_dir: dir.to_owned(),
            timeout,
            max_workers: l
                .max_workers
                .map(|m| self.positive("load.max_workers", m, 1_000_000))
                .transpose()?
                .map(|m| m as usize),
        })
    }
}
