//! `loadlab origin`: the origin simulator on a port until a signal.

pub mod args;

use std::sync::Arc;

use origin::{AdminPolicy, Simulation};

use crate::bad;
use crate::shutdown::{Second, Shutdown};
use args::OriginArgs;

/// `--listen`, else `PORT`, else 127.0.0.1:8080.
fn listen_addr(a: &OriginArgs) -> anyhow::Result<String> {
    if let Some(l) = &a.listen {
        return Ok(l.clone());
    }
    match std::env::var("PORT") {
        Ok(p) => {
            let port: u16 = p.trim().parse().map_err(|_| bad(format!("PORT={p:?} is not a port number")))?;
            Ok(format!("127.0.0.1:{port}"))
        }
        Err(_) => Ok("127.0.0.1:8080".to_owned()),
    }
}

pub fn run(a: OriginArgs) -> anyhow::Result<()> {
    let listen = listen_addr(&a)?;
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(origin::tls_acceptor(c, k).map_err(|e| bad(format!("--tls-cert/--tls-key: {e}")))?),
        (None, None) => None,
        _ => return Err(bad("--tls-cert and --tls-key go together")),
    };
    let recipe = match &a.recipe {
        Some(path) => Some((path, std::fs::read(path).map_err(|e| bad(format!("{}: {e}", path.display())))?)),
        None => None,
    };
    if let Some((path, text)) = &recipe {
        origin::parse_upload(text).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    }
    let shutdown = Shutdown::watch("stopping the origin", Second::Exit)?;
    let stop = shutdown.stop();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        let sim = Simulation::with_max_payload(a.max_payload).await;
        if let Some((path, text)) = &recipe {
            sim.upload(text).await.map_err(|e| bad(format!("{}: {e}", path.display())))?;
        }
        let listener = resolve(&listen).and_then(origin::bind).map_err(|e| bad(format!("--listen {listen}: {e}")))?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        // Written, not printed: a log on a full disk must not stop the server (eprintln panics).
        log(format_args!("loadlab origin: serving on {scheme}://{}", listener.local_addr()?));
        let admin_listener = match &a.admin_listen {
            Some(addr) => {
                let l = resolve(addr).and_then(origin::bind).map_err(|e| bad(format!("--admin-listen {addr}: {e}")))?;
                log(format_args!("loadlab origin: admin API on http://{}/_admin/", l.local_addr()?));
                Some(l)
            }
            None => None,
        };
        let main_admin =
            AdminPolicy { token: a.admin_token.clone(), enabled: admin_listener.is_none(), loopback_only: true };
        if let Some(l) = admin_listener {
            let policy = AdminPolicy { token: a.admin_token.clone(), enabled: true, loopback_only: false };
            let limits = origin::ConnLimits { header: a.header_timeout, idle: a.idle_timeout };
            tokio::spawn(origin::serve_with(l, Arc::clone(&sim), policy, limits, None, std::future::pending()));
        }
        let stop = stop.cancelled_owned();
        let limits = origin::ConnLimits { header: a.header_timeout, idle: a.idle_timeout };
        match (a.http3, tls, &a.tls_cert, &a.tls_key) {
            (true, Some(tls), Some(cert), Some(key)) => {
                let at = listener.local_addr()?;
                let quic = origin::quic_endpoint(at, cert, key, limits).map_err(|e| bad(format!("--http3: {e}")))?;
                log(format_args!("loadlab origin: serving HTTP/3 on udp {}", quic.local_addr()?));
                origin::serve_with_h3(listener, quic, sim, main_admin, limits, Some(tls), stop).await;
            }
            (_, tls, _, _) => origin::serve_with(listener, sim, main_admin, limits, tls, stop).await,
        }
        Ok(())
    });
    shutdown.outcome(result)
}

fn resolve(addr: &str) -> std::io::Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()?.next().ok_or_else(|| std::io::Error::other("no address"))
}

/// A line on stderr, or nothing when stderr cannot be written.
fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
