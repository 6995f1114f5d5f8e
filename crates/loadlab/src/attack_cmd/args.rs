//! `attack`'s arguments, with its live view and its shards (`lab capacity` and `k8s job` share
//! some of these groups).

use std::time::Duration;

use attack::TargetFormat;
use clap::builder::TypedValueParser;
use clap::Args;

use super::load::LoadArgs;
use crate::args::client::{ClientArgs, RequestArgs};
use crate::args::live::LiveArgs;
use crate::args::values::{duration, encode_formats, positive_duration, start_time, target_formats, EncodeFormat};

#[derive(Args, Debug)]
pub struct AttackArgs {
    /// URL to request (else targets come from --targets or stdin).
    #[arg(conflicts_with = "targets")]
    pub url: Option<String>,
    /// Targets file (vegeta's http or json format); `-` for stdin.
    #[arg(long)]
    pub targets: Option<String>,
    /// Targets format.
    #[arg(long, default_value = "http", value_parser = target_formats())]
    pub format: TargetFormat,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Name of the run, recorded in the results.
    #[arg(long, default_value = "")]
    pub name: String,
    /// Results file; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,
    /// llr (loadlab's results), or vegeta's own: json (vegeta-json), for `| vegeta report` and
    /// `| vegeta plot`; or csv.
    #[arg(long, default_value = "llr", value_parser = encode_formats(), value_name = "FORMAT")]
    pub output_format: EncodeFormat,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Open model: workers started up front.
    #[arg(long, default_value_t = attack::DEFAULT_WORKERS, value_parser = clap::value_parser!(u64).range(1..=1_000_000).map(|n| n as usize))]
    pub workers: usize,
    /// Open model: most requests in flight at once, and so most HTTP/1.1 connections (default
    /// 1024). Sends that find every worker busy wait, measured from their scheduled time.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000).map(|n| n as usize))]
    pub max_workers: Option<usize>,
    /// Open model: send the hits due within each tick together at its end (e.g. 1ms as oha
    /// paces, 10ms as h2load --rps). Fewer wake-ups per request, for up to one tick of lag,
    /// which latencies (counted from the schedule) include. 0 sends each hit at its time.
    #[arg(long, default_value = "0s", value_parser = duration)]
    pub pace_tick: Duration,
    /// Open model without --pace-tick: while a thread is nearly saturated (85% busy), sends
    /// due within four hits' gap of each other leave on one wake-up, when that gap is within
    /// this window (from 16,000/s per thread with 250us), each late by at most the gap: a
    /// quarter less CPU at 30,000-60,000/s. A thread with time to spare sends every hit at its
    /// own time; 0 (the default) always does.
    #[arg(long, default_value = "0s", value_parser = duration)]
    pub pace_window: Duration,
    /// Where weighted targets start in their cycle: the same seed gives the same sequence of
    /// targets.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Send a W3C `traceparent` (version 00, sampled) on every request, each its own trace id:
    /// made from the run's key and the request's number (kept in the results file's header), so
    /// `encode --to json` gives each request's `trace_id` and the target's spans join to it. The key comes from --seed when
    /// given (the same seed, the same ids), else from the run a sharded attack's workers share,
    /// else at random.
    #[arg(long)]
    pub traces: bool,
    /// Export loadlab's own client span of each request over OTLP/HTTP (protobuf) to this
    /// collector (a base URL gets /v1/traces; headers from OTEL_EXPORTER_OTLP_HEADERS), each the
    /// parent of the target's span: the trace in your backend shows the time on the wire beside
    /// the server's. Implies --traces. A batch the collector is too slow for is dropped and
    /// counted, never holding the load back.
    #[arg(long, value_name = "URL")]
    pub otlp_export: Option<String>,

    /// Close and reopen each connection after this many requests.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests_per_conn: Option<u64>,

    #[command(flatten)]
    pub client: ClientArgs,
}

/// One worker of an attack run by many, and how the workers start together.
#[derive(Args, Debug, Clone)]
pub struct ShardArgs {
    /// Run worker I of N of one attack: hits I, I+N ... of the schedule at their global times, or
    /// its share of --connections and --requests. The workers' files report as one run.
    #[arg(long, value_name = "I/N", value_parser = |s: &str| s.parse::<attack::Shard>(), conflicts_with = "shards")]
    pub shard: Option<attack::Shard>,
    /// Run worker $JOB_COMPLETION_INDEX of N (a pod of a Kubernetes Indexed Job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=attack::MAX_SHARDS))]
    pub shards: Option<u64>,
    /// Start the schedule at this time, the same for every worker: RFC 3339
    /// (2026-11-23T10:00:00Z) or Unix seconds.
    #[arg(long, value_parser = start_time, conflicts_with = "barrier")]
    pub start_at: Option<std::time::SystemTime>,
    /// Start together: worker 0 listens on HOST:PORT, the others connect to it, and once all are
    /// there worker 0 hands out a start time a second ahead.
    #[arg(long, value_name = "HOST:PORT")]
    pub barrier: Option<String>,
    /// How long the barrier waits for every worker (and, with --collect, worker 0 for their
    /// results after its own run).
    #[arg(long, default_value = "5m", value_parser = positive_duration)]
    pub barrier_timeout: Duration,
    /// Gather the results on worker 0, for workers with no shared disk: the others send it their
    /// --output file when done; it writes them beside its own and, with --live, serves them at
    /// /results/ (for `loadlab k8s collect`) until they are fetched or --live-linger ends.
    #[arg(long, requires = "barrier")]
    pub collect: bool,
}
