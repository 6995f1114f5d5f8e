//! Load generation. `targets` parses what to request, `schedule` says when (the open model's pure
//! pacing function and the rate grammar), the `client` crate prepares each target once, opens
//! connections and performs one exchange, and `worker` sends requests over them. Three models
//! drive the workers on the event loops of `runtimes`: `open` (paced hits, whatever the target
//! does), `closed` (connections sending back to back) and `replay` (a log's requests at its
//! times). `run` is the whole attack, and `sink` hands every [`results::Record`] to the
//! caller's [`results::Consumer`] on its own thread. `lab` calls [`run`] in-process.

mod accept;
mod closed;
mod config;
pub mod cpu;
mod mix;
mod open;
pub mod replay;
mod run;
mod runtimes;
pub mod schedule;
mod settings;
mod shard;
mod sink;
pub mod targets;
pub mod template;
mod worker;

/// The in-process test server, as `client::testing`.
#[cfg(feature = "testing")]
pub use client::testing;
pub use client::{fetch, ClientOptions, Fetched, Protocol, TlsOptions, DEFAULT_REDIRECTS, DEFAULT_TIMEOUT};
pub use config::{
    AttackConfig, AttackError, Model, Summary, DEFAULT_MAX_WORKERS, DEFAULT_WORKERS, MAX_PACE_TICK, SEND_GRACE,
};
pub use open::MAX_PACE_WINDOW;
pub use replay::{ReplaySpec, ReplayStats};
pub use results::Gauges;
pub use run::run;
pub use schedule::{check_rate, Rate, RateSpec, Schedule, MAX_RATE};
pub use shard::{Shard, MAX_SHARDS};
pub use targets::{
    parse_header, parse_targets, parse_url, target_from_url, Target, TargetDefaults, TargetError, TargetFormat,
};
