//! The HTTP client every part of loadlab sends with. `request` prepares a request once (its
//! HTTP/1.1 bytes, its HTTP/2 and HTTP/3 forms), `conn` opens connections for a protocol and
//! sends over them (hyper for HTTP/1.1 over TLS and HTTP/2, `lean` for HTTP/1.1 over plain TCP,
//! `h3` for HTTP/3 over QUIC with quinn), `tls` configures rustls, `exchange` is what one
//! request produced or how it failed, and `decoded` counts a compressed body's decoded size.
//! [`fetch`] is one request for whoever needs a document (a recipe's origin, a readiness check).
//! `testing` (feature `testing`) is the in-process server every crate's tests use.

mod conn;
mod decoded;
mod exchange;
mod h3;
mod lean;
mod request;
#[cfg(feature = "testing")]
pub mod testing;
mod text;
mod tls;
mod url;

pub use conn::{
    fetch, post, send_once, ClientOptions, Conn, Connector, Fetched, Protocol, DEFAULT_REDIRECTS, DEFAULT_TIMEOUT,
};
pub use exchange::{Exchange, Failure, FailureKind};
pub use lean::LeanConn;
pub use request::{redirected, resolve_location, Origin, Parts, Prepared};
pub use text::quoted;
pub use tls::{client_config, quic_server_config, server_config, Identity, TlsOptions};
pub use url::{parse_header, parse_url, without_credentials};
