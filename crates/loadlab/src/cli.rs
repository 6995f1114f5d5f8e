//! Command-line definitions. Flag names follow vegeta's where vegeta has one. Values are typed
//! here (durations, rates, formats), so a bad value is refused by the parser with the flag's name,
//! and the commands receive what they use.

use std::path::PathBuf;
use std::time::Duration;

use attack::{RateSpec, TargetFormat};
use clap::builder::{PossibleValue, TypedValueParser};
use clap::{ArgAction, Args, Parser, Subcommand};
use report::chart::Chart;
use report::ReportType;

#[derive(Parser)]
#[command(name = "loadlab", version, about = "HTTP performance lab: load generator, reports, plots, origin simulator")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Send load and stream one result per request (.llr) to --output.
    Attack(Box<AttackArgs>),
    /// Summarise results files (stdin when none), merging them.
    Report(ReportArgs),
    /// Convert results to vegeta's JSON or CSV, or vegeta's results to .llr.
    Encode(EncodeArgs),
    /// Draw charts of results files: a self-contained HTML page, or SVG or PNG.
    Plot(PlotArgs),
    /// Kubernetes: render the manifests of a sharded attack (an Indexed Job).
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Run the origin simulator (Origin Simulator recipes and admin API).
    Origin(OriginArgs),
    /// A short lab: a rate ladder against an embedded origin simulator, with reports.
    Demo(DemoArgs),
    /// Experiments from a plan file: ladders, sweeps, A/B with repeats, capacity search, verdicts.
    #[command(subcommand)]
    Lab(LabCommand),
    /// A history of labs: list its series, add labs, show each series over commits with its
    /// change points, check a lab against the current level of its series.
    History(HistoryArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout, or with --dir write one page per subcommand
    /// (loadlab.1, loadlab-attack.1, loadlab-lab-run.1 ...), as `man loadlab-attack` reads them.
    Man(ManArgs),
}

/// vegeta's habit of single-dash long flags (`-rate 100`, `-http2=false`, `report -type json`):
/// a word after a single dash that names a long flag of the command becomes `--word`. Short
/// flags (`-H`, `-o`) and negative numbers are left alone. A boolean flag followed by `true` or
/// `false` as a word of its own is refused with why: Go's flag package (vegeta's) reads
/// `-http2 false` as `-http2` and stops at `false`, ignoring every flag after it, so a command
/// line written that way never did what it says.
pub fn vegeta_style(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    use clap::CommandFactory;
    let root = Cli::command();
    let mut cmd: Option<clap::Command> = None;
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.into_iter().enumerate() {
        let Some(s) = a.to_str().map(str::to_owned) else {
            out.push(a);
            continue;
        };
        if i > 0 && cmd.is_none() && !s.starts_with('-') {
            cmd = root.find_subcommand(&s).cloned();
        }
        let single = s.len() > 2
            && s.starts_with('-')
            && !s.starts_with("--")
            && s[1..2].chars().all(|c| c.is_ascii_alphabetic());
        if let Some(flag) = out.last().and_then(|f| f.to_str()).filter(|_| s == "true" || s == "false") {
            let name = flag.trim_start_matches('-');
            let boolean = |arg: &clap::Arg| {
                matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
                    || arg.get_possible_values().iter().any(|v| v.get_name() == "false")
            };
            let is_bool = flag.starts_with('-')
                && !flag.contains('=')
                && cmd
                    .as_ref()
                    .is_some_and(|c| c.get_arguments().any(|arg| arg.get_long() == Some(name) && boolean(arg)));
            if is_bool {
                return Err(format!(
                    "-{name} {s}: give booleans as -{name}={s}; vegeta reads this line as -{name}=true and ignores \
                     every flag after '{s}'"
                ));
            }
        }
        if single {
            let name = s[1..].split('=').next().unwrap_or_default();
            let known = cmd.as_ref().is_some_and(|c| c.get_arguments().any(|arg| arg.get_long() == Some(name)));
            if known {
                out.push(format!("-{s}").into());
                continue;
            }
        }
        out.push(a);
    }
    Ok(out)
}

/// A Go duration (`500ms`, `1.5s`, `1m30s`).
pub fn duration(s: &str) -> Result<Duration, String> {
    results::duration::parse(s)
}

/// A duration longer than zero.
/// A number that is one: `NaN` and `inf` parse as floats and are refused here.
pub(crate) fn finite(s: &str) -> Result<f64, String> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("{s:?} is not a finite number"))
}

pub(crate) fn positive_duration(s: &str) -> Result<Duration, String> {
    match duration(s)? {
        d if d.is_zero() => Err("must be longer than 0".into()),
        d => Ok(d),
    }
}

/// A size: `N`, `Nb`, `Nkb`, `Nmb` or `Ngb` (powers of 1024).
fn byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = [("gb", 1u64 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("b", 1)]
        .iter()
        .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n.to_owned(), *m)))
        .unwrap_or((t.clone(), 1));
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("bad size {s:?} (expected e.g. 512kb, 256mb or 2gb)"))
}

/// A rate for `--rate`: `N`, `N/s`, `N/m`, or a ramp `A..B`.
fn rate(s: &str) -> Result<RateSpec, String> {
    match s.parse()? {
        RateSpec::Steps(..) => Err(format!("bad rate {s:?}: steps go in --rate-steps")),
        r => Ok(r),
    }
}

/// Steps for `--rate-steps`: `R,R,...@STEP`.
fn rate_steps(s: &str) -> Result<RateSpec, String> {
    if !s.contains('@') {
        return Err(format!("{s:?}: expected RATE,RATE,...@STEP"));
    }
    s.parse()
}

/// A value parsed by its type's `FromStr` (whose message names what is wrong), with the names
/// clap offers in help and completions.
#[derive(Clone)]
pub struct Choice<T> {
    names: &'static [&'static str],
    parse: fn(&str) -> Result<T, String>,
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Choice<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_str().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8).with_cmd(cmd))?;
        (self.parse)(text).map_err(|e| {
            let mut err = clap::Error::raw(clap::error::ErrorKind::ValueValidation, e.clone()).with_cmd(cmd);
            if let Some(a) = arg {
                err.insert(
                    clap::error::ContextKind::InvalidArg,
                    clap::error::ContextValue::String(
                        a.get_long().map_or(a.get_id().to_string(), |l| format!("--{l}")),
                    ),
                );
            }
            err.insert(clap::error::ContextKind::Custom, clap::error::ContextValue::String(e));
            err
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|n| PossibleValue::new(*n))))
    }
}

fn target_formats() -> Choice<TargetFormat> {
    Choice { names: &["http", "json"], parse: |s| s.parse() }
}

fn report_types() -> Choice<ReportType> {
    Choice { names: &["text", "json", "hist[0,5ms,10ms]", "hdr"], parse: |s| s.parse() }
}

fn charts() -> Choice<Chart> {
    Choice { names: &["all", "latency", "status", "throughput", "hdr"], parse: |s| s.parse() }
}

/// What `encode` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeFormat {
    Llr,
    /// vegeta's JSON lines (with loadlab's ttfb and lag); `vegeta-json` is the same format.
    Json,
    Csv,
}

fn encode_formats() -> Choice<EncodeFormat> {
    Choice {
        names: &["llr", "json", "vegeta-json", "csv"],
        parse: |s| match s {
            "llr" => Ok(EncodeFormat::Llr),
            "json" | "vegeta-json" => Ok(EncodeFormat::Json),
            "csv" => Ok(EncodeFormat::Csv),
            _ => Err(format!("unknown format {s:?} (expected llr, json, vegeta-json or csv)")),
        },
    }
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

/// A start time: RFC 3339, or Unix seconds.
fn start_time(s: &str) -> Result<std::time::SystemTime, String> {
    let bad = || format!("bad time {s:?} (expected RFC 3339 like 2026-11-23T10:00:00Z, or Unix seconds)");
    if let Ok(secs) = s.trim().parse::<f64>() {
        if !(0.0..1e11).contains(&secs) {
            return Err(bad());
        }
        return Ok(std::time::UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    let t = chrono::DateTime::parse_from_rfc3339(s.trim()).map_err(|_| bad())?;
    let ns = t.timestamp_nanos_opt().filter(|n| *n >= 0).ok_or_else(bad)?;
    Ok(std::time::UNIX_EPOCH + Duration::from_nanos(ns as u64))
}

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

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every page into this folder (e.g. /usr/local/share/man/man1).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Directory for the results files.
    #[arg(long, default_value = "loadlab-demo")]
    pub out: PathBuf,
    /// Rates of the ladder, requests per second, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "200,400,800")]
    pub rates: Vec<f64>,
    /// Length of each step.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub step: Duration,
}

#[derive(Args, Debug)]
pub struct OriginArgs {
    /// Address to serve on (default 127.0.0.1:8080, or 127.0.0.1:$PORT).
    #[arg(long)]
    pub listen: Option<String>,
    /// Recipe file (an object or an array) loaded at start, as an upload would be: its routes
    /// take precedence, and the default `/*` route still answers every other path.
    #[arg(long)]
    pub recipe: Option<PathBuf>,
    /// Serve the admin API on this address (to any peer) instead of on --listen (loopback only).
    #[arg(long)]
    pub admin_listen: Option<String>,
    /// Require `Authorization: Bearer TOKEN` on the admin API.
    #[arg(long)]
    pub admin_token: Option<String>,
    /// Serve TLS with this PEM certificate chain (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Also serve HTTP/3 on the same port number over UDP (QUIC, with --tls-cert), advertised
    /// to TCP clients by Alt-Svc.
    #[arg(long, requires = "tls_cert")]
    pub http3: bool,
    /// Bytes all loaded payloads may hold together (`256mb`, `2gb`); an upload past it is
    /// refused with 400 before anything is made.
    #[arg(long, default_value = "256mb", value_parser = byte_size)]
    pub max_payload: u64,
    /// Close a connection whose request head is not complete this long after its first byte.
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub header_timeout: Duration,
    /// Close a connection that carries no request for this long.
    #[arg(long, default_value = "75s", value_parser = positive_duration)]
    pub idle_timeout: Duration,
}

/// What is sent, beside the URL or targets: one group for every command that sends.
#[derive(Args, Debug, Clone)]
pub struct RequestArgs {
    /// Method for a URL given as argument.
    #[arg(long, default_value = "GET")]
    pub method: String,
    /// Header added to every request, "Name: value" (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// Body file for requests whose target has none.
    #[arg(long)]
    pub body: Option<PathBuf>,
}

impl RequestArgs {
    /// The body file's bytes, if one was given.
    pub fn body_bytes(&self) -> Result<Option<Vec<u8>>, String> {
        self.body.as_ref().map(|p| std::fs::read(p).map_err(|e| format!("--body {}: {e}", p.display()))).transpose()
    }
}

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

    /// Close and reopen each connection after this many requests.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests_per_conn: Option<u64>,

    #[command(flatten)]
    pub client: ClientArgs,
}

mod files;
mod history;
mod k8s;
mod lab;
mod load;
mod replay;
pub use files::*;
pub use history::*;
pub use k8s::*;
pub use lab::*;
pub use load::*;
pub use replay::*;

#[cfg(test)]
mod tests;

/// Which HTTP to speak: one group of flags for every command that sends (`attack`, `lab
/// capacity`), so each maps them to a protocol the same way.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct ProtocolArgs {
    /// HTTP/2 over TLS when the server offers it by ALPN (`--http2=false` as vegeta takes it).
    #[arg(long, conflicts_with = "h2c", action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true")]
    pub http2: bool,
    /// HTTP/2 without TLS, with prior knowledge.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true")]
    pub h2c: bool,
    /// HTTP/3 over QUIC (https URLs; TLS options as for TCP; no 0-RTT).
    #[arg(long, conflicts_with_all = ["h2c", "http2"], action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true")]
    pub http3: bool,
}

impl ProtocolArgs {
    pub fn protocol(self) -> attack::Protocol {
        match (self.http2, self.h2c, self.http3) {
            (_, true, _) => attack::Protocol::H2c,
            (_, _, true) => attack::Protocol::Http3,
            (true, _, _) => attack::Protocol::Http2,
            _ => attack::Protocol::Http1,
        }
    }
}

/// How requests are sent, whatever the load: the client's flags as one group, and the one
/// mapping from them to [`attack::ClientOptions`].
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Request timeout, connect to last body byte.
    #[arg(long, default_value = "30s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// Body bytes read and counted per response (-1 = all, 0 = headers only).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(-1..))]
    pub max_body: i64,
    /// Redirects to follow (-1 = record the redirect, follow none).
    #[arg(long, default_value_t = attack::DEFAULT_REDIRECTS as i64, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(-1..=1000))]
    pub redirects: i64,
    /// Reuse connections (`--keepalive=false` for a connection per request).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub keepalive: bool,
    /// Ask for gzip (`Accept-Encoding: gzip`, unless a target sets its own) and count bodies'
    /// decoded size beside the bytes received, as vegeta's Go client does by default.
    #[arg(long)]
    pub compressed: bool,
    /// Connect to HOST:PORT instead of the URL's host (Host and SNI unchanged).
    #[arg(long)]
    pub connect_to: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// How TLS is trusted and who the client is: one group for every command that sends over TLS
/// (`attack`, `lab capacity`), with the one mapping to [`attack::TlsOptions`].
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Accept any TLS certificate.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true")]
    pub insecure: bool,
    /// Extra trusted root certificates (PEM; repeatable).
    #[arg(long)]
    pub root_certs: Vec<PathBuf>,
    /// Client certificate chain (PEM).
    #[arg(long, requires = "key")]
    pub cert: Option<PathBuf>,
    /// Client private key (PEM).
    #[arg(long, requires = "cert")]
    pub key: Option<PathBuf>,
}

impl TlsArgs {
    /// Each file named can be read, or the flag and the file that cannot: checked before a
    /// command that builds its clients late (a lab's probes) has run or written anything.
    pub fn check(&self) -> Result<(), String> {
        let named = self.root_certs.iter().map(|p| ("--root-certs", p));
        for (flag, path) in
            named.chain(self.cert.iter().map(|p| ("--cert", p))).chain(self.key.iter().map(|p| ("--key", p)))
        {
            std::fs::File::open(path).map_err(|e| format!("{flag}: {}: {e}", path.display()))?;
        }
        Ok(())
    }

    pub fn options(&self) -> attack::TlsOptions {
        attack::TlsOptions {
            insecure: self.insecure,
            root_certs: self.root_certs.clone(),
            any_name: false,
            cert: self.cert.clone(),
            key: self.key.clone(),
        }
    }
}

impl ClientArgs {
    pub fn options(&self) -> attack::ClientOptions {
        attack::ClientOptions {
            protocol: self.protocol.protocol(),
            timeout: self.timeout,
            max_body: u64::try_from(self.max_body).ok(),
            redirects: u32::try_from(self.redirects).ok(),
            keepalive: self.keepalive,
            connect_to: self.connect_to.clone(),
            tls: self.tls.options(),
            compressed: self.compressed,
        }
    }
}
