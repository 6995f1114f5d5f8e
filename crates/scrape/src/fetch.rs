//! How a source is read: within a time and a size, over the client the attack uses, and how its
//! URL is shown (without credentials). Shared by the exporter and the Prometheus server readers.

use std::time::Duration;

/// The most a reading waits for its source.
pub const READ_TIMEOUT: Duration = Duration::from_secs(3);
/// The largest answer read (node_exporter's exposition is about 100 KiB; a cAdvisor of a busy
/// node a few MiB): past it, the source is refused rather than read into memory.
pub const MAX_BYTES: u64 = 32 << 20;

/// The client options of one bounded read.
pub fn options(tls: &client::TlsOptions) -> client::ClientOptions {
    client::ClientOptions {
        timeout: READ_TIMEOUT,
        max_body: Some(MAX_BYTES),
        redirects: Some(3),
        tls: tls.clone(),
        ..Default::default()
    }
}

pub use client::without_credentials;

/// Now, in unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}
