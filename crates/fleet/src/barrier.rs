//! The workers of a sharded attack meet before they start: worker 0 listens, the others connect
//! and say who they are, and once all N are there worker 0 sends every one the same start time,
//! a second ahead, so their schedules line up to the clock's precision, and a run id that every
//! shard file records (so `report` can tell shards of one run from another's). A worker that
//! starts after that time sends its overdue hits late, and its lag says so.
//!
//! Worker 0's port is reachable by anyone in a cluster: each connection says who it is within
//! `LINE_TIMEOUT`, in at most `MAX_LINE` bytes, handshakes run side by side (at most
//! `MAX_PENDING` at once, more are closed), so neither an endless line nor idle strangers can
//! hold the start back or grow its memory.
//!
//! With `--collect`, worker 0 keeps listening after the start and the others send it their
//! results files when they are done (see `gather`), for clusters with no volume shared by pods.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use attack::Shard;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// How far ahead of the last arrival the start is set: time to tell everyone.
const LEAD: Duration = Duration::from_secs(1);
/// How long a connection has to say `READY I/N`.
const LINE_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest line read (`READY 1234/5678` is 16 bytes; a `RESULTS` line names a file).
pub(crate) const MAX_LINE: u64 = 256;
/// Handshakes in progress at once; connections beyond are closed at once.
pub(crate) const MAX_PENDING: usize = 64;

/// Where the workers meet, and what they agree on.
pub struct Start {
    pub at: SystemTime,
    /// Shared by every worker of the run.
    pub run: String,
    /// Worker 0's listener, still open (for `gather::receive`); `None` for the others.
    pub listener: Option<TcpListener>,
}

/// Meets the other workers at `addr` (worker 0 listens there) and returns the shared start.
pub async fn meet(addr: &str, shard: Shard, timeout: Duration) -> anyhow::Result<Start> {
    let work = async {
        if shard.index == 0 {
            lead(addr, shard).await
        } else {
            follow(addr, shard).await
        }
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| anyhow!("--barrier {addr}: not every worker arrived within {timeout:?}"))?
}

/// Reads one line of at most `MAX_LINE` bytes within `LINE_TIMEOUT`.
/// Reading through `r`'s buffer, so what follows the line stays there.
pub(crate) async fn bounded_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<String> {
    let mut line = String::new();
    let mut limited = r.take(MAX_LINE);
    match tokio::time::timeout(LINE_TIMEOUT, limited.read_line(&mut line)).await {
        Ok(Ok(n)) if n > 0 && line.ends_with('\n') => Some(line),
        _ => None,
    }
}

async fn lead(addr: &str, shard: Shard) -> anyhow::Result<Start> {
    // Worker 0 is the address's host; from another pod's view it is a name for this one, so
    // it listens on every interface unless the address is loopback (a local run).
    let resolved = tokio::net::lookup_host(addr).await.with_context(|| format!("--barrier {addr}"))?.next();
    let resolved = resolved.ok_or_else(|| anyhow!("--barrier {addr}: no address"))?;
    let bind = if resolved.ip().is_loopback() {
        resolved
    } else {
        std::net::SocketAddr::from(([0, 0, 0, 0], resolved.port()))
    };
    let listener = TcpListener::bind(bind).await.with_context(|| format!("--barrier: listening on {bind}"))?;
    let (said, mut heard) = tokio::sync::mpsc::channel::<(Option<Shard>, TcpStream)>(MAX_PENDING);
    let pending = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_PENDING));
    let mut arrived: BTreeMap<u64, TcpStream> = BTreeMap::new();
    while (arrived.len() as u64) < shard.count - 1 {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: wait rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Ok(permit) = std::sync::Arc::clone(&pending).try_acquire_owned() else {
                    continue; // Too many handshakes at once: this one is dropped.
                };
                let said = said.clone();
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    let line = bounded_line(&mut reader).await;
                    let who = line.and_then(|l| l.trim().strip_prefix("READY ").and_then(|s| s.parse::<Shard>().ok()));
                    let _ = said.send((who, reader.into_inner())).await;
                    drop(permit);
                });
            }
            Some((who, mut stream)) = heard.recv() => match who {
                Some(s) if s.count == shard.count && s.index != 0 && !arrived.contains_key(&s.index) => {
                    arrived.insert(s.index, stream);
                }
                Some(s) if s.count == shard.count && s.index != 0 => {
                    eprintln!("loadlab: --barrier: refused a second worker {s}: that index is already here");
                    let _ = stream.write_all(format!("REFUSED worker {s} is already here\n").as_bytes()).await;
                }
                Some(s) if s.index == 0 && s.count == shard.count => {
                    let _ = stream.write_all(format!("REFUSED worker {s} is the one listening here\n").as_bytes()).await;
                }
                _ => {
                    let _ = stream.write_all(b"REFUSED not a worker of this run\n").await;
                }
            },
        }
    }
    let start = SystemTime::now() + LEAD;
    let ns = start.duration_since(UNIX_EPOCH)?.as_nanos();
    let run = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    for stream in arrived.values_mut() {
        stream.write_all(format!("START {ns} {run}\n").as_bytes()).await?;
    }
    Ok(Start { at: start, run, listener: Some(listener) })
}

async fn follow(addr: &str, shard: Shard) -> anyhow::Result<Start> {
    // Worker 0 may not be up yet: try again until the barrier's timeout.
    let stream = loop {
        match TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let mut stream = BufReader::new(stream);
    stream.get_mut().write_all(format!("READY {shard}\n").as_bytes()).await?;
    let mut line = String::new();
    (&mut stream).take(MAX_LINE).read_line(&mut line).await?;
    let line = line.trim();
    if let Some(why) = line.strip_prefix("REFUSED ") {
        return Err(anyhow!("--barrier {addr}: worker 0 refused worker {shard}: {why}"));
    }
    let mut words = line.strip_prefix("START ").unwrap_or_default().split_whitespace();
    let ns: u64 = words
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow!("--barrier {addr}: worker 0 answered {line:?}"))?;
    let run = words.next().unwrap_or_default().to_owned();
    Ok(Start { at: UNIX_EPOCH + Duration::from_nanos(ns), run, listener: None })
}
