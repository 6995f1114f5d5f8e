//! A target's figures read from what it exports, where the lab cannot read its processes: a
//! Prometheus exporter's text exposition, or a Prometheus server's HTTP API, asked with the same
//! selectors.

pub mod answers;
pub mod counters;
pub mod exposition;
pub mod fetch;
pub mod host;
pub mod prometheus;
pub mod remote;
pub mod selector;

pub use remote::{Provenance, Reading, Remote, Source, Used};
pub use selector::Selector;
