//! Runs an attack: the open model (each event-loop thread paces its share of the schedule into
//! a pool of workers, see `pool`) or the closed model (connections x streams workers sending back
//! to back), all feeding one sink that hands records to the caller's consumer.
//!
//! Workers run on one single-threaded tokio runtime per core (`runtimes`), each owning its share
//! of the workers and their connections, as wrk and h2load run one event loop per thread: a
//! multi-thread runtime's work stealing woke idle threads on almost every request (futex calls
//! in strace).

use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use results::{Consumer, RunEnd, RunHeader};

use crate::config::{AttackConfig, AttackError, Model, Summary, SEND_GRACE};
use crate::open::pace;
use crate::runtimes::Runtimes;
use crate::sink::Sink;
use crate::targets::Target;
use crate::worker::Shared;
use client::Prepared;
use client::{Connector, Protocol};

/// Runs `config` to the end of its schedule or count (or until `stop`), handing every record to
/// `consumer` (any [`Consumer`]: the results file, charts, a display, or a tuple or `Vec` of
/// them), which comes back in the [`Summary`] with the run's metrics.
pub async fn run<C: Consumer + Send + 'static>(
    config: AttackConfig,
    consumer: C,
    stop: CancellationToken,
) -> Result<Summary<C>, AttackError> {
    let s = run_boxed(config, Box::new(consumer), stop).await?;
    let consumer = *s.consumer.into_any().downcast::<C>().expect("the consumer comes back as it was handed in");
    Ok(Summary { metrics: s.metrics, consumer, interrupted: s.interrupted, replay: s.replay })
}

/// A consumer behind a pointer that comes back as its own type at the end.
trait AnyConsumer: Consumer + Send {
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<C: Consumer + Send + 'static> AnyConsumer for C {
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

type Running = futures_core::future::BoxFuture<'static, Result<Summary<Box<dyn AnyConsumer>>, AttackError>>;

/// The run with one consumer type, as a boxed future made here. A crate that awaits another
/// crate's future type compiles its whole state machine again; behind a pointer the generator
/// (pacing, workers, connections, the sink) is compiled once, in this crate at its optimisation
/// level. A virtual call per record costs nanoseconds.
fn run_boxed(config: AttackConfig, consumer: Box<dyn AnyConsumer>, stop: CancellationToken) -> Running {
    Box::pin(run_with(config, consumer, stop))
}

async fn run_with(
    config: AttackConfig,
    consumer: Box<dyn AnyConsumer>,
    stop: CancellationToken,
) -> Result<Summary<Box<dyn AnyConsumer>>, AttackError> {
    config.validate().map_err(AttackError::Config)?;
    let connector = Connector::new(config.client.clone()).map_err(AttackError::Config)?;
    let weights: Vec<u32> = config.targets.iter().map(|t| t.weight).collect();
    let mix = crate::mix::Mix::new(&weights, config.seed).map_err(AttackError::Config)?;
    let (start, start_wall) = start_time(config.start_at, &stop).await;
    let start_unix_ns = start_wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let shard = config.shard;
    let threads = config.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let header = RunHeader {
        version: results::FORMAT_VERSION,
        name: config.name.clone(),
        start_unix_ns,
        settings: config.settings.clone(),
        targets: config.targets.iter().map(Target::label).collect(),
        run_plan: Some(plan(&config, threads)),
    };
    let (sink, tx) = Sink::start(consumer, header, config.flush_every, stop.clone())?;
    // The kernel's counters say only of this namespace's listeners: read for loopback targets.
    let overflows_before =
        config.targets.iter().all(|t| t.is_loopback()).then(crate::accept::listen_overflows).flatten();
    let slot_count = match &config.model {
        Model::Closed { .. } => config.sending_connections(),
        Model::Open { .. } | Model::Replay(_) => config.shared_connections(),
    };
    let shared = Arc::new(Shared {
        lean: config.client.protocol == Protocol::Http1,
        connector,
        prepared: config
            .targets
            .iter()
            .map(|t| Prepared::new(asking_gzip(t, config.client.compressed).parts()))
            .collect(),
        templated: config
            .targets
            .iter()
            .map(|t| t.template.is_some().then(|| asking_gzip(t, config.client.compressed)))
            .collect(),
        seed: config.seed,
        trace: config.trace,
        mix,
        start,
        requests_per_conn: config.requests_per_conn,
        slots: (0..slot_count).map(|_| tokio::sync::Mutex::new(None)).collect(),
        gauges: Arc::clone(&config.gauges),
        send_deadline: match &config.model {
            Model::Open { schedule } => Some(start + schedule.duration() + SEND_GRACE),
            // A replay cut at a length ends within it too, not when a far-behind queue drains.
            Model::Replay(spec) => spec.limit.map(|l| start + l + SEND_GRACE),
            Model::Closed { .. } => None,
        },
        sink: tx,
    });
    let heartbeat = (config.client.timeout / 2).min(Duration::from_secs(1));
    let machine_at_start = crate::cpu::machine();
    let runtimes = Runtimes::start(threads, heartbeat)?;
    let replay_stats = crate::replay::SharedStats::default();
    let interrupted = match &config.model {
        Model::Open { schedule } => pace(&shared, schedule, &config, &runtimes, &stop).await,
        Model::Replay(spec) => {
            crate::replay::pace::replay(&shared, spec, &config, &runtimes, &replay_stats, &stop).await
        }
        Model::Closed { streams, requests, duration } => {
            let connections = config.sending_connections();
            crate::closed::run(&shared, (connections, *streams), *requests, *duration, shard, &runtimes, &stop).await;
            false
        }
    };
    let mut cpu = tokio::task::spawn_blocking(move || runtimes.stop()).await.unwrap_or_default();
    cpu.machine_idle = crate::cpu::idle_share(machine_at_start, crate::cpu::machine());
    drop(shared);
    let interrupted = interrupted || stop.is_cancelled();
    let g = &config.gauges;
    let end = RunEnd {
        not_sent: g.not_sent.load(Ordering::Relaxed),
        asked_rate: match &config.model {
            Model::Open { schedule } => {
                Some(shard.hits_of(schedule.total_hits()) as f64 / schedule.duration().as_secs_f64().max(1e-9))
            }
            Model::Replay(_) => {
                let s = replay_stats.lock().unwrap_or_else(|e| e.into_inner());
                Some(s.requests as f64 / s.schedule_s.max(1e-9))
            }
            Model::Closed { .. } => None,
        },
        peak_in_flight: g.peak_in_flight.load(Ordering::Relaxed),
        waits_for_target: g.waits_for_target.load(Ordering::Relaxed),
        waits_for_generator: g.waits_for_generator.load(Ordering::Relaxed),
        slow_connects: g.slow_connects.load(Ordering::Relaxed),
        connect_max_us: g.connect_max_us.load(Ordering::Relaxed),
        listen_overflows: overflows_before.zip(crate::accept::listen_overflows()).map(|(a, b)| b.saturating_sub(a)),
        stalls: results::merge_stalls(std::mem::take(&mut *g.stalls.lock().unwrap_or_else(|e| e.into_inner()))),
        decoded_bytes_in: config.client.compressed.then(|| g.decoded_bytes_in.load(Ordering::Relaxed)),
        in_flight_cap: match &config.model {
            Model::Open { .. } | Model::Replay(_) => Some(config.in_flight_cap() as u64),
            Model::Closed { streams, .. } => Some((config.sending_connections() * streams) as u64),
        },
        interrupted,
        generator_cpu: (cpu.threads > 0 && cpu.wall_us > 0).then_some(cpu),
        complete: true,
    };
    let (metrics, consumer) = tokio::task::spawn_blocking(move || sink.finish(end))
        .await
        .map_err(|e| AttackError::Io(std::io::Error::other(e)))??;
    let replay = matches!(config.model, Model::Replay(_))
        .then(|| replay_stats.lock().unwrap_or_else(|e| e.into_inner()).clone());
    if let Some(failed) = replay.as_ref().and_then(|r| r.failed.clone()) {
        return Err(AttackError::Config(failed));
    }
    Ok(Summary { metrics, consumer, interrupted, replay })
}

/// The schedule's start, as an instant and as wall-clock time. With `start_at` in the future it
/// waits for it (or for `stop`); in the past, the start lies back there and the overdue hits go
/// out at once, their lag recorded.
async fn start_time(start_at: Option<SystemTime>, stop: &CancellationToken) -> (Instant, SystemTime) {
    let Some(at) = start_at else { return (Instant::now(), SystemTime::now()) };
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => {}
            }
            let late = SystemTime::now().duration_since(at).unwrap_or_default();
            (Instant::now().checked_sub(late).unwrap_or_else(Instant::now), at)
        }
        Err(behind) => (Instant::now().checked_sub(behind.duration()).unwrap_or_else(Instant::now), at),
    }
}

/// With `--compressed`, a target that sets no Accept-Encoding asks for gzip (as Go's client
/// does, and so vegeta).
fn asking_gzip(t: &Target, compressed: bool) -> Target {
    let mut t = t.clone();
    if compressed && !t.headers.iter().any(|(k, _)| k == http::header::ACCEPT_ENCODING) {
        t.headers.push((http::header::ACCEPT_ENCODING, http::HeaderValue::from_static("gzip")));
    }
    t
}

/// What the run is asked to do, for its header: every reader's one source for the model, the
/// rate and steps, the pacing tick (lateness is judged past it), the protocol and the shard.
fn plan(config: &AttackConfig, threads: usize) -> results::RunPlan {
    let (open, rate, steps, window) = match &config.model {
        Model::Open { schedule } => (
            true,
            schedule.constant_rate(),
            schedule.rate_steps_asked().map(|(step, rates)| results::RateStepsPlan {
                step_us: step.as_micros() as u64,
                rates: rates.to_vec(),
            }),
            crate::open::pacers(config, schedule, threads).1,
        ),
        Model::Closed { .. } => (false, None, None, Duration::ZERO),
        Model::Replay(_) => (true, None, None, config.pace_window),
    };
    results::RunPlan {
        open,
        rate,
        steps,
        protocol: config.client.protocol.name().to_owned(),
        pace_tick_us: if open { config.pace_tick.as_micros() as u64 } else { 0 },
        pace_window_us: window.as_micros() as u64,
        shard: (!config.shard.is_whole()).then(|| config.shard.to_string()),
        run: config.run.clone(),
        imported_from: None,
        replay: match &config.model {
            Model::Replay(spec) => Some(spec.plan()),
            _ => None,
        },
        trace: config.trace.map(|k| k.text()),
    }
}
