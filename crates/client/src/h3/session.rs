//! An HTTP/3 connection: the QUIC handshake, the control streams each side opens (RFC 9114
//! section 6.2), the server's GOAWAY, and a graceful close when the last handle goes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::frames::{put_frame_head, varint, FrameReader, Part, GOAWAY, SETTINGS};
use super::H3_NO_ERROR;
use crate::exchange::Failure;
use crate::request::Origin;
use crate::tls::{client_config, TlsOptions};

/// Unidirectional stream types (RFC 9114 section 6.2, RFC 9204 section 4.2).
const CONTROL_STREAM: u64 = 0x0;
const QPACK_ENCODER_STREAM: u64 = 0x2;
const QPACK_DECODER_STREAM: u64 = 0x3;
const H3_STREAM_CREATION_ERROR: u32 = 0x103;

/// A handle on an HTTP/3 connection, shared by the workers that send on it.
#[derive(Clone)]
pub struct H3Conn {
    session: Arc<Session>,
    /// Set when the connection is closed or the server sent GOAWAY: no new requests go here.
    pub(crate) closed: Arc<AtomicBool>,
    /// The first stream the server's GOAWAY did not take (all when none came).
    goaway: Arc<AtomicU64>,
}

/// The connection as its handles see it; the last one gone closes it with H3_NO_ERROR.
struct Session {
    quic: quinn::Connection,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.quic.close(quinn::VarInt::from_u64(H3_NO_ERROR).expect("a small code"), b"");
    }
}

impl H3Conn {
    pub(crate) fn quic(&self) -> &quinn::Connection {
        &self.session.quic
    }

    /// Whether stream `id` is one the server's GOAWAY said it will not process.
    pub(crate) fn past_goaway(&self, id: u64) -> bool {
        id >= self.goaway.load(Ordering::Relaxed)
    }
}

/// The QUIC client configuration: TLS as for TCP (roots, `--insecure`, client certificates),
/// offering `h3` by ALPN.
pub(crate) fn quic_config(tls: &TlsOptions, timeout: std::time::Duration) -> Result<quinn::ClientConfig, String> {
    let tls = client_config(tls, &[b"h3"])?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("http3: TLS settings QUIC cannot use: {e}"))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    // The attack's timeout bounds each request; the connection stays up between them.
    transport.max_idle_timeout(Some(
        timeout
            .max(std::time::Duration::from_secs(1))
            .try_into()
            .map_err(|_| "http3: --timeout is too long for QUIC's idle timeout".to_owned())?,
    ));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Opens a QUIC connection to `addr` (named `origin.host` for TLS) and its HTTP/3 session.
pub(crate) async fn connect(
    config: &quinn::ClientConfig,
    addr: SocketAddr,
    origin: &Origin,
) -> Result<H3Conn, Failure> {
    let bind: SocketAddr = if addr.is_ipv6() { "[::]:0".parse() } else { "0.0.0.0:0".parse() }.expect("an address");
    let endpoint = quinn::Endpoint::client(bind).map_err(|e| Failure::connect(&e))?;
    let connecting = endpoint
        .connect_with(config.clone(), addr, &origin.host)
        .map_err(|e| Failure::new(format!("http3 connect: {e}")))?;
    let quic = connecting.await.map_err(|e| Failure::new(format!("http3 handshake: {e}")))?;
    // The control stream opens with SETTINGS; none are sent, so the defaults hold: no QPACK
    // dynamic table, so no QPACK streams either (RFC 9204 section 4.2).
    let mut control = quic.open_uni().await.map_err(|e| Failure::new(format!("http3 handshake: {e}")))?;
    let mut preface = vec![];
    super::frames::put_varint(&mut preface, CONTROL_STREAM);
    put_frame_head(&mut preface, SETTINGS, 0);
    control.write_chunk(Bytes::from(preface)).await.map_err(|e| Failure::new(format!("http3 handshake: {e}")))?;
    let closed = Arc::new(AtomicBool::new(false));
    let goaway = Arc::new(AtomicU64::new(u64::MAX));
    let (flag, last) = (Arc::clone(&closed), Arc::clone(&goaway));
    let watched = quic.clone();
    tokio::spawn(async move {
        // Closing the control stream is a connection error: it stays open while the connection does.
        let _control = control;
        while let Ok(stream) = watched.accept_uni().await {
            tokio::spawn(read_server_stream(stream, Arc::clone(&flag), Arc::clone(&last)));
        }
        flag.store(true, Ordering::Relaxed);
        // The endpoint (its socket and driver) lives as long as the connection.
        drop(endpoint);
    });
    Ok(H3Conn { session: Arc::new(Session { quic }), closed, goaway })
}

/// One of the server's unidirectional streams: its control stream is read for GOAWAY; its QPACK
/// streams are read and dropped (nothing on them matters with no dynamic table); any other type
/// (a push, which was never allowed, or an extension) is refused.
async fn read_server_stream(mut stream: quinn::RecvStream, closed: Arc<AtomicBool>, goaway: Arc<AtomicU64>) {
    let mut kind = None;
    let mut frames = FrameReader::new();
    let mut head = Vec::new();
    while let Ok(Some(chunk)) = stream.read_chunk(usize::MAX, true).await {
        let mut bytes = chunk.bytes;
        if kind.is_none() {
            head.extend_from_slice(&bytes);
            let Some((k, n)) = varint(&head) else { continue };
            kind = Some(k);
            bytes = Bytes::copy_from_slice(&head[n..]);
            if !matches!(k, CONTROL_STREAM | QPACK_ENCODER_STREAM | QPACK_DECODER_STREAM) {
                let _ = stream.stop(H3_STREAM_CREATION_ERROR.into());
                return;
            }
        }
        if kind != Some(CONTROL_STREAM) {
            continue;
        }
        loop {
            match frames.next(&mut bytes) {
                Ok(Some(Part::Frame(GOAWAY, payload))) => {
                    if let Some((id, _)) = varint(&payload) {
                        goaway.fetch_min(id, Ordering::Relaxed);
                        closed.store(true, Ordering::Relaxed);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_servers_streams_are_read_for_goaway_and_the_last_handle_closes_gracefully() {
        // The server's HTTP/3 is spoken by hand.
        let (server, _) = crate::testing::quic_endpoint();
        let addr = server.local_addr().unwrap();
        let serving = tokio::spawn(async move {
            let conn = server.accept().await.unwrap().await.unwrap();
            // The client's control stream: its type, then an empty SETTINGS.
            let mut preface = [0u8; 3];
            conn.accept_uni().await.unwrap().read_exact(&mut preface).await.unwrap();
            // The server's control stream: SETTINGS with a reserved setting, a reserved frame
            // type (both to be ignored), then GOAWAY: streams from id 4 will not be processed.
            let mut control = conn.open_uni().await.unwrap();
            let mut bytes = vec![CONTROL_STREAM as u8];
            put_frame_head(&mut bytes, SETTINGS, 2);
            bytes.extend_from_slice(&[0x21, 0x00]);
            put_frame_head(&mut bytes, 0x21, 3);
            bytes.extend_from_slice(b"abc");
            put_frame_head(&mut bytes, GOAWAY, 1);
            bytes.push(4);
            control.write_all(&bytes).await.unwrap();
            // A stream of a type the client does not know: refused.
            let mut unknown = conn.open_uni().await.unwrap();
            unknown.write_all(&[0x21, 1, 2, 3]).await.unwrap();
            let stopped = unknown.stopped().await;
            let closed = conn.closed().await;
            (preface, stopped, closed, control)
        });
        let tls = TlsOptions { insecure: true, ..Default::default() };
        let config = quic_config(&tls, Duration::from_secs(5)).unwrap();
        let origin = Origin { tls: true, host: "localhost".into(), port: addr.port() };
        let conn = connect(&config, addr, &origin).await.unwrap();
        for _ in 0..500 {
            if conn.closed.load(Ordering::Relaxed) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(conn.closed.load(Ordering::Relaxed), "GOAWAY takes the connection out of use");
        assert!(!conn.past_goaway(0));
        assert!(conn.past_goaway(4) && conn.past_goaway(8));
        drop(conn);
        let (preface, stopped, closed, _) =
            tokio::time::timeout(Duration::from_secs(10), serving).await.unwrap().unwrap();
        assert_eq!(preface, [0x00, 0x04, 0x00]);
        assert_eq!(stopped.unwrap(), Some(quinn::VarInt::from_u32(H3_STREAM_CREATION_ERROR)));
        match closed {
            quinn::ConnectionError::ApplicationClosed(c) => assert_eq!(c.error_code.into_inner(), H3_NO_ERROR),
            other => panic!("closed by {other}"),
        }
    }
}
