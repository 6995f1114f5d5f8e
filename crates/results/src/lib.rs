//! The contract between loadlab's subcommands: one [`Record`] per request, the `.llr` results file
//! that carries them ([`Writer`], [`Reader`]), and the [`Metrics`] every report is rendered from.
//!
//! Layout: `record` (the Result and the run header), `codec` (the file format, see its docs),
//! `consumer` (what takes records: the one interface of writers, metrics, charts and displays),
//! `metrics` (HDR histograms and counters that merge exactly), `interop` (vegeta's JSON and CSV),
//! `gauges` (what a run in progress shows beside its records).

mod codec;
mod consumer;
pub mod duration;
mod error;
pub mod files;
mod follow;
mod gauges;
pub mod interop;
mod limit;
mod metrics;
pub mod nan;
mod quiet;
mod rate_steps;
mod record;
mod run_plan;
mod shard_set;
mod stall;
pub mod text;
pub mod trace;
pub mod varint;

pub use codec::{Item, Reader, Writer, BLOCK_RECORDS, MAGIC};
pub use consumer::{feed, Consumer, Entry, LlrWriter, WithoutWarmup};
pub use error::{Error, ErrorKind};
pub use follow::{EndFlag, Follow, FOLLOW_IDLE};
pub use gauges::Gauges;
pub use limit::{Limit, GENERATOR_LAG_P99_US};
pub use metrics::{Metrics, SecondStats, LATE_SEND_US, LATE_SHARE_LIMIT};
pub use quiet::{HiddenStall, Quiet, QUIET_INTERVALS, QUIET_MIN_US};
pub use rate_steps::{ByRateStep, RateStep};
pub use record::{GeneratorCpu, Record, RunEnd, RunHeader, FORMAT_VERSION};
pub use run_plan::{RateStepsPlan, ReplayPlan, RunPlan};
pub use shard_set::{ShardSet, GIVEN_TWICE};
pub use stall::{longest as longest_stall, merge_stalls, Stall, MAX_STALLS};
