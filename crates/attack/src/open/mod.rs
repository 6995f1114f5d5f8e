//! The open model: hits leave at the schedule's times whatever the target does. Each event-loop
//! thread's `pacer` walks its share of the schedule (exactly, or `coalesce`d near saturation)
//! and hands the hits to its `pool` of workers, the one idle last first (`handoff`). A replay is paced by the same parts, at the
//! log's times.

pub(crate) mod coalesce;
pub(crate) mod handoff;
pub(crate) mod pacer;
pub(crate) mod pool;

pub use coalesce::MAX_PACE_WINDOW;
pub(crate) use pool::{pace, pacers};
