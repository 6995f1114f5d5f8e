//! Load generation. `targets` parses what to request, `schedule` says when (the open model's pure
//! pacing function), `client` opens connections and performs one exchange, `runner` drives the
//! open and closed models with workers, and `sink` streams every [`results::Record`] to the
//! results file on its own thread. [`run`] is the whole attack; `lab` calls it in-process.

mod client;
pub mod duration;
mod lean;
mod runner;
pub mod schedule;
mod sink;
pub mod targets;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;

pub use client::{fetch, ClientOptions, Fetched, Protocol, DEFAULT_REDIRECTS, DEFAULT_TIMEOUT};
pub use runner::{run, AttackConfig, AttackError, Model, Summary, DEFAULT_WORKERS};
pub use schedule::{Rate, Schedule};
pub use sink::SinkOptions;
pub use targets::{parse_header, parse_targets, parse_url, Target, TargetDefaults, TargetError, TargetFormat};
pub use tls::TlsOptions;
