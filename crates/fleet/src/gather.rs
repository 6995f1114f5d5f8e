//! `--collect`: the workers send their results files to worker 0 when they are done, so a run
//! needs no volume shared by its pods (most clusters offer none that many pods can write).
//!
//! A worker connects to the barrier's address again and says `RESULTS I/N RUN BYTES NAME`, then
//! sends the file's bytes; worker 0 writes them beside its own results (a temporary name, renamed
//! once whole) and answers `OK` or `REFUSED why`. Only a worker of this run (it knows the run id
//! handed out at the start) may send, once per index, under a name of its own; the line is bounded
//! as the barrier's are, and a sender that stalls for `IDLE` is dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context};
use attack::Shard;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::barrier::{bounded_line, MAX_LINE, MAX_PENDING};

/// How long a sender may go without sending a byte.
const IDLE: Duration = Duration::from_secs(10);

/// Results files being received by worker 0.
pub struct Receiving {
    /// Indexes whose file arrived whole.
    received: Arc<Mutex<BTreeSet<u64>>>,
    done: tokio::sync::watch::Receiver<bool>,
    count: u64,
    /// Worker 0's own file, offered with the others once its run is over.
    own: (String, PathBuf),
    on_file: OnFile,
}

/// What a received file is handed to (the live view offers it for download).
pub type OnFile = Arc<dyn Fn(&str, &Path) + Send + Sync>;

/// `--collect`: worker 0 receives the others' results files while it runs; the others send
/// theirs when done.
pub enum Gathering {
    Receiving(Receiving),
    Sending { run: String, file: PathBuf },
}

impl Gathering {
    /// After the barrier: worker 0 (the one holding its listener) receives beside its `output`,
    /// handing each file to `on_file`; the others will send `output`.
    pub fn start(start: crate::barrier::Start, shard: Shard, output: &Path, on_file: OnFile) -> Gathering {
        let file = output.to_path_buf();
        let Some(listener) = start.listener else { return Gathering::Sending { run: start.run, file } };
        let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).map_or_else(|| ".".into(), Path::to_path_buf);
        let own = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Gathering::Receiving(receive(listener, shard, start.run, dir, own, on_file))
    }

    /// After this worker's run: worker 0 waits up to `timeout` for the others' files (offering
    /// its own), the others send theirs to `addr`. A set left incomplete is
    /// [`crate::collect::Incomplete`].
    pub async fn finish(self, addr: &str, shard: Shard, timeout: Duration) -> anyhow::Result<()> {
        match self {
            Gathering::Receiving(r) => {
                let missing = r.wait(timeout).await;
                if missing.is_empty() {
                    eprintln!("loadlab: --collect: the results of all {} workers are here", shard.count);
                    return Ok(());
                }
                let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
                // Said at once: the live view may linger on for the files that did arrive.
                eprintln!("loadlab: --collect: no results from worker {} within {timeout:?}", names.join(", "));
                Err(anyhow::Error::new(crate::collect::Incomplete("--collect: the gathered set is incomplete".into())))
            }
            Gathering::Sending { run, file } => {
                send(addr, shard, &run, &file).await?;
                eprintln!("loadlab: --collect: results sent to worker 0 at {addr}");
                Ok(())
            }
        }
    }
}

/// A file name a worker may send: its own results' name, no directory, nothing hidden.
fn valid_name(name: &str) -> bool {
    (1..=200).contains(&name.len())
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Worker 0: receives the other workers' files on `listener` into `dir`, in the background.
/// `own` is worker 0's own file name there, which no one may send.
pub fn receive(
    listener: TcpListener,
    shard: Shard,
    run: String,
    dir: PathBuf,
    own: String,
    on_file: OnFile,
) -> Receiving {
    let received = Arc::new(Mutex::new(BTreeSet::new()));
    let claimed = Arc::new(Mutex::new(BTreeSet::new()));
    let (tell, done) = tokio::sync::watch::channel(shard.count <= 1);
    let pending = Arc::new(tokio::sync::Semaphore::new(MAX_PENDING));
    let state = Arc::clone(&received);
    let own_file = (own.clone(), dir.join(&own));
    let offer = Arc::clone(&on_file);
    tokio::spawn(async move {
        let tell = Arc::new(tell);
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors, say: wait rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let Ok(permit) = Arc::clone(&pending).try_acquire_owned() else { continue };
            let upload =
                Upload { shard, run: run.clone(), dir: dir.clone(), own: own.clone(), claimed: Arc::clone(&claimed) };
            let (received, tell, on_file) = (Arc::clone(&state), Arc::clone(&tell), Arc::clone(&on_file));
            tokio::spawn(async move {
                if let Some((index, name, path)) = upload.take(stream).await {
                    on_file(&name, &path);
                    let mut got = received.lock().expect("received");
                    got.insert(index);
                    if got.len() as u64 + 1 >= shard.count {
                        let _ = tell.send(true);
                    }
                }
                drop(permit);
            });
        }
    });
    Receiving { received, done, count: shard.count, own: own_file, on_file: offer }
}

impl Receiving {
    /// Waits up to `timeout` for every worker's file; returns the workers whose file is missing.
    pub async fn wait(mut self, timeout: Duration) -> Vec<Shard> {
        (self.on_file)(&self.own.0, &self.own.1);
        let _ = tokio::time::timeout(timeout, self.done.wait_for(|d| *d)).await;
        let got = self.received.lock().expect("received");
        (1..self.count).filter(|i| !got.contains(i)).map(|i| Shard { index: i, count: self.count }).collect()
    }
}

/// One connection to worker 0 after the start.
struct Upload {
    shard: Shard,
    run: String,
    dir: PathBuf,
    own: String,
    /// Indexes being or already received: a second sender of one index is refused.
    claimed: Arc<Mutex<BTreeSet<u64>>>,
}

impl Upload {
    /// Reads one file; answers the sender; `Some` when it was written whole.
    async fn take(self, stream: TcpStream) -> Option<(u64, String, PathBuf)> {
        let mut reader = BufReader::new(stream);
        let line = bounded_line(&mut reader).await?;
        let (index, name, bytes) = match self.check(line.trim()) {
            Ok(ok) => ok,
            Err(why) => {
                let _ = reader.get_mut().write_all(format!("REFUSED {why}\n").as_bytes()).await;
                return None;
            }
        };
        let path = self.dir.join(&name);
        let part = self.dir.join(format!(".{name}.part"));
        let written = copy_exactly(&mut reader, &part, bytes).await;
        let written = match written {
            Ok(()) => tokio::fs::rename(&part, &path).await.map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        let mut stream = reader.into_inner();
        match written {
            Ok(()) => {
                let _ = stream.write_all(b"OK\n").await;
                Some((index, name, path))
            }
            Err(why) => {
                let _ = tokio::fs::remove_file(&part).await;
                self.claimed.lock().expect("claimed").remove(&index);
                eprintln!(
                    "loadlab: --collect: the results of worker {index}/{} did not arrive: {why}",
                    self.shard.count
                );
                let _ = stream.write_all(format!("REFUSED {why}\n").as_bytes()).await;
                None
            }
        }
    }

    /// `RESULTS I/N RUN BYTES NAME`: the index, name and size, if this worker may send.
    fn check(&self, line: &str) -> Result<(u64, String, u64), String> {
        if line.starts_with("READY ") {
            return Err("the run has started".into());
        }
        let words: Vec<&str> = line.strip_prefix("RESULTS ").unwrap_or_default().split(' ').collect();
        let [who, run, bytes, name] = words[..] else { return Err("not a worker of this run".into()) };
        let who: Shard = who.parse().map_err(|_| "not a worker of this run".to_owned())?;
        if who.count != self.shard.count || who.index == 0 || run != self.run {
            return Err("not a worker of this run".into());
        }
        let bytes: u64 = bytes.parse().map_err(|_| format!("bad size {bytes:?}"))?;
        if !valid_name(name) || name == self.own {
            return Err(format!("bad file name {name:?}"));
        }
        if !self.claimed.lock().expect("claimed").insert(who.index) {
            return Err(format!("worker {who} has sent its results already"));
        }
        Ok((who.index, name.to_owned(), bytes))
    }
}

/// Copies exactly `bytes` from `from` into a new file `to`, dropping a sender idle for `IDLE`.
async fn copy_exactly<R: tokio::io::AsyncBufRead + Unpin>(from: &mut R, to: &Path, bytes: u64) -> Result<(), String> {
    let mut file = tokio::fs::File::create(to).await.map_err(|e| format!("{}: {e}", to.display()))?;
    let mut left = bytes;
    let mut buf = vec![0u8; 64 * 1024];
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = match tokio::time::timeout(IDLE, from.read(&mut buf[..want])).await {
            Ok(Ok(0)) => return Err(format!("the sender stopped {left} bytes short")),
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("the sender sent nothing for {IDLE:?}")),
        };
        file.write_all(&buf[..n]).await.map_err(|e| format!("{}: {e}", to.display()))?;
        left -= n as u64;
    }
    file.sync_all().await.map_err(|e| format!("{}: {e}", to.display()))
}

/// A worker other than 0: sends its finished results file to worker 0 at `addr`.
pub async fn send(addr: &str, shard: Shard, run: &str, file: &Path) -> anyhow::Result<()> {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !valid_name(&name) {
        return Err(anyhow!(
            "--collect: the results file's name {name:?} may hold only letters, digits, '.', '_' and '-'"
        ));
    }
    let bytes = tokio::fs::metadata(file).await.with_context(|| format!("--collect: {}", file.display()))?.len();
    let mut stream = TcpStream::connect(addr).await.with_context(|| format!("--collect: worker 0 at {addr}"))?;
    stream.write_all(format!("RESULTS {shard} {run} {bytes} {name}\n").as_bytes()).await?;
    let mut source = tokio::fs::File::open(file).await?;
    // Worker 0 may refuse before reading it all: its answer says why.
    let sent = tokio::io::copy(&mut source, &mut stream).await;
    let mut answer = String::new();
    let heard =
        tokio::time::timeout(IDLE * 6, (&mut BufReader::new(stream)).take(MAX_LINE).read_line(&mut answer)).await;
    match answer.trim() {
        "OK" => Ok(()),
        a => match (a.strip_prefix("REFUSED "), sent) {
            (Some(why), _) => {
                Err(anyhow!("--collect: worker 0 at {addr} refused the results of worker {shard}: {why}"))
            }
            (None, Err(e)) => Err(anyhow!("--collect: sending to worker 0 at {addr}: {e}")),
            (None, Ok(_)) => Err(anyhow!("--collect: worker 0 at {addr} did not confirm the results ({heard:?})")),
        },
    }
}
