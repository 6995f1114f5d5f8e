//! The workers of a sharded attack meet before they start: worker 0 listens, the others connect
//! and say who they are, and once all N are there worker 0 sends every one the same start time,
//! a second ahead, so their schedules line up to the clock's precision. A worker that starts
//! after that time sends its overdue hits late, and its lag says so.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use attack::Shard;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// How far ahead of the last arrival the start is set: time to tell everyone.
const LEAD: Duration = Duration::from_secs(1);

/// Meets the other workers at `addr` (worker 0 listens there) and returns the shared start.
pub async fn meet(addr: &str, shard: Shard, timeout: Duration) -> anyhow::Result<SystemTime> {
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

async fn lead(addr: &str, shard: Shard) -> anyhow::Result<SystemTime> {
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
    let mut arrived: BTreeMap<u64, BufReader<TcpStream>> = BTreeMap::new();
    while (arrived.len() as u64) < shard.count - 1 {
        let (stream, _) = listener.accept().await?;
        let mut stream = BufReader::new(stream);
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_line(&mut line)).await;
        let Ok(Ok(_)) = read else { continue };
        // "READY I/N": a worker of this run, not seen yet.
        match line.trim().strip_prefix("READY ").and_then(|s| s.parse::<Shard>().ok()) {
            Some(s) if s.count == shard.count && s.index != 0 => {
                arrived.insert(s.index, stream);
            }
            _ => {
                let _ = stream.get_mut().write_all(b"REFUSED not a worker of this run\n").await;
            }
        }
    }
    let start = SystemTime::now() + LEAD;
    let ns = start.duration_since(UNIX_EPOCH)?.as_nanos();
    for stream in arrived.values_mut() {
        stream.get_mut().write_all(format!("START {ns}\n").as_bytes()).await?;
    }
    Ok(start)
}

async fn follow(addr: &str, shard: Shard) -> anyhow::Result<SystemTime> {
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
    stream.read_line(&mut line).await?;
    let ns: u64 = line
        .trim()
        .strip_prefix("START ")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow!("--barrier {addr}: worker 0 answered {:?}", line.trim()))?;
    Ok(UNIX_EPOCH + Duration::from_nanos(ns))
}
