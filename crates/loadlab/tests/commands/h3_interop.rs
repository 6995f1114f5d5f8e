//! HTTP/3 against a QUIC stack nobody here wrote (aioquic, from PyPI): `attack --http3` against
//! an aioquic server, and aioquic's client against `origin --http3`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::{free_port, loadlab, stderr, stdout, tempdir};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop").join(name)
}

/// A certificate for 127.0.0.1 and its key, as PEM files.
fn certificate(d: &Path) -> (PathBuf, PathBuf) {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (cert, key) = (d.join("cert.pem"), d.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

/// Stops a child however the test ends: SIGTERM, then SIGKILL if it is still there after 5 s (a
/// shell that started the tests in the background leaves SIGINT ignored in its children).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0.id() as i32), nix::sys::signal::SIGTERM);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while matches!(self.0.try_wait(), Ok(None)) {
            if std::time::Instant::now() > deadline {
                let _ = self.0.kill();
                let _ = self.0.wait();
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Waits for `child` to write a line containing `what` on the given stream (its first lines).
fn wait_for(lines: &mut dyn BufRead, what: &str) {
    for _ in 0..20 {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap() == 0 {
            panic!("exited before saying {what:?}");
        }
        if line.contains(what) {
            return;
        }
    }
    panic!("never said {what:?}");
}

fn report(results: &Path) -> serde_json::Value {
    let o = loadlab().args(["report", "--type", "json"]).arg(results).output().unwrap();
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn attack_over_h3_against_aioquic_and_aioquic_against_origin() {
    let d = tempdir("h3-interop");
    let (cert, key) = certificate(&d);

    // loadlab's client against an aioquic server.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Running(
        Command::new("python3")
            .arg(script("h3_server.py"))
            .args([&cert, &key])
            .arg(port.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 with aioquic (scripts/test-all installs it)"),
    );
    wait_for(&mut BufReader::new(server.0.stdout.take().unwrap()), "ready");
    let out = d.join("aioquic.llr");
    let o = loadlab()
        .arg("attack")
        .arg(format!("https://127.0.0.1:{port}/hello"))
        .args(["--http3", "--connections", "2", "--streams", "4", "--requests", "200", "--root-certs"])
        .arg(&cert)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json = report(&out);
    assert_eq!(json["status_codes"]["200"], 200, "{json}");
    assert_eq!(json["bytes_in"]["total"], 200 * "aioquic GET /hello ".len(), "{json}");

    // The request as aioquic's QPACK decoder read it: method, body, a header.
    std::fs::write(d.join("body"), "ping").unwrap();
    let attack = |path: &str, extra: &[&str]| {
        let out = d.join("one.llr");
        let o = loadlab()
            .arg("attack")
            .arg(format!("https://127.0.0.1:{port}{path}"))
            .args(["--http3", "--connections", "1", "--requests", "3", "--root-certs"])
            .arg(&cert)
            .args(extra)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.code().is_some_and(|c| c == 0 || c == 3), "{}", stderr(&o));
        report(&out)
    };
    let body = d.join("body");
    let json = attack("/echo", &["--method", "POST", "-H", "x-echo: hi", "--body", body.to_str().unwrap()]);
    assert_eq!(json["bytes_in"]["total"], 3 * "aioquic POST /echo ping hi".len(), "{json}");
    // Responses as aioquic's encoder wrote them: a status outside QPACK's static table, a
    // redirect followed by its location, a gzip body decoded.
    let json = attack("/status/201", &[]);
    assert_eq!(json["status_codes"]["201"], 3, "{json}");
    let json = attack("/moved", &[]);
    assert_eq!(
        (&json["status_codes"]["200"], &json["bytes_in"]["total"]),
        (&3.into(), &(3 * "aioquic GET /hello ".len()).into()),
        "{json}"
    );
    let json = attack("/gzip", &["--compressed"]);
    assert_eq!(json["bytes_in_decoded"]["total"], 3 * "aioquic GET /gzip ".len(), "{json}");
    drop(server);

    // aioquic's client against the origin's HTTP/3.
    let port = free_port();
    std::fs::write(d.join("r.json"), r#"{"route": "/*", "body": "hello", "stages": [{"at": 0, "status": 200}]}"#)
        .unwrap();
    let mut origin = Running(
        loadlab()
            .args(["origin", "--listen", &format!("127.0.0.1:{port}"), "--http3", "--tls-cert"])
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .arg("--recipe")
            .arg(d.join("r.json"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_for(&mut BufReader::new(origin.0.stderr.take().unwrap()), "serving HTTP/3");
    let o = Command::new("python3")
        .arg(script("h3_client.py"))
        .arg(port.to_string())
        .arg(&cert)
        .args(["/x", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "200 hello\n200 hello\n200 hello\n");
    drop(origin);
}
