//! What several test files share: headless Chromium.

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
