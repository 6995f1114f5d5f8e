//! What the origin's tests share: an in-process origin on loopback and a one-request client.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use origin::{AdminPolicy, ConnLimits, Simulation};
use serde_json::Value;

pub(crate) struct Origin {
    pub addr: SocketAddr,
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Origin {
    /// A handle on an origin started elsewhere (it keeps running).
    pub(crate) fn at(addr: SocketAddr) -> Origin {
        Origin { addr, _stop: None }
    }
}

pub(crate) async fn start_with(admin: AdminPolicy) -> Origin {
    start_on(origin::bind(([127, 0, 0, 1], 0).into()).unwrap(), Simulation::new().await, admin, origin::DEFAULT_LIMITS)
}

pub(crate) fn start_on(
    listener: tokio::net::TcpListener,
    sim: Arc<Simulation>,
    admin: AdminPolicy,
    limits: ConnLimits,
) -> Origin {
    let addr = listener.local_addr().unwrap();
    let (stop, wait) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(origin::serve_with(listener, sim, admin, limits, None, async {
        let _ = wait.await;
    }));
    Origin { addr, _stop: Some(stop) }
}

pub(crate) async fn start() -> Origin {
    start_with(AdminPolicy { token: None, enabled: true, loopback_only: true }).await
}

#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// One request on a new HTTP/1.1 connection.
pub(crate) async fn send(
    o: &Origin,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Resp, hyper::Error> {
    let stream = tokio::net::TcpStream::connect(o.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut req = http::Request::builder().method(method).uri(path).header("host", o.addr.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = sender.send_request(req.body(Full::new(Bytes::from(body.to_owned()))).unwrap()).await?;
    let (parts, body) = resp.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok(Resp { status: parts.status.as_u16(), headers: parts.headers, body })
}

pub(crate) async fn get(o: &Origin, path: &str) -> Resp {
    send(o, "GET", path, &[], "").await.unwrap()
}

pub(crate) async fn post_recipe(o: &Origin, recipe: &Value) -> Resp {
    // curl -d sends form-urlencoded; the recipe must be read whatever the content type.
    send(o, "POST", "/_admin/add_recipe", &[("content-type", "application/x-www-form-urlencoded")], &recipe.to_string())
        .await
        .unwrap()
}

pub(crate) fn gunzip(b: &[u8]) -> String {
    let mut out = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(b), &mut out).unwrap();
    out
}

/// A self-signed certificate for 127.0.0.1 and its key, as PEM files in a directory of their own.
pub(crate) fn certificate(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("loadlab-origin-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    (cert, key)
}
