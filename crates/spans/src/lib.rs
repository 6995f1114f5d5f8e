//! The spans a traced target records, received by the lab and joined to its requests: where the
//! tail's time went. Each request of a traced step carries a W3C `traceparent` whose trace id
//! gives back the request (`results::trace`); an instrumented service continues that trace and
//! exports its spans over OTLP/HTTP to the lab's receiver; the spans of the slowest requests are
//! set against the median ones by the self time of each span name.
//!
//! Modules, each using only those above it:
//! - `decode`: an OTLP/HTTP body (protobuf or JSON, gzip) as spans, bounded (pure);
//! - `store`: the spans kept by step and request, the rest counted;
//! - `tail`: the slowest requests against the median ones, by span name;
//! - `receiver`: the HTTP server exporters send to;
//! - `export`: the client half, loadlab's own span of each request sent to a collector.

mod decode;
mod export;
mod receiver;
mod store;
mod tail;

pub use decode::{spans, Encoding, Span, MAX_BODY, MAX_INFLATED, MAX_NAME};
pub use export::{ClientSpans, Exported, Pace, Target as ExportTarget, BATCH, END_WAIT};
pub use receiver::Receiver;
pub use store::{Collector, Counts, Kept, MAX_PER_LAB, MAX_PER_REQUEST};
pub use tail::{groups, tail, Bar, Group, NameTime, Tail, Waterfall, LISTED, MEDIAN_BAND, TAIL};
