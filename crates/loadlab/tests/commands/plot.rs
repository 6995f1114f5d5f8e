//! `loadlab plot` end to end: results from a real attack, drawn as HTML (checked in headless
//! Chromium: every chart drew, no script errors), SVG and PNG.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::support::{chromium, loadlab, screenshot, stderr, tempdir, Shot};
use attack::testing::{Behaviour, TestServer};

/// Two runs against a server that fails one target: results files in `dir`.
async fn results(dir: &Path) -> Vec<PathBuf> {
    let ok = TestServer::start(Behaviour { delay: Duration::from_millis(5), ..Default::default() }).await;
    let failing = TestServer::start(Behaviour { status: 503, ..Default::default() }).await;
    let mut files = Vec::new();
    for (name, rate) in [("fast", "150"), ("slow", "100")] {
        let file = dir.join(format!("{name}.llr"));
        let targets = format!("GET {}\n\nGET {}\n", ok.url("/a"), failing.url("/b"));
        let f = file.clone();
        let name = name.to_owned();
        let rate = rate.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut child = loadlab()
                .args(["attack", "--name", &name, "--rate", &rate, "--duration", "2s", "-o"])
                .arg(&f)
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), targets.as_bytes()).unwrap();
            drop(child.stdin.take());
            assert!(child.wait().unwrap().success());
        })
        .await
        .unwrap();
        files.push(file);
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_draws_every_chart_in_headless_chromium() {
    let dir = tempdir("html");
    let files = results(&dir).await;
    let html = dir.join("report.html");
    let o = loadlab().args(["plot", "--title", "two runs", "-o"]).arg(&html).args(&files).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("fast (300 requests)") && page.contains("slow (200 requests)"));

    let url = format!("file://{}", html.display());
    let dom = chromium(&["--virtual-time-budget=5000", "--dump-dom", &url], &dir.join("profile-dom"));
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(dom.contains(r#"<body data-drawn="4""#), "charts not drawn: {}", &dom[..dom.len().min(400)]);
    assert!(!dom.contains("data-errors"), "script errors: {dom}");
    let boxes: Vec<[u32; 4]> = dom
        .split("data-box=\"")
        .skip(1)
        .map(|s| {
            let v: Vec<u32> = s.split('"').next().unwrap().split(',').map(|n| n.parse().unwrap()).collect();
            [v[0], v[1], v[2], v[3]]
        })
        .collect();
    assert_eq!(boxes.len(), 4);

    let Shot { buf, line_size, channels, width, height } = screenshot(&url, &dir, "shot");
    for (i, [x, y, w, h]) in boxes.iter().enumerate() {
        // Inside the plot area (past the axis labels): coloured data pixels, not only white and grey.
        let mut coloured = 0;
        for py in (y + 15)..(y + h - 40).min(height) {
            for px in (x + 70)..(x + w - 20).min(width) {
                let o = py as usize * line_size + px as usize * channels;
                let (r, g, b) = (buf[o] as i32, buf[o + 1] as i32, buf[o + 2] as i32);
                if (r - g).abs() > 40 || (g - b).abs() > 40 || (r - b).abs() > 40 {
                    coloured += 1;
                }
            }
        }
        assert!(coloured > 200, "chart {i} at {x},{y} drew {coloured} coloured pixels");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn svg_and_png_without_a_browser() {
    let dir = tempdir("svg");
    let files = results(&dir).await;
    let svg = dir.join("charts.svg");
    let o = loadlab().args(["plot", "-o"]).arg(&svg).args(&files).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    for title in [
        "Latency over time",
        "Responses per second by status (by completion time)",
        "Throughput per second",
        "Latency by percentile (HDR)",
    ] {
        assert!(text.contains(title), "{title}");
    }
    assert!(text.contains(">503<"), "the failing target's status is in the legend");
    // Runs that did not run together are not added up: one bar per run, topped in its colour.
    assert_eq!(text.matches("(bar top)<").count(), 2, "each run has its bars");
    // To stdout: HTML by default, or the format asked for.
    let o = loadlab().args(["plot", "-o", "-"]).args(&files).output().unwrap();
    assert!(o.status.success() && o.stdout.starts_with(b"<!doctype html>"), "{}", stderr(&o));
    let o = loadlab().args(["plot", "-o", "-", "--format", "svg", "--chart", "hdr"]).args(&files).output().unwrap();
    assert!(o.status.success() && o.stdout.starts_with(b"<svg"), "{}", stderr(&o));
    let png = dir.join("hdr.png");
    let o = loadlab().args(["plot", "--chart", "hdr", "-o"]).arg(&png).args(&files).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
}

#[test]
fn bad_input_exits_2() {
    let dir = tempdir("bad");
    let junk = dir.join("junk.llr");
    std::fs::write(&junk, "not results").unwrap();
    let o = loadlab().args(["plot", "-o"]).arg(dir.join("x.html")).arg(&junk).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), format!("loadlab: {}: not a loadlab results file (bad magic at byte 0)\n", junk.display()));
    let o = loadlab().args(["plot", "-o", "x.pdf"]).arg(&junk).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("must end in .html, .svg or .png"));
    let o = loadlab().args(["plot", "--chart", "pie", "-o", "x.svg"]).arg(&junk).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Pixels within 12 of `hex` in every channel.
fn count_colour(buf: &[u8], line: usize, channels: usize, area: [u32; 4], hex: &str) -> usize {
    let want: Vec<i32> = (0..3).map(|k| i32::from_str_radix(&hex[1 + 2 * k..3 + 2 * k], 16).unwrap()).collect();
    let [x, y, w, h] = area;
    let mut n = 0;
    for py in y..y + h {
        for px in x..x + w {
            let o = py as usize * line + px as usize * channels;
            if (0..3).all(|k| (buf[o + k] as i32 - want[k]).abs() <= 12) {
                n += 1;
            }
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_runs_stay_distinct_on_screen() {
    let dir = tempdir("twelve");
    let mut servers = Vec::new();
    for k in 0..12u64 {
        servers
            .push(TestServer::start(Behaviour { delay: Duration::from_millis(2 + 3 * k), ..Default::default() }).await);
    }
    let mut children = Vec::new();
    let mut files = Vec::new();
    for (k, server) in servers.iter().enumerate() {
        let file = dir.join(format!("run{k:02}.llr"));
        let child = loadlab()
            .args(["attack", "--name", &format!("run{k:02}"), "--rate", "20", "--duration", "2s", "-o"])
            .arg(&file)
            .arg(server.url("/"))
            .spawn()
            .unwrap();
        children.push(child);
        files.push(file);
    }
    tokio::task::spawn_blocking(move || {
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
    })
    .await
    .unwrap();
    let html = dir.join("twelve.html");
    let o = loadlab().args(["plot", "--chart", "latency", "-o"]).arg(&html).args(&files).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let url = format!("file://{}", html.display());
    let dom = chromium(&["--virtual-time-budget=5000", "--dump-dom", &url], &dir.join("profile-dom"));
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(dom.contains(r#"<body data-drawn="1""#) && !dom.contains("data-errors"), "{}", &dom[..dom.len().min(400)]);
    let b: Vec<u32> = dom
        .split("data-box=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect();
    let Shot { buf, line_size, channels, height, .. } = screenshot(&url, &dir, "twelve");
    // The plot area only (past the axis labels), so legend swatches do not count.
    let area = [b[0] + 66, b[1] + 14, b[2] - 84, (b[3] - 52).min(height - b[1] - 14)];
    let palette = report::chart::PALETTE;
    let seen: Vec<(usize, &str, usize)> = palette[..12]
        .iter()
        .enumerate()
        .map(|(k, c)| (k, *c, count_colour(&buf, line_size, channels, area, c)))
        .collect();
    let missing: Vec<_> = seen.iter().filter(|(_, _, n)| *n < 30).collect();
    assert!(missing.is_empty(), "runs without their own colour on screen: {missing:?} (all: {seen:?})");
}
