//! What several test files share: headless Chromium and its screenshots.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

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
