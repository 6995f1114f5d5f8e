//! HTTP/3: the same simulated routes over QUIC (quinn and h3), on a UDP port beside the TLS
//! listener. A connection's faults close it as they drop a TCP connection; a `hang` holds the
//! stream. The admin API answers over TCP only.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use http::Response;
use http_body_util::{BodyExt, Full};

use crate::conn::ConnCtl;
use crate::server::{answer, Shared};

/// The HTTP/3 application error code a fault closes a connection with (H3_INTERNAL_ERROR).
const FAULT_CODE: u32 = 0x102;
/// Request bodies are read whole before answering, at most this much (the handlers' cap); a
/// larger one is answered 413 as over TCP.
const MAX_READ: usize = (16 << 20) + 1;

/// A QUIC endpoint on `addr` with a certificate chain and key (TLS 1.3, ALPN `h3`), its idle
/// timeout `idle`.
pub(crate) fn endpoint(
    addr: SocketAddr,
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    idle: std::time::Duration,
) -> Result<quinn::Endpoint, String> {
    let mut config = client::quic_server_config((chain, key))?;
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(idle.try_into().ok());
    // As many requests at once per connection as HTTP/2's default limit on the TCP side.
    transport.max_concurrent_bidi_streams(256u32.into());
    config.transport_config(Arc::new(transport));
    quinn::Endpoint::server(config, addr).map_err(|e| format!("UDP {addr}: {e}"))
}

/// Accepts QUIC connections until `shutdown` resolves.
pub(crate) async fn serve(endpoint: quinn::Endpoint, shared: Arc<Shared>, mut shutdown: crate::Shutdown) {
    loop {
        let incoming = tokio::select! {
            i = endpoint.accept() => match i { Some(i) => i, None => return },
            _ = &mut shutdown => {
                endpoint.close(0u32.into(), b"shutting down");
                return;
            }
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let Ok(quic) = incoming.await else { return };
            let ctl = ConnCtl::new();
            let Ok(mut conn) = h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(quic.clone())).await
            else {
                return;
            };
            loop {
                let resolver = tokio::select! {
                    r = conn.accept() => match r { Ok(Some(r)) => r, _ => return },
                    reset = ctl.aborted_kind() => {
                        let why: &[u8] = if reset { b"reset" } else { b"closed" };
                        quic.close(FAULT_CODE.into(), why);
                        return;
                    }
                };
                let (shared, ctl) = (Arc::clone(&shared), Arc::clone(&ctl));
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                    let mut body = BytesMut::new();
                    while let Ok(Some(mut chunk)) = stream.recv_data().await {
                        while chunk.has_remaining() && body.len() < MAX_READ {
                            let part = chunk.chunk();
                            let n = part.len().min(MAX_READ - body.len());
                            body.extend_from_slice(&part[..n]);
                            chunk.advance(part.len());
                        }
                    }
                    let req = req.map(|()| Full::new(body.freeze()));
                    let resp = answer(req, &shared, &ctl).await;
                    let (head, mut body) = resp.into_parts();
                    if stream.send_response(Response::from_parts(head, ())).await.is_err() {
                        return;
                    }
                    while let Some(Ok(frame)) = body.frame().await {
                        if let Ok(data) = frame.into_data() {
                            if stream.send_data(data).await.is_err() {
                                return;
                            }
                        }
                    }
                    let _ = stream.finish().await;
                });
            }
        });
    }
}
