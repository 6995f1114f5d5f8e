//! Copies (`loadlab k8s collect URL --out DIR`) the results a `--collect` run gathered on its
//! worker 0 (served by its live view at `/results/`), typically through `kubectl port-forward`.
//! Waits until every worker's file is there, writes each under a temporary name and renames it
//! once its size matches, and never overwrites a file without `--force`.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;

use crate::bad;

/// A gathered set that lacks some workers' files: what was there was copied.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Incomplete(pub String);

/// Where to collect from and to.
#[derive(Clone, Debug)]
pub struct Collect {
    /// Worker 0's live view.
    pub url: String,
    pub out: std::path::PathBuf,
    /// How long to wait for every worker's file.
    pub wait: Duration,
    /// Replace files already in `out`.
    pub force: bool,
}

pub fn run(a: &Collect) -> anyhow::Result<()> {
    let base = a.url.trim_end_matches('/').to_owned();
    if !base.starts_with("http://") {
        return Err(bad(format!("{}: give the live view's http:// address (e.g. after kubectl port-forward)", a.url)));
    }
    std::fs::create_dir_all(&a.out).map_err(|e| bad(format!("--out {}: {e}", a.out.display())))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let index = wait_for_all(&base, a.wait).await?;
        let files = index["files"].as_array().cloned().unwrap_or_default();
        let mut names = Vec::new();
        for f in &files {
            let name = f["name"].as_str().unwrap_or_default();
            if name.is_empty() || name.contains('/') || name.starts_with('.') {
                return Err(anyhow!("{base}/results/ offers a file named {name:?}: refusing it"));
            }
            let to = a.out.join(name);
            if to.exists() && !a.force {
                return Err(bad(format!("{}: already there (--force to replace it)", to.display())));
            }
            names.push((name.to_owned(), f["bytes"].as_u64().unwrap_or(0)));
        }
        let mut total = 0;
        for (name, bytes) in &names {
            total += download(&format!("{base}/results/{name}"), &a.out.join(name), *bytes).await?;
        }
        eprintln!(
            "loadlab: collected {} files ({total} bytes) into {}; read them with: loadlab report {}/*.llr",
            names.len(),
            a.out.display(),
            a.out.display()
        );
        if index["complete"] != true {
            return Err(anyhow::Error::new(Incomplete(format!(
                "{} of {} workers' results were there after {:?}: the set is incomplete",
                names.len(),
                index["expected"],
                a.wait
            ))));
        }
        Ok(())
    })
}

/// Polls the index until it says every worker's file is there, or `wait` passes.
async fn wait_for_all(base: &str, wait: Duration) -> anyhow::Result<serde_json::Value> {
    let started = Instant::now();
    loop {
        let (status, body) = get(&format!("{base}/results/")).await?;
        let index: serde_json::Value = match status {
            200 => serde_json::from_slice(
                &tokio::time::timeout(QUIET, body?.collect())
                    .await
                    .map_err(|_| anyhow!("{base}/results/: the index did not arrive within {QUIET:?}"))??
                    .to_bytes(),
            )
            .with_context(|| format!("{base}/results/: not an index of results"))?,
            s => return Err(anyhow!("{base}/results/: status {s} (is this a loadlab live view run with --collect?)")),
        };
        if index["expected"] == 0 {
            return Err(anyhow!("{base}/results/: this run gathers no results (it was not run with --collect)"));
        }
        if index["complete"] == true || started.elapsed() >= wait {
            return Ok(index);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

type Incoming = anyhow::Result<hyper::body::Incoming>;

/// How long the live view may take to answer, or to send the next part of a file.
const QUIET: Duration = Duration::from_secs(30);

/// GET `url` over one HTTP/1.1 connection: the status and the body to read.
async fn get(url: &str) -> anyhow::Result<(u16, Incoming)> {
    tokio::time::timeout(QUIET, get_now(url)).await.map_err(|_| anyhow!("{url}: no answer within {QUIET:?}"))?
}

async fn get_now(url: &str) -> anyhow::Result<(u16, Incoming)> {
    let uri: hyper::Uri = url.parse().with_context(|| format!("{url}: not a URL"))?;
    let host = uri.host().ok_or_else(|| anyhow!("{url}: no host"))?.to_owned();
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await.with_context(|| url.to_owned())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = hyper::Request::get(uri.path()).header("host", format!("{host}:{port}")).body(Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await.with_context(|| url.to_owned())?;
    Ok((resp.status().as_u16(), Ok(resp.into_body())))
}

/// Downloads `url` to `to` (via a temporary name), checking it is `bytes` long; returns its size.
async fn download(url: &str, to: &Path, bytes: u64) -> anyhow::Result<u64> {
    let (status, body) = get(url).await?;
    if status != 200 {
        return Err(anyhow!("{url}: status {status}"));
    }
    let mut body = body?;
    let part = to.with_file_name(format!(".{}.part", to.file_name().unwrap_or_default().to_string_lossy()));
    let mut file = tokio::fs::File::create(&part).await.with_context(|| part.display().to_string())?;
    let mut got = 0u64;
    loop {
        let frame = tokio::time::timeout(QUIET, body.frame())
            .await
            .map_err(|_| anyhow!("{url}: nothing arrived for {QUIET:?} ({got} of {bytes} bytes)"))?;
        let Some(frame) = frame else { break };
        if let Ok(data) = frame.with_context(|| url.to_owned())?.into_data() {
            got += data.len() as u64;
            file.write_all(&data).await?;
        }
    }
    file.sync_all().await?;
    if got != bytes {
        let _ = tokio::fs::remove_file(&part).await;
        return Err(anyhow!("{url}: {got} bytes arrived of {bytes}"));
    }
    tokio::fs::rename(&part, to).await?;
    Ok(got)
}
