//! TLS to a PostgreSQL history, asked for as libpq asks for it in a URL: `sslmode` (`disable`,
//! `prefer` by default, `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file of
//! the CA that signed the server's certificate). On rustls, through the HTTP client's settings.
//!
//! tokio-postgres knows neither `verify-*` nor `sslrootcert`: both are taken out of the URL here
//! and the connection is made with a connector of its own. The connector is written here rather
//! than taken from tokio-postgres-rustls, which would add a DER/X.509 stack (for SCRAM channel
//! binding, which loadlab does not offer) to a build that must stay short.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::Socket;

use super::HistoryError;

/// What the URL asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    /// TLS if the server offers it, its certificate not checked (libpq's default).
    Prefer,
    /// TLS, the certificate not checked (checked against `sslrootcert` when one is given, as
    /// libpq does).
    Require,
    /// TLS, the certificate signed by a trusted CA, whatever name it is for.
    VerifyCa,
    /// TLS, the certificate signed by a trusted CA and for the host connected to.
    VerifyFull,
}

/// The TLS settings of a URL.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Wanted {
    pub mode: Mode,
    pub root_cert: Option<PathBuf>,
}

/// `spec` without the parameters handled here, and what they ask for.
pub(crate) fn split(spec: &str) -> Result<(String, Wanted), HistoryError> {
    let mut wanted = Wanted { mode: Mode::Prefer, root_cert: None };
    let Some((base, query)) = spec.split_once('?') else { return Ok((spec.to_owned(), wanted)) };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                wanted.mode = match value {
                    "disable" => Mode::Disable,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(HistoryError(format!(
                            "sslmode={other}: not one of disable, prefer, require, verify-ca, verify-full"
                        )))
                    }
                }
            }
            "sslrootcert" => wanted.root_cert = Some(PathBuf::from(decoded(value))),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    Ok((url, wanted))
}

/// `%2F` and the like in a URL's value, as libpq reads them.
fn decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Wanted {
    /// The mode tokio-postgres negotiates with.
    pub(crate) fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The connector, none when TLS is not to be used.
    pub(crate) fn connector(&self) -> Result<Option<Rustls>, HistoryError> {
        if self.mode == Mode::Disable {
            return Ok(None);
        }
        if let Some(f) = self.root_cert.as_ref().filter(|f| !f.is_file()) {
            return Err(HistoryError(format!("sslrootcert={}: no such file", f.display())));
        }
        let checked = matches!(self.mode, Mode::VerifyCa | Mode::VerifyFull)
            || (self.mode == Mode::Require && self.root_cert.is_some());
        let options = client::TlsOptions {
            insecure: !checked,
            root_certs: self.root_cert.iter().cloned().collect(),
            any_name: self.mode != Mode::VerifyFull,
            ..Default::default()
        };
        let config = client::client_config(&options, &[]).map_err(|e| HistoryError(format!("TLS: {e}")))?;
        Ok(Some(Rustls(config)))
    }
}

/// A rustls connector for tokio-postgres.
#[derive(Clone)]
pub(crate) struct Rustls(Arc<rustls::ClientConfig>);

impl MakeTlsConnect<Socket> for Rustls {
    type Stream = Tls;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> Result<Connect, io::Error> {
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
        Ok(Connect(Arc::clone(&self.0), name))
    }
}

/// One connection's handshake.
// Public: the associated types of tokio-postgres's TLS traits must be.
#[allow(unreachable_pub)]
pub struct Connect(Arc<rustls::ClientConfig>, rustls::pki_types::ServerName<'static>);

impl TlsConnect<Socket> for Connect {
    type Stream = Tls;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Tls>> + Send>>;

    fn connect(self, socket: Socket) -> Self::Future {
        let Connect(config, name) = self;
        Box::pin(async move { Ok(Tls(tokio_rustls::TlsConnector::from(config).connect(name, socket).await?)) })
    }
}

/// A connection over TLS.
// Public: the associated types of tokio-postgres's TLS traits must be.
#[allow(unreachable_pub)]
pub struct Tls(tokio_rustls::client::TlsStream<Socket>);

impl TlsStream for Tls {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for Tls {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tls {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_parameters_are_taken_out_of_the_url_and_the_rest_kept() {
        let (url, w) =
            split("postgres://ci@db/labs?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=5").unwrap();
        assert_eq!(url, "postgres://ci@db/labs?connect_timeout=5");
        assert_eq!(w, Wanted { mode: Mode::VerifyFull, root_cert: Some("/etc/ca.pem".into()) });
        assert_eq!(split("postgres://db/labs").unwrap().1.mode, Mode::Prefer);
        let e = split("postgres://db/labs?sslmode=verify").unwrap_err().to_string();
        assert!(e.contains("sslmode=verify: not one of"), "{e}");
    }
}
