//! The live view's flags, one group for every command that can serve it (`attack`, `lab run`,
//! `lab capacity`).

use std::time::Duration;

use clap::Args;

use super::values::duration;

/// The live view of a run.
#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// Serve a live view on HOST:PORT while the run goes: `/` a dashboard, `/metrics`
    /// Prometheus, `/api/snapshot` JSON, `/events` server-sent snapshots (port 0: any free port,
    /// printed).
    #[arg(long, value_name = "HOST:PORT")]
    pub live: Option<String>,
    /// Let --live listen on an address other hosts can reach.
    #[arg(long, requires = "live")]
    pub live_public: bool,
    /// Keep serving the live view this long after the run ends (for a last scrape).
    #[arg(long, requires = "live", default_value = "0s", value_parser = duration)]
    pub live_linger: Duration,
}
