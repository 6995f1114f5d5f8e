//! Command-line definitions. Flag names follow vegeta's where vegeta has one.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

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
    /// Run the origin simulator (Origin Simulator recipes and admin API).
    Origin(OriginArgs),
    /// A short lab: a rate ladder against an embedded origin simulator, with reports.
    Demo(DemoArgs),
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Directory for the results files.
    #[arg(long, default_value = "loadlab-demo")]
    pub out: std::path::PathBuf,
    /// Rates of the ladder, requests per second.
    #[arg(long, value_delimiter = ',', default_values_t = [200.0, 400.0, 800.0])]
    pub rates: Vec<f64>,
    /// Length of each step.
    #[arg(long, default_value = "5s")]
    pub step: String,
}

#[derive(Args, Debug)]
pub struct OriginArgs {
    /// Address to serve on (default 127.0.0.1:8080, or 127.0.0.1:$PORT).
    #[arg(long)]
    pub listen: Option<String>,
    /// Recipe file (an object or an array) loaded at start instead of the default recipe.
    #[arg(long)]
    pub recipe: Option<std::path::PathBuf>,
    /// Serve the admin API on this address (to any peer) instead of on --listen (loopback only).
    #[arg(long)]
    pub admin_listen: Option<String>,
    /// Require `Authorization: Bearer TOKEN` on the admin API.
    #[arg(long)]
    pub admin_token: Option<String>,
    /// Serve TLS with this PEM certificate chain (with --tls-key).
    #[arg(long)]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long)]
    pub tls_key: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct AttackArgs {
    /// URL to request (else targets come from --targets or stdin).
    pub url: Option<String>,
    /// Targets file (vegeta's http or json format); `-` for stdin.
    #[arg(long)]
    pub targets: Option<String>,
    /// Targets format: http or json.
    #[arg(long, default_value = "http")]
    pub format: String,
    /// Method for a URL given as argument.
    #[arg(long, default_value = "GET")]
    pub method: String,
    /// Header added to every request, "Name: value" (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// Body file for requests whose target has none.
    #[arg(long)]
    pub body: Option<PathBuf>,
    /// Name of the run, recorded in the results.
    #[arg(long, default_value = "")]
    pub name: String,
    /// Results file; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,

    /// Open model: requests per second (N, N/s, N/m), or a ramp A..B with --ramp.
    #[arg(long)]
    pub rate: Option<String>,
    /// Length of the linear ramp of --rate A..B.
    #[arg(long)]
    pub ramp: Option<String>,
    /// Open model in steps: RATE,RATE,...@STEP (e.g. 400,800,1000@60s).
    #[arg(long)]
    pub rate_steps: Option<String>,
    /// How long to attack (e.g. 60s, 10m).
    #[arg(long)]
    pub duration: Option<String>,
    /// Open model: workers started up front.
    #[arg(long, default_value_t = attack::DEFAULT_WORKERS)]
    pub workers: usize,
    /// Open model: most requests in flight at once.
    #[arg(long)]
    pub max_workers: Option<usize>,

    /// Closed model (without --rate): connections sending back to back. With --rate and
    /// HTTP/2: the connections the workers share.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Closed model over HTTP/2: requests in flight per connection.
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// Closed model: total requests.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Close and reopen each connection after this many requests.
    #[arg(long)]
    pub requests_per_conn: Option<u64>,

    /// HTTP/2 over TLS when the server offers it by ALPN.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2 without TLS, with prior knowledge.
    #[arg(long)]
    pub h2c: bool,
    /// Request timeout, connect to last body byte.
    #[arg(long, default_value = "30s")]
    pub timeout: String,
    /// Body bytes read and counted per response (-1 = all, 0 = headers only).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub max_body: i64,
    /// Redirects to follow (-1 = record the redirect, follow none).
    #[arg(long, default_value_t = attack::DEFAULT_REDIRECTS as i64, allow_negative_numbers = true)]
    pub redirects: i64,
    /// Reuse connections.
    #[arg(long, default_value = "true", action = ArgAction::Set)]
    pub keepalive: bool,
    /// Connect to HOST:PORT instead of the URL's host (Host and SNI unchanged).
    #[arg(long)]
    pub connect_to: Option<String>,
    /// Accept any TLS certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Extra trusted root certificates (PEM; repeatable).
    #[arg(long)]
    pub root_certs: Vec<PathBuf>,
    /// Client certificate chain (PEM).
    #[arg(long)]
    pub cert: Option<PathBuf>,
    /// Client private key (PEM).
    #[arg(long)]
    pub key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files (.llr); stdin when none or `-`.
    pub files: Vec<String>,
    /// text, json, hist[0,5ms,10ms,...] or hdr.
    #[arg(long = "type", default_value = "text")]
    pub kind: String,
    /// Print the report this often while the input grows (e.g. 1s).
    #[arg(long)]
    pub every: Option<String>,
    /// Where to write; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,
}

#[derive(Args, Debug)]
pub struct EncodeArgs {
    /// Input files; stdin when none or `-`.
    pub files: Vec<String>,
    /// Output format: json (vegeta's JSON lines, with ttfb and lag), vegeta-json, or csv; an
    /// import (--from vegeta-json|csv) always writes llr.
    #[arg(long)]
    pub to: Option<String>,
    /// Input format: llr, vegeta-json or csv.
    #[arg(long, default_value = "llr")]
    pub from: String,
    /// Where to write; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Results files (.llr); stdin when none or `-`. Each run is a series.
    pub files: Vec<String>,
    /// Output file: .html, .svg or .png.
    #[arg(long, short = 'o')]
    pub output: String,
    /// Title above the charts.
    #[arg(long, default_value = "")]
    pub title: String,
    /// latency, status, throughput, hdr or all.
    #[arg(long, default_value = "all")]
    pub chart: String,
}
