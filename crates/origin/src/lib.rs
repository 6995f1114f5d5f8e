//! The origin simulator: a fake upstream driven by Origin Simulator's JSON recipes.
//!
//! `recipe` validates recipes, `content` makes payloads once at load, `simulation` holds the
//! routes (swapped atomically, stages worked out from the time since load), `server` serves
//! HTTP/1.1, h2c and TLS with faults (`h3` the same routes over HTTP/3), `admin` is the `/_admin/` API, `response` the body type
//! and plain replies both use.

mod admin;
mod conn;
mod content;
mod default_recipe;
mod h3;
pub mod recipe;
mod response;
mod server;
mod simulation;
mod timer;

use std::sync::Arc;

pub use admin::AdminPolicy;
pub use conn::{ConnLimits, DEFAULT_LIMITS};
pub use recipe::{parse_upload, RecipeError};
pub use simulation::{Simulation, DEFAULT_MAX_PAYLOAD};

use client::Identity;

/// A certificate chain and its key from PEM files.
fn identity(cert: &std::path::Path, key: &std::path::Path) -> Result<Identity, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    Ok((chain, key))
}

/// Builds a TLS acceptor from PEM files.
pub fn tls_acceptor(cert: &std::path::Path, key: &std::path::Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    let (chain, key) = identity(cert, key)?;
    let cfg = client::server_config((chain, key), None).map_err(|e| format!("{}: {e}", cert.display()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}

/// Connections waiting to be accepted, at most: 1,000 clients connecting at once overflowed
/// tokio's default of 1024 (SYNs dropped, retried a second later, a 1 s outlier per client).
const BACKLOG: u32 = 8192;

/// Binds a listener with a deep accept queue.
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// What ends a server: any future, boxed where it is handed in.
pub type Shutdown = futures_core::future::BoxFuture<'static, ()>;

/// A server running, as a boxed future made in this crate: a caller that awaits or spawns an
/// upstream crate's future type compiles that future's whole state machine again (here: the
/// accept loop, hyper's connections and the handlers); behind a pointer it is compiled once,
/// here, at this crate's optimisation level.
pub type Serving = futures_core::future::BoxFuture<'static, ()>;

/// Serves `sim` on `listener` until `shutdown` resolves, with the default connection limits.
pub fn serve(
    listener: tokio::net::TcpListener,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Serving {
    serve_with(listener, sim, admin, DEFAULT_LIMITS, tls, shutdown)
}

/// [`serve`] with connection timeouts of one's own.
pub fn serve_with(
    listener: tokio::net::TcpListener,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Serving {
    serve_tcp(listener, sim, admin, limits, tls, Box::pin(shutdown))
}

fn serve_tcp(
    listener: tokio::net::TcpListener,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: Shutdown,
) -> Serving {
    let shared = Arc::new(server::Shared { sim, admin, limits, alt_svc: None });
    Box::pin(server::serve(listener, shared, tls, shutdown))
}

/// A QUIC endpoint for [`serve_with_h3`] on `addr`, with the TLS listener's certificate and key.
pub fn quic_endpoint(
    addr: std::net::SocketAddr,
    cert: &std::path::Path,
    key: &std::path::Path,
    limits: ConnLimits,
) -> Result<quinn::Endpoint, String> {
    let (chain, key) = identity(cert, key)?;
    h3::endpoint(addr, chain, key, limits.idle)
}

/// A QUIC endpoint on `addr` with a certificate made on the spot for 127.0.0.1 and localhost
/// (an embedded origin's), and that certificate's PEM for clients to trust.
pub fn quic_endpoint_self_signed(
    addr: std::net::SocketAddr,
    limits: ConnLimits,
) -> Result<(quinn::Endpoint, String), String> {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).map_err(|e| e.to_string())?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
    let endpoint = h3::endpoint(addr, vec![ck.cert.der().clone()], key, limits.idle)?;
    Ok((endpoint, ck.cert.pem()))
}

/// As [`serve_with`], and the same routes over HTTP/3 on `quic` (the same port number over
/// UDP, advertised to TCP clients by `Alt-Svc`), until `shutdown` resolves.
pub fn serve_with_h3(
    listener: tokio::net::TcpListener,
    quic: quinn::Endpoint,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Serving {
    serve_both(listener, quic, sim, admin, limits, tls, Box::pin(shutdown))
}

fn serve_both(
    listener: tokio::net::TcpListener,
    quic: quinn::Endpoint,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: Shutdown,
) -> Serving {
    Box::pin(serve_tcp_and_quic(listener, quic, sim, admin, limits, tls, shutdown))
}

async fn serve_tcp_and_quic(
    listener: tokio::net::TcpListener,
    quic: quinn::Endpoint,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: Shutdown,
) {
    let port = quic.local_addr().map(|a| a.port()).unwrap_or_default();
    let alt_svc = http::HeaderValue::from_str(&format!("h3=\":{port}\"; ma=86400")).ok();
    let shared = Arc::new(server::Shared { sim, admin, limits, alt_svc });
    let (done, stopped) = tokio::sync::oneshot::channel::<()>();
    let quic_task = tokio::spawn(h3::serve(
        quic,
        Arc::clone(&shared),
        Box::pin(async {
            let _ = stopped.await;
        }),
    ));
    server::serve(listener, shared, tls, shutdown).await;
    drop(done);
    let _ = quic_task.await;
}
