//! How `attack` sends: the flags of its model (a rate, steps of rates, a replay, or connections
//! back to back), read into the [`attack::Model`] a lab step makes too.

use std::time::Duration;

use attack::{Model, RateSpec};
use clap::builder::TypedValueParser;
use clap::Args;

use super::replay::ReplayArgs;
use crate::args::values::{duration, rate, rate_steps};

#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub replay: ReplayArgs,

    /// Open model: requests per second (N, N/s, N/m), or a ramp A..B with --ramp.
    #[arg(long, value_parser = rate, conflicts_with = "rate_steps")]
    pub rate: Option<RateSpec>,
    /// Length of the linear ramp of --rate A..B.
    #[arg(long, value_parser = duration, requires = "rate")]
    pub ramp: Option<Duration>,
    /// Open model in steps: RATE,RATE,...@STEP (e.g. 400,800,1000@60s).
    #[arg(long, value_parser = rate_steps)]
    pub rate_steps: Option<RateSpec>,
    /// How long to attack (e.g. 60s, 10m).
    #[arg(long, value_parser = duration)]
    pub duration: Option<Duration>,
    /// Closed model (without --rate): connections sending back to back. With --rate: over
    /// HTTP/1.1 the most connections (as --max-workers), over HTTP/2 the connections shared.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000).map(|n| n as usize))]
    pub connections: Option<usize>,
    /// Closed model over HTTP/2: requests in flight per connection.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000).map(|n| n as usize))]
    pub streams: usize,
    /// Closed model: total requests.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
}

impl LoadArgs {
    /// The load model these flags ask for (its connections are `connections`, whatever the
    /// model); the error names the flags at fault.
    pub fn model(&self) -> Result<Model, String> {
        Ok(if let Some(path) = &self.replay.replay {
            let url = self.replay.base_url.as_deref().unwrap_or_default();
            let base = attack::parse_url(url).map_err(|e| format!("--base-url: {e}"))?;
            let mut spec = attack::ReplaySpec::new(path.clone(), base);
            spec.speed = self.replay.speed;
            spec.loops = self.replay.loops;
            spec.from = self.replay.from;
            spec.to = self.replay.to;
            spec.strict = self.replay.strict;
            spec.limit = self.duration;
            Model::Replay(spec)
        } else if let Some(steps) = &self.rate_steps {
            Model::Open { schedule: steps.schedule(self.duration, None).map_err(|e| format!("--rate-steps: {e}"))? }
        } else if let Some(r) = &self.rate {
            if self.duration.is_none() && matches!(r, RateSpec::Constant(_)) {
                return Err("--rate needs --duration (every attack is bounded)".into());
            }
            Model::Open { schedule: r.schedule(self.duration, self.ramp).map_err(|e| format!("--rate: {e}"))? }
        } else if self.connections.is_some() {
            if self.requests.is_none() && self.duration.is_none() {
                return Err("--connections needs --requests or --duration (every attack is bounded)".into());
            }
            Model::Closed { streams: self.streams, requests: self.requests, duration: self.duration }
        } else {
            return Err("give --rate or --rate-steps (open model) or --connections (closed model)".into());
        })
    }

    /// The rate flags as given, for the results file's header (a ramp is in no schedule's record).
    pub fn rate_as_given(&self) -> serde_json::Map<String, serde_json::Value> {
        let text = |d: Duration| results::duration::go_string(d.as_nanos() as u64);
        let given = [
            ("rate", self.rate.as_ref().map(RateSpec::to_string)),
            ("ramp", self.ramp.map(text)),
            ("rate_steps", self.rate_steps.as_ref().map(RateSpec::to_string)),
        ];
        given.into_iter().filter_map(|(k, v)| Some((k.to_owned(), v?.into()))).collect()
    }
}
