//! What a run shows while it goes, beside its records: counters the generator keeps up to date
//! and any display (a progress bar, the live view, a lab) reads.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// Counters an attack keeps up to date while it runs, for whoever displays it.
#[derive(Debug, Default)]
pub struct Gauges {
    /// Requests sent and not yet answered.
    pub in_flight: AtomicU64,
    /// Requests sent so far.
    pub sent: AtomicU64,
    /// Most requests in flight at once.
    pub peak_in_flight: AtomicU64,
    /// Scheduled requests dropped because they could not be sent by the schedule's end.
    pub not_sent: AtomicU64,
    /// Response bodies' decoded size (`--compressed`).
    pub decoded_bytes_in: AtomicU64,
    /// Open model: hits that found no idle worker while the thread's workers were at its share
    /// of the cap, all busy with the target ...
    pub waits_for_target: AtomicU64,
    /// ... or while the event-loop thread itself was saturated: the generator is the limit.
    pub waits_for_generator: AtomicU64,
    /// Connections that took `attack::SLOW_CONNECT` (900 ms) or longer to open (a SYN retransmitted:
    /// the target's accept queue was full), and the longest open, µs.
    pub slow_connects: AtomicU64,
    pub connect_max_us: AtomicU64,
    /// The generator's own stalls so far, as each pacer closed them (merged at the run's end).
    pub stalls: Mutex<Vec<crate::Stall>>,
}
