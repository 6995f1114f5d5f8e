//! An OTLP/HTTP collector for tests: takes every export (protobuf, gzip or not) on loopback,
//! keeps every span decoded with opentelemetry-proto's types (the `spans` crate's decoder, with
//! no filter on whose trace it is), and answers 200, as a Collector's `otlphttp` receiver does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub(crate) struct Collector {
    pub(crate) port: u16,
    spans: Arc<Mutex<Vec<spans::Span>>>,
}

impl Collector {
    /// Listens on a free loopback port, a thread a connection, until the test process ends.
    pub(crate) fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Collector { port, spans }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn spans(&self) -> Vec<spans::Span> {
        self.spans.lock().unwrap().clone()
    }
}

/// Requests on one connection (keep-alive), each with a Content-Length body.
fn serve(stream: TcpStream, kept: &Mutex<Vec<spans::Span>>) {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let (mut length, mut gzip, mut line) = (None, false, String::new());
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(line.starts_with("POST "), "an export is a POST: {line:?}");
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let l = line.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("content-length:") {
                length = Some(v.trim().parse::<usize>().unwrap());
            }
            gzip |= l.starts_with("content-encoding:") && l.contains("gzip");
            assert!(!l.starts_with("transfer-encoding:"), "this collector reads Content-Length bodies only");
        }
        let mut body = vec![0; length.expect("a Content-Length")];
        reader.read_exact(&mut body).unwrap();
        let (spans, malformed) = spans::spans(&body, spans::Encoding::Protobuf, gzip).unwrap();
        assert_eq!(malformed, 0);
        kept.lock().unwrap().extend(spans);
        if out
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}
