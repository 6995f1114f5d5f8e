//! What the test binaries share: the binary under test, fresh folders, the output of a run,
//! a free port, and headless Chromium with its screenshots.
#![allow(dead_code)]

pub(crate) mod collector;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `loadlab` binary built for these tests.
pub(crate) fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// A new empty folder, unique within this process (tests of one binary run side by side),
/// removed when the test that made it passes and kept, for a look, when it fails.
pub(crate) fn tempdir(name: &str) -> TempDir {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("loadlab-test-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// A test's folder (see [`tempdir`]); it reads as the `Path` it holds.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// The folder, kept after the test (one shared by every test of the process).
    pub(crate) fn keep(self) -> PathBuf {
        let d = self.0.clone();
        std::mem::forget(self);
        d
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A port free a moment ago, for a process that must be told its port before it binds (worker
/// 0 of a barrier, an origin in a plan). Prefer port 0 and reading the address back.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs headless Chromium with `args` and its own profile directory (pages 1200 x 1800).
pub(crate) fn chromium(args: &[&str], profile: &Path) -> Output {
    let bin = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .expect("Chromium is needed for this test (scripts/test-all installs Debian's chromium)");
    Command::new(bin)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--hide-scrollbars", "--window-size=1200,1800"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .unwrap()
}

/// A screenshot's pixels.
pub(crate) struct Shot {
    pub buf: Vec<u8>,
    /// Bytes per row, and per pixel.
    pub line_size: usize,
    pub channels: usize,
    pub width: u32,
    pub height: u32,
}

/// Screenshots `url` (after 5 s of virtual time) into `dir/name.png` and decodes it.
pub(crate) fn screenshot(url: &str, dir: &Path, name: &str) -> Shot {
    let file = dir.join(format!("{name}.png"));
    let o = chromium(
        &["--virtual-time-budget=5000", &format!("--screenshot={}", file.display()), url],
        &dir.join(format!("profile-{name}")),
    );
    assert!(file.exists(), "no screenshot: {}", String::from_utf8_lossy(&o.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&file).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    Shot {
        channels: info.line_size / info.width as usize,
        line_size: info.line_size,
        width: info.width,
        height: info.height,
        buf,
    }
}

/// A command running in the background, its stdout and stderr gathered as they come.
pub(crate) struct Watched {
    pub child: std::process::Child,
    out: std::sync::Arc<std::sync::Mutex<String>>,
    err: std::sync::Arc<std::sync::Mutex<String>>,
    /// Set when stderr reached its end (the pipe closed).
    err_done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Watched {
    /// Starts `cmd` with its stdout and stderr piped to us.
    pub(crate) fn spawn(mut cmd: Command) -> Watched {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let gather = |mut from: Box<dyn std::io::Read + Send>| {
            let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (into, ended) = (std::sync::Arc::clone(&text), std::sync::Arc::clone(&done));
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = from.read(&mut buf) {
                    into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                }
                ended.store(true, std::sync::atomic::Ordering::Release);
            });
            (text, done)
        };
        let (out, _) = gather(Box::new(child.stdout.take().unwrap()));
        let (err, err_done) = gather(Box::new(child.stderr.take().unwrap()));
        Watched { child, out, err, err_done }
    }

    pub(crate) fn stdout(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    pub(crate) fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    /// Waits (at most a minute) until `ready` holds, failing with what the command said.
    pub(crate) fn wait_until(&mut self, what: &str, mut ready: impl FnMut(&Watched) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !ready(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("ended ({status}) before {what}: {}", self.stderr());
            }
            assert!(std::time::Instant::now() < deadline, "never {what}: {}", self.stderr());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub(crate) fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    /// Waits for the exit (at most a minute; killed past that) and gives its code.
    pub(crate) fn exit_code(&mut self) -> Option<i32> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("did not end within a minute: {}", self.stderr());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Watched {
    /// Waits for the exit, then for the last of stderr (at most 10 s more: a child of its own
    /// may hold the pipe), and gives the exit code and all it said.
    pub(crate) fn finish(&mut self) -> (Option<i32>, String) {
        let code = self.exit_code();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !self.err_done.load(std::sync::atomic::Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        (code, self.stderr())
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `loadlab origin` on a port of its choosing; its URL once it serves.
/// Waits (at most a minute) until `server` has received `n` requests from `child`, failing if the
/// child ends first: a readiness wait for a load already flowing, not a guess at start-up time.
pub(crate) fn until_received(server: &attack::testing::TestServer, n: usize, child: &mut std::process::Child) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.received() < n {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("ended ({status}) after {} of {n} requests", server.received());
        }
        assert!(std::time::Instant::now() < deadline, "{} of {n} requests within a minute", server.received());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub(crate) fn origin(recipe: Option<&Path>) -> (Watched, String) {
    let mut cmd = loadlab();
    cmd.args(["origin", "--listen", "127.0.0.1:0"]);
    if let Some(r) = recipe {
        cmd.arg("--recipe").arg(r);
    }
    let mut o = Watched::spawn(cmd);
    o.wait_until("serving", |w| w.stderr().contains("serving on http://"));
    let err = o.stderr();
    let url = err.split("serving on ").nth(1).unwrap().split_whitespace().next().unwrap().to_owned();
    (o, url)
}

/// Requests an origin has answered so far (from its admin metrics).
pub(crate) fn origin_served(url: &str) -> u64 {
    origin_metric(url, "loadlab_origin_response_seconds_count")
}

/// One of an origin's admin metrics without labels; 0 while it cannot be read.
pub(crate) fn origin_metric(url: &str, name: &str) -> u64 {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return 0 };
    let _ = write!(s, "GET /_admin/metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let prefix = format!("{name} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// The pid of the process whose command line holds every one of `words`, other than this one.
pub(crate) fn pid_of(words: &[&str]) -> Option<i32> {
    std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
        let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
        let c = std::fs::read(e.path().join("cmdline")).ok()?;
        let c = String::from_utf8_lossy(&c).replace('\0', " ");
        (pid != std::process::id() as i32 && words.iter().all(|w| c.contains(w))).then_some(pid)
    })
}

/// `lab run PLAN --out OUT` in the background, its stderr kept.
pub(crate) fn spawn_lab(plan: &Path, out: &Path) -> std::process::Child {
    loadlab().args(["lab", "run"]).arg(plan).arg("--out").arg(out).stderr(std::process::Stdio::piped()).spawn().unwrap()
}

/// Waits (at most a minute) until `path` exists.
pub(crate) fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub(crate) fn signal(pid: i32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
}
