//! Load generation. `targets` parses what to request, `schedule` says when (the open model's pure
//! pacing function and the rate grammar), `request` prepares each target once, `client` and
//! `lean` open connections and perform one exchange (`exchange`: what it produced, how it
//! failed), `worker` sends requests over them, `pacer`, `coalesce` and `pool` drive the open model on the
//! event loops of `runtimes`, `run` is the whole attack, and `sink` hands every
//! [`results::Record`] to the caller's [`results::Consumer`] on its own thread. `lab` calls
//! [`run`] in-process.

mod client;
mod coalesce;
mod config;
pub mod cpu;
mod decoded;
mod exchange;
mod h3;
mod lean;
mod mix;
mod pacer;
mod pool;
pub mod replay;
mod request;
mod run;
mod runtimes;
pub mod schedule;
mod shard;
mod sink;
pub mod targets;
pub mod template;
#[cfg(feature = "testing")]
pub mod testing;
mod text;
mod tls;
mod worker;

pub use client::{fetch, ClientOptions, Fetched, Protocol, DEFAULT_REDIRECTS, DEFAULT_TIMEOUT};
pub use coalesce::MAX_PACE_WINDOW;
pub use config::{
    AttackConfig, AttackError, Gauges, Model, Summary, DEFAULT_MAX_WORKERS, DEFAULT_WORKERS, MAX_PACE_TICK, SEND_GRACE,
};
pub use replay::{ReplaySpec, ReplayStats};
pub use run::run;
pub use schedule::{Rate, RateSpec, Schedule, MAX_RATE};
pub use shard::{Shard, MAX_SHARDS};
pub use targets::{
    parse_header, parse_targets, parse_url, target_from_url, Target, TargetDefaults, TargetError, TargetFormat,
};
pub use tls::TlsOptions;
