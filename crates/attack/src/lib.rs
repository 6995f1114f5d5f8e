//! Load generation. `targets` parses what to request, `schedule` says when (the open model's pure
//! pacing function and the rate grammar), the `client` crate prepares each target once, opens
//! connections and performs one exchange, `worker` sends requests over them, `pacer`, `coalesce` and `pool` drive the open model on the
//! event loops of `runtimes`, `run` is the whole attack, and `sink` hands every
//! [`results::Record`] to the caller's [`results::Consumer`] on its own thread. `lab` calls
//! [`run`] in-process.

mod coalesce;
mod config;
pub mod cpu;
mod mix;
mod pacer;
mod pool;
pub mod replay;
mod run;
mod runtimes;
pub mod schedule;
mod shard;
mod sink;
pub mod targets;
pub mod template;
mod worker;

/// The in-process test server, as `client::testing`.
#[cfg(feature = "testing")]
pub use client::testing;
pub use client::{fetch, ClientOptions, Fetched, Protocol, TlsOptions, DEFAULT_REDIRECTS, DEFAULT_TIMEOUT};
pub use coalesce::MAX_PACE_WINDOW;
pub use config::{
    AttackConfig, AttackError, Model, Summary, DEFAULT_MAX_WORKERS, DEFAULT_WORKERS, MAX_PACE_TICK, SEND_GRACE,
};
pub use replay::{ReplaySpec, ReplayStats};
pub use results::Gauges;
pub use run::run;
pub use schedule::{Rate, RateSpec, Schedule, MAX_RATE};
pub use shard::{Shard, MAX_SHARDS};
pub use targets::{
    parse_header, parse_targets, parse_url, target_from_url, Target, TargetDefaults, TargetError, TargetFormat,
};
