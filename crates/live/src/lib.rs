//! A run watched while it happens. [`Live`] keeps what the records of the runs so far say (totals
//! by target and status, latency and lag histograms, downsampled chart series); [`LiveConsumer`]
//! feeds it from an attack; [`serve`] shows it over HTTP: `/metrics` (Prometheus text),
//! `/api/snapshot` (JSON), `/events` (the snapshot every second, server-sent events) and `/` (a
//! dashboard drawing the charts of `plot` from those events, with a lab's steps), and `/results/`,
//! the files a sharded run gathered (see [`Shelf`]).

mod page;
mod prometheus;
mod server;
mod shelf;
mod state;

pub use server::{bind, connection_cap, serve, LiveError};
pub use shelf::Shelf;
pub use state::{Live, LiveConsumer, StepView};
