//! `loadlab origin` out of file descriptors: it refuses what it cannot hold and serves again
//! as soon as descriptors come back, with no restart.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One GET on a new connection: the status line, or why not.
fn get(addr: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out);
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

#[test]
fn origin_survives_running_out_of_file_descriptors() {
    // 64 descriptors, soft and hard (the shell's ulimit sets both), so the binary cannot raise
    // them.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", r#"ulimit -n 64 && exec "$0" origin --listen 127.0.0.1:0"#, env!("CARGO_BIN_EXE_loadlab")])
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().rsplit("://").next().unwrap().to_owned();
    assert_eq!(get(&addr).unwrap(), "HTTP/1.1 200 OK");

    // 200 idle connections: most cannot be accepted.
    let held: Vec<TcpStream> = (0..200).filter_map(|_| TcpStream::connect(&addr).ok()).collect();
    // Once it has accepted what it can, it has no descriptor left to answer with.
    let started = Instant::now();
    while get(&addr).is_ok() {
        assert!(started.elapsed() < Duration::from_secs(10), "still answering with 200 connections held");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(held);

    // Descriptors come back as the held connections close: served again within seconds.
    let started = Instant::now();
    let status = loop {
        match get(&addr) {
            Ok(s) if !s.is_empty() => break s,
            _ if started.elapsed() > Duration::from_secs(10) => panic!("not serving 10 s after the flood ended"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    assert_eq!(status, "HTTP/1.1 200 OK");
    child.kill().unwrap();
    child.wait().unwrap();
}
