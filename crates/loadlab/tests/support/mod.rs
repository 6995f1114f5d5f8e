//! What the test binaries share: the binary under test, fresh folders, the output of a run,
//! a free port, and headless Chromium with its screenshots.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `loadlab` binary built for these tests.
pub fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// A new empty folder, unique within this process (tests of one binary run side by side).
pub fn tempdir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("loadlab-test-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A port free a moment ago, for a process that must be told its port before it binds (worker
/// 0 of a barrier, an origin in a plan). Prefer port 0 and reading the address back.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs headless Chromium with `args` and its own profile directory (pages 1200 x 1800).
pub fn chromium(args: &[&str], profile: &Path) -> Output {
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
pub struct Shot {
    pub buf: Vec<u8>,
    /// Bytes per row, and per pixel.
    pub line_size: usize,
    pub channels: usize,
    pub width: u32,
    pub height: u32,
}

/// Screenshots `url` (after 5 s of virtual time) into `dir/name.png` and decodes it.
pub fn screenshot(url: &str, dir: &Path, name: &str) -> Shot {
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
