//! What an attack is asked to do, and what it leaves.

use results::Gauges;
use std::sync::Arc;
use std::time::Duration;

use results::Metrics;

use crate::schedule::Schedule;
use crate::targets::Target;
use client::{ClientOptions, Protocol};

/// vegeta's initial worker count.
pub const DEFAULT_WORKERS: usize = 10;
/// The open model's cap on requests in flight (and so on HTTP/1.1 connections) when none is
/// given. Unbounded workers turn any stall into a connection storm (vegeta's default: 200,000
/// connections and "too many open files" at 60,000/s against one nginx); 1,024 holds every rate
/// one core can send against a fast server, and 1,000/s against a target taking a second.
pub const DEFAULT_MAX_WORKERS: usize = 1024;
/// The longest `--pace-tick`: beyond it, batching is no longer pacing.
pub const MAX_PACE_TICK: Duration = Duration::from_secs(1);
/// How long after the schedule's end a late hit may still be sent; later ones are counted as
/// not sent, so an attack ends within its duration, this grace and its timeout.
pub const SEND_GRACE: Duration = Duration::from_secs(1);

/// How load is offered: the one type naming the load models, which `attack`'s flags and a lab
/// step's point both make. The connections that carry it are [`AttackConfig::connections`],
/// whatever the model.
#[derive(Clone, Debug)]
pub enum Model {
    /// Requests at scheduled times, whatever the server does.
    Open { schedule: Schedule },
    /// `connections` x `streams` workers, each sending its next request when its last is
    /// answered, for `requests` in all or for `duration`.
    Closed { streams: usize, requests: Option<u64>, duration: Option<Duration> },
    /// An access log's requests at their recorded times (an open model whose schedule is the
    /// log's; its length is the spec's `limit`).
    Replay(crate::replay::ReplaySpec),
}

/// Everything an attack needs.
#[derive(Clone, Debug)]
pub struct AttackConfig {
    pub name: String,
    pub targets: Vec<Target>,
    pub model: Model,
    pub client: ClientOptions,
    /// Open model: workers started up front, and the cap on requests in flight (each worker
    /// owns at most one HTTP/1.1 connection); `None` is [`DEFAULT_MAX_WORKERS`].
    pub workers: usize,
    pub max_workers: Option<usize>,
    /// `--connections`. Closed model: the connections sending (needed). Open model and replay:
    /// over HTTP/1.1, where a connection carries one request at a time, a bound on the requests
    /// in flight beside `max_workers`; over HTTP/2, h2c and HTTP/3, the connections the workers
    /// share. Read with the protocol when the attack runs ([`AttackConfig::in_flight_cap`],
    /// [`AttackConfig::shared_connections`]), so fields may be set in any order.
    pub connections: Option<usize>,
    /// Open model: send the hits due within each tick of this length together, at its end
    /// (`--pace-tick`); zero sends each hit at its own time. Fewer wake-ups per request, for up
    /// to one tick of lag, which latencies (counted from the schedule) include.
    pub pace_tick: Duration,
    /// Open model without a tick: the widest window within which sends are coalesced at high
    /// rates while the pacer's thread is nearly saturated (`--pace-window`, e.g.
    /// [`crate::MAX_PACE_WINDOW`]); zero (the default) sends every hit at its own time.
    pub pace_window: Duration,
    /// Where weighted targets start in their cycle (`--seed`): the same seed, the same run.
    pub seed: u64,
    /// Each request carries a W3C `traceparent` made from this key and its sequence number
    /// (`--traces`; a lab's target with `traces = true`).
    pub trace: Option<results::trace::TraceKey>,
    /// Close and reopen a connection after this many requests.
    pub requests_per_conn: Option<u64>,
    /// Recorded in the results file's header as given.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Event-loop threads; `None` is one per available core.
    pub threads: Option<usize>,
    /// Live counters of the running attack (for a progress display or a live view).
    pub gauges: Arc<Gauges>,
    /// How often consumers are flushed (the results file, a display); at most this much of a
    /// killed attack's results is lost.
    pub flush_every: Duration,
    /// This worker's share when many run the attack together (`--shard I/N`).
    pub shard: crate::shard::Shard,
    /// The id every worker of a sharded run shares (from the barrier, or the `--start-at` time).
    pub run: Option<String>,
    /// When the schedule starts (a time shared by every worker of a sharded run); `None` is now.
    /// A worker that starts after it sends its overdue hits late, and its lag says so.
    pub start_at: Option<std::time::SystemTime>,
}

impl AttackConfig {
    pub fn new(targets: Vec<Target>, model: Model) -> AttackConfig {
        AttackConfig {
            name: String::new(),
            targets,
            model,
            client: ClientOptions::default(),
            workers: DEFAULT_WORKERS,
            max_workers: None,
            connections: None,
            pace_tick: Duration::ZERO,
            pace_window: Duration::ZERO,
            seed: 0,
            trace: None,
            requests_per_conn: None,
            settings: serde_json::Map::new(),
            threads: None,
            gauges: Arc::new(Gauges::default()),
            // Twice the promise (a killed attack loses at most a second): a flush that comes late
            // on a busy machine still keeps it (at once a second, one run in five lost 1.24 s).
            flush_every: Duration::from_millis(500),
            shard: crate::shard::Shard::default(),
            start_at: None,
            run: None,
        }
    }

    /// The same attack carried by `connections` (see [`AttackConfig::connections`]).
    pub fn with_connections(self, connections: usize) -> AttackConfig {
        AttackConfig { connections: Some(connections), ..self }
    }

    /// The closed model's connections sending (one when none was given: `validate` refuses it).
    pub fn sending_connections(&self) -> usize {
        self.connections.unwrap_or(1)
    }

    /// The open model's (and a replay's) cap on requests in flight: over HTTP/1.1 with
    /// `connections`, those (and no more than `max_workers` if given); else `max_workers`, or
    /// [`DEFAULT_MAX_WORKERS`]. One rule for the binary and the lab (the lab once opened 12
    /// connections where `attack` opened 4 for the same settings).
    pub fn in_flight_cap(&self) -> usize {
        match self.connections {
            Some(c) if self.client.protocol == Protocol::Http1 => self.max_workers.map_or(c, |m| m.min(c)),
            _ => self.max_workers.unwrap_or(DEFAULT_MAX_WORKERS),
        }
    }

    /// The connections the open model's workers share over a multiplexed protocol (1 unless
    /// `connections` says more); over HTTP/1.1 each worker has its own.
    pub fn shared_connections(&self) -> usize {
        match self.client.protocol {
            Protocol::Http1 => 1,
            _ => self.connections.unwrap_or(1).max(1),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if let Model::Replay(spec) = &self.model {
            spec.validate()?;
        }
        if self.targets.is_empty() {
            return Err("no targets".into());
        }
        if self.client.protocol == Protocol::Http3 {
            let plain = match &self.model {
                Model::Replay(spec) => (spec.base.scheme_str() != Some("https")).then(|| spec.base.to_string()),
                _ => self.targets.iter().find(|t| t.url.scheme_str() != Some("https")).map(|t| t.url.to_string()),
            };
            if let Some(url) = plain {
                return Err(format!("--http3 needs https URLs (QUIC is always encrypted): {url}"));
            }
        }
        if let Model::Closed { streams, requests, duration } = &self.model {
            let Some(connections) = self.connections else {
                return Err("a closed model needs --connections".into());
            };
            if connections == 0 || *streams == 0 {
                return Err("--connections and --streams must be at least 1".into());
            }
            if self.shard.share_of(connections as u64) == 0 {
                return Err(format!(
                    "shard {} has no connection: {connections} connections for {} workers",
                    self.shard, self.shard.count
                ));
            }
            if *streams > 1 && self.client.protocol == Protocol::Http1 {
                return Err("--streams above 1 needs HTTP/2 or HTTP/3 (--http2, --h2c or --http3)".into());
            }
            if requests.is_none() && duration.is_none() {
                return Err("a closed model needs --requests or --duration".into());
            }
        }
        if self.max_workers == Some(0) {
            return Err("--max-workers must be at least 1".into());
        }
        if self.pace_tick > MAX_PACE_TICK {
            return Err(format!("--pace-tick must be at most {}ms", MAX_PACE_TICK.as_millis()));
        }
        if self.pace_window > MAX_PACE_TICK {
            return Err(format!("--pace-window must be at most {}ms", MAX_PACE_TICK.as_millis()));
        }
        if !self.pace_tick.is_zero() && matches!(self.model, Model::Closed { .. }) {
            return Err("--pace-tick paces an open model: it needs --rate or --rate-steps".into());
        }
        if self.requests_per_conn == Some(0) {
            return Err("--requests-per-conn must be at least 1".into());
        }
        Ok(())
    }
}

/// What an attack leaves besides what its consumers took: the run's metrics, and the consumer.
#[derive(Debug)]
pub struct Summary<C> {
    /// Its metrics, the run's end (not sent, peak in flight ...) included.
    pub metrics: Metrics,
    pub consumer: C,
    /// Whether it was stopped before its schedule or count ran out.
    pub interrupted: bool,
    /// What a replay read (lines, requests, skipped lines).
    pub replay: Option<crate::replay::ReplayStats>,
}

/// A failed set-up (bad settings, unwritable output).
#[derive(Debug, thiserror::Error)]
pub enum AttackError {
    #[error("{0}")]
    Config(String),
    #[error("writing results: {0}")]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_mean_what_the_protocol_makes_of_them() {
        let open = Model::Open { schedule: Schedule::constant(10.0, Duration::from_secs(1)) };
        let mut c =
            AttackConfig::new(vec![Target::new(Default::default(), "http://127.0.0.1:1/".parse().unwrap())], open);
        assert_eq!((c.in_flight_cap(), c.shared_connections()), (DEFAULT_MAX_WORKERS, 1));
        // HTTP/1.1: one request per connection, so connections bound what is in flight, past
        // the default cap too, and below a cap that was given.
        c.connections = Some(5000);
        assert_eq!((c.in_flight_cap(), c.shared_connections()), (5000, 1));
        c.max_workers = Some(300);
        assert_eq!(c.in_flight_cap(), 300);
        // Multiplexed: the workers share the connections; the cap is the workers'.
        for p in [Protocol::Http2, Protocol::H2c, Protocol::Http3] {
            c.client.protocol = p;
            assert_eq!((c.in_flight_cap(), c.shared_connections()), (300, 5000), "{p:?}");
        }
    }
}
