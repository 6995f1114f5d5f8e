//! The systems a lab runs against: origin simulators it embeds, and commands it starts, waits
//! for, and stops (the whole process group, so nothing is left behind).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How long a started command may take to become ready.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped command may take to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A target as it ran.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TargetRun {
    pub name: String,
    pub url: String,
    /// What it was: a running system, a started command, an embedded simulator.
    pub kind: String,
    pub sampled: bool,
    /// Where its CPU and memory were read, when not from its processes here (its exporter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<scrape::Provenance>,
    /// How its steps trust it over TLS: the plan's settings, and an embedded origin's own
    /// certificate when it serves HTTP/3.
    #[serde(skip)]
    pub tls: attack::TlsOptions,
    /// Its requests carried a W3C `traceparent` (each step's key in its results file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub traces: bool,
}

/// Why a system could not be brought up.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

/// An origin simulator served in-process.
pub(crate) struct Embedded {
    pub sim: Arc<origin::Simulation>,
    pub addr: std::net::SocketAddr,
    /// Serving HTTP/3 too (on the same port number over UDP): its certificate, made on the spot.
    pub h3_cert_pem: Option<String>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Embedded {
    /// Serves a simulator on `listen` (`127.0.0.1:0` when none) with `recipe` loaded: plain
    /// HTTP/1.1 and h2c over TCP, and with `h3` HTTP/3 on the same port number over UDP.
    pub(crate) async fn start(listen: Option<&str>, recipe: Option<&Path>, h3: bool) -> Result<Embedded, StartError> {
        let sim = origin::Simulation::new().await;
        if let Some(path) = recipe {
            load_recipe(&sim, path).await?;
        }
        let addr: std::net::SocketAddr = match listen {
            None => ([127, 0, 0, 1], 0).into(),
            Some(l) => l.parse().map_err(|_| StartError(format!("origin listen {l:?}: expected IP:PORT")))?,
        };
        let listener = origin::bind(addr).map_err(|e| StartError(format!("origin listen {addr}: {e}")))?;
        let addr = listener.local_addr().map_err(|e| StartError(e.to_string()))?;
        let stop = CancellationToken::new();
        let admin = origin::AdminPolicy { token: None, enabled: true, loopback_only: true };
        let (sim2, until) = (Arc::clone(&sim), stop.clone().cancelled_owned());
        let (task, h3_cert_pem) = if h3 {
            let limits = origin::DEFAULT_LIMITS;
            let (quic, pem) = origin::quic_endpoint_self_signed(addr, limits)
                .map_err(|e| StartError(format!("origin HTTP/3 on udp {addr}: {e}")))?;
            (tokio::spawn(origin::serve_with_h3(listener, quic, sim2, admin, limits, None, until)), Some(pem))
        } else {
            (tokio::spawn(origin::serve(listener, sim2, admin, None, until)), None)
        };
        Ok(Embedded { sim, addr, h3_cert_pem, stop, task })
    }

    pub(crate) async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Replaces the simulator's recipes with the file's (the default route stays underneath).
pub(crate) async fn load_recipe(sim: &origin::Simulation, path: &Path) -> Result<(), StartError> {
    let text = std::fs::read(path).map_err(|e| StartError(format!("{}: {e}", path.display())))?;
    sim.restart().await;
    sim.upload(&text).await.map_err(|e| StartError(format!("{}: {e}", path.display())))
}

/// A command under test, in its own process group.
pub(crate) struct Started {
    pub name: String,
    child: Child,
    log: PathBuf,
}

/// How a started command is known to be ready: its `ready` URL answers 2xx (over TLS as the
/// target's settings say), or without one, its url's port accepts connections.
#[derive(Clone, Copy)]
pub(crate) struct Readiness<'a> {
    pub probe: Option<&'a str>,
    pub tls: &'a attack::TlsOptions,
}

/// Whether `program` can be run from `dir` (a path, or a name on PATH): a command wrapped to run
/// on other CPUs must still fail as itself when it is not there.
pub(crate) fn found(program: &str, dir: &Path) -> bool {
    if program.contains('/') {
        return dir.join(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
}

impl Started {
    /// Starts `argv` in `dir` (on `placement`'s CPUs for targets), its output appended to `log`,
    /// and waits until it is ready.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn start(
        name: &str,
        argv: &[String],
        placement: Option<&crate::run::placement::Placement>,
        dir: &Path,
        log: &Path,
        url: &str,
        env: &[(String, String)],
        ready: Readiness<'_>,
        stop: &CancellationToken,
    ) -> Result<Started, StartError> {
        use std::os::unix::process::CommandExt;
        let bad = |m: String| StartError(format!("target {name}: {m}"));
        // Another server on the port would be measured in its place, and the command would die
        // at once with "Address already in use".
        if let Some(port) = answering_port(url).await {
            let holder = listener_pid(port).map_or(String::new(), |(pid, cmd)| format!(" by pid {pid} ({cmd})"));
            return Err(bad(format!(
                "port {port} of {url} already answers (held{holder}): the lab would measure that server, not \
                 the one it starts; stop it or give the target another port"
            )));
        }
        let out = std::fs::File::create(log).map_err(|e| bad(format!("{}: {e}", log.display())))?;
        let err = out.try_clone().map_err(|e| bad(e.to_string()))?;
        // On the targets' CPUs, where the command is there to run (else it fails as itself).
        let run = match placement {
            Some(p) if found(&argv[0], dir) => p.wrap(argv),
            _ => argv.to_vec(),
        };
        let child = Command::new(&run[0])
            .args(&run[1..])
            .current_dir(dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| bad(format!("cannot start {:?}: {e}", argv[0])))?;
        let mut started = Started { name: name.to_owned(), child, log: log.to_path_buf() };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = started.child.try_wait() {
                return Err(bad(format!("{:?} exited ({status}) before it was ready; see {}", argv[0], log.display())));
            }
            if is_ready(url, ready.probe, ready.tls).await {
                return Ok(started);
            }
            if Instant::now() >= deadline {
                started.stop();
                return Err(bad(format!("not ready after {READY_TIMEOUT:?}; see {}", log.display())));
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.cancelled() => {
                    started.stop();
                    return Err(bad("interrupted while waiting for it to be ready".into()));
                }
            }
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How the command ended, if it has: `exit status: 1`, `signal: 9 (SIGKILL)`.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// The last lines of the command's output.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        let text = String::from_utf8_lossy(&text[text.len().saturating_sub(8192)..]).into_owned();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// SIGTERM to the process group, SIGKILL after a grace period; waits for the child.
    pub(crate) fn stop(&mut self) {
        profile::process::stop(&mut self.child, nix::sys::signal::Signal::SIGTERM, true, STOP_GRACE);
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// The port of `url` when something already accepts connections on it.
async fn answering_port(url: &str) -> Option<u16> {
    let uri = attack::parse_url(url).ok()?;
    let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
    is_ready(url, None, &attack::TlsOptions::default()).await.then_some(port)
}

/// The pid and command of the process listening on TCP `port`, from /proc (Linux; None when
/// it cannot be told, e.g. another user's process).
pub(crate) fn listener_pid(port: u16) -> Option<(u32, String)> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEXIP:HEXPORT; state 0A is LISTEN; field 9 is the inode.
            let listening = f.get(3) == Some(&"0A");
            let on_port = f.get(1).and_then(|a| a.rsplit_once(':')).and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if listening && on_port == Some(port) {
                inodes.extend(f.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| inodes.iter().any(|i| l.as_os_str() == i.as_str())) {
                let cmd = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                return Some((pid, cmd.trim().to_owned()));
            }
        }
    }
    None
}

async fn is_ready(url: &str, ready: Option<&str>, tls: &attack::TlsOptions) -> bool {
    let opts = attack::ClientOptions {
        timeout: Duration::from_secs(1),
        redirects: None,
        tls: tls.clone(),
        ..Default::default()
    };
    match ready {
        Some(r) => attack::fetch(r, &[], opts).await.is_ok_and(|f| (200..300).contains(&f.status)),
        None => {
            let Ok(uri) = attack::parse_url(url) else { return false };
            let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
            let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
            tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect((host.as_str(), port)))
                .await
                .is_ok_and(|c| c.is_ok())
        }
    }
}

/// A command's words with `{loadlab}` replaced by this program's path, so a plan can start
/// loadlab's own origin simulator wherever loadlab is installed, and `{port}` by `port`.
pub(crate) fn expand_argv(argv: &[String], port: Option<u16>) -> Vec<String> {
    let me = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "loadlab".into());
    argv.iter().map(|a| fill_port(&a.replace("{loadlab}", &me), port)).collect()
}

use crate::plan::fill_port;

/// A loopback port nobody listens on now, from the kernel (bind port 0, read it back). The
/// socket is closed before the command binds it; the start refuses a port that answers by then.
pub(crate) fn free_loopback_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// Where a command's output goes: `samples/NAME.log`.
pub(crate) fn log_path(samples: &Path, name: &str) -> PathBuf {
    samples.join(format!("{}.log", crate::plan::matrix::slug(name)))
}
