//! `origin`'s arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::args::values::{byte_size, positive_duration};

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
