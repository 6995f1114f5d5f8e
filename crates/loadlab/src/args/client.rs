//! How requests are sent, one group of flags for every command that sends (`attack`, `lab
//! capacity`): what is sent, the protocol, the client and TLS, each with its one mapping to the
//! attack library's options.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args};

use super::values::positive_duration;

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
