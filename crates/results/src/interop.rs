//! vegeta's result encodings: export records as vegeta JSON lines or CSV rows (so vegeta's own
//! tools and spreadsheets read them), and import vegeta JSON or CSV results into a run.

use std::collections::HashMap;
use std::io::{self, Read, Write};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;

use crate::codec::Writer;
use crate::consumer::{Consumer, Entry};
use crate::error::{Error, ErrorKind};
use crate::record::RunEnd;
use crate::record::{Record, RunHeader};

/// vegeta's results are in completion order, so send times may go back by up to a request's
/// latency; an imported run's origin is placed this far before its first result.
pub(crate) const IMPORT_ORIGIN_SLACK_NS: u64 = 120_000_000_000;

/// A record with everything an export needs resolved.
pub struct Exported<'a> {
    pub header: &'a RunHeader,
    pub record: &'a Record,
    pub target: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The key of the run's trace ids, when its requests carried `traceparent`.
    pub trace: Option<crate::trace::TraceKey>,
}

impl Exported<'_> {
    fn timestamp_ns(&self) -> u64 {
        self.header.start_unix_ns + self.record.scheduled_us * 1000
    }

    fn method_url(&self) -> (&str, &str) {
        match self.target.and_then(|t| t.split_once(' ')) {
            Some((m, u)) => (m, u),
            None => ("", ""),
        }
    }

    /// The error text as vegeta puts it: the status line for unsuccessful statuses, else the
    /// transport error, else empty.
    fn error_text(&self) -> &str {
        self.error.unwrap_or("")
    }
}

/// Formats ns since the epoch as RFC 3339 with nanoseconds, UTC.
pub fn rfc3339_nanos(ns: u64) -> String {
    let dt =
        DateTime::<Utc>::from_timestamp((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as u32).unwrap_or_default();
    dt.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// One vegeta JSON result line (with loadlab's `ttfb` and `lag` in ns added).
pub fn write_json(out: &mut impl Write, e: &Exported<'_>) -> io::Result<()> {
    let (method, url) = e.method_url();
    let r = e.record;
    let v = serde_json::json!({
        "attack": e.header.name,
        "seq": r.seq,
        "code": r.status,
        "timestamp": rfc3339_nanos(e.timestamp_ns()),
        "latency": r.latency_us * 1000,
        "bytes_out": r.bytes_out,
        "bytes_in": r.bytes_in,
        "error": e.error_text(),
        "body": null,
        "method": method,
        "url": url,
        "headers": null,
        "ttfb": r.ttfb_us * 1000,
        "lag": r.lag_us * 1000,
    });
    let mut v = v;
    if let Some(k) = e.trace {
        v["trace_id"] = crate::trace::trace_id_text(k.trace_id(r.seq)).into();
    }
    serde_json::to_writer(&mut *out, &v)?;
    out.write_all(b"\n")
}

/// One vegeta CSV row: timestamp ns, code, latency ns, bytes out, bytes in, error, body (base64),
/// attack, seq, method, url, headers (base64).
/// A CSV writer's error as the I/O error it was, when it was one (a closed pipe stays a
/// broken pipe).
fn csv_io(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => io,
        other => io::Error::other(format!("{other:?}")),
    }
}

pub fn write_csv<W: Write>(out: &mut csv::Writer<W>, e: &Exported<'_>) -> io::Result<()> {
    let (method, url) = e.method_url();
    let r = e.record;
    out.write_record([
        e.timestamp_ns().to_string(),
        r.status.to_string(),
        (r.latency_us * 1000).to_string(),
        r.bytes_out.to_string(),
        r.bytes_in.to_string(),
        e.error_text().to_owned(),
        String::new(),
        e.header.name.clone(),
        r.seq.to_string(),
        method.to_owned(),
        url.to_owned(),
        String::new(),
    ])
    .map_err(csv_io)
}

/// vegeta's JSON lines (with `ttfb` and `lag`) as a consumer.
pub struct JsonExporter<W: Write> {
    out: W,
    header: RunHeader,
    trace: Option<crate::trace::TraceKey>,
}

impl<W: Write> JsonExporter<W> {
    pub fn new(out: W) -> Self {
        JsonExporter { out, header: RunHeader::default(), trace: None }
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Consumer for JsonExporter<W> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.header = header.clone();
        self.trace = header.plan().trace_key();
        Ok(())
    }
    fn record(&mut self, e: &Entry<'_>) -> io::Result<()> {
        write_json(
            &mut self.out,
            &Exported { header: &self.header, record: e.record, target: e.target, error: e.error, trace: self.trace },
        )
    }
    fn end(&mut self, _: &RunEnd) -> io::Result<()> {
        self.out.flush()
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// vegeta's CSV rows as a consumer.
pub struct CsvExporter<W: Write> {
    out: csv::Writer<W>,
    header: RunHeader,
}

impl<W: Write> CsvExporter<W> {
    pub fn new(out: W) -> Self {
        CsvExporter { out: csv::Writer::from_writer(out), header: RunHeader::default() }
    }
}

impl<W: Write> Consumer for CsvExporter<W> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.header = header.clone();
        Ok(())
    }
    fn record(&mut self, e: &Entry<'_>) -> io::Result<()> {
        write_csv(
            &mut self.out,
            &Exported { header: &self.header, record: e.record, target: e.target, error: e.error, trace: None },
        )
    }
    fn end(&mut self, _: &RunEnd) -> io::Result<()> {
        self.out.flush()
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A vegeta result, as read from JSON or CSV.
#[derive(Debug, Default, PartialEq)]
pub struct Foreign {
    pub timestamp_ns: u64,
    pub code: u16,
    pub latency_ns: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub error: String,
    pub attack: String,
    pub seq: u64,
    pub method: String,
    pub url: String,
}

#[derive(Deserialize)]
struct JsonResult {
    #[serde(default)]
    attack: String,
    #[serde(default)]
    seq: u64,
    code: u16,
    timestamp: String,
    latency: u64,
    #[serde(default)]
    bytes_out: u64,
    #[serde(default)]
    bytes_in: u64,
    #[serde(default)]
    error: String,
    #[serde(default)]
    method: String,
    #[serde(default)]
    url: String,
}

fn parse_time(s: &str) -> Result<u64, String> {
    let t = DateTime::parse_from_rfc3339(s).map_err(|e| format!("field timestamp: {e}"))?;
    t.timestamp_nanos_opt()
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| "field timestamp: out of range".to_owned())
}

/// Parses one line of vegeta's JSON encoding.
pub fn parse_vegeta_json(line: &str) -> Result<Foreign, String> {
    let j: JsonResult = serde_json::from_str(line).map_err(|e| e.to_string())?;
    Ok(Foreign {
        timestamp_ns: parse_time(&j.timestamp)?,
        code: j.code,
        latency_ns: j.latency,
        bytes_out: j.bytes_out,
        bytes_in: j.bytes_in,
        error: j.error,
        attack: j.attack,
        seq: j.seq,
        method: j.method,
        url: j.url,
    })
}

/// Parses one row of vegeta's CSV encoding (9 columns, or 12 in newer versions).
pub(crate) fn parse_vegeta_csv(row: &csv::StringRecord) -> Result<Foreign, String> {
    if row.len() < 9 {
        return Err(format!("expected at least 9 columns, found {}", row.len()));
    }
    fn num<T: std::str::FromStr>(row: &csv::StringRecord, i: usize, name: &str) -> Result<T, String> {
        row[i].trim().parse().map_err(|_| format!("field {name}: not a number: {:?}", &row[i]))
    }
    let ts: i64 = num(row, 0, "timestamp")?;
    Ok(Foreign {
        timestamp_ns: u64::try_from(ts).map_err(|_| "field timestamp: negative".to_owned())?,
        code: num(row, 1, "code")?,
        latency_ns: num(row, 2, "latency")?,
        bytes_out: num(row, 3, "bytes_out")?,
        bytes_in: num(row, 4, "bytes_in")?,
        error: row[5].to_owned(),
        attack: row[7].to_owned(),
        seq: num(row, 8, "seq")?,
        method: row.get(9).unwrap_or("").to_owned(),
        url: row.get(10).unwrap_or("").to_owned(),
    })
}

/// Which vegeta encoding an import reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForeignFormat {
    Json,
    Csv,
}

/// Reads vegeta results and writes them as one run; returns the number of records written.
pub fn import<R: Read, W: Write>(input: R, name: &str, format: ForeignFormat, out: W) -> Result<u64, Error> {
    let io_err = |e: io::Error| Error::writing(name, &e);
    let bad = |line: u64, reason: String| Error::new(name, ErrorKind::BadLine { line, reason });
    let mut importer: Option<Importer<W>> = None;
    let mut out = Some(out);
    let mut push = |f: Foreign| -> Result<(), Error> {
        let imp = match &mut importer {
            Some(i) => i,
            None => importer.insert(Importer::new(out.take().unwrap(), &f).map_err(io_err)?),
        };
        imp.push(&f).map_err(io_err)
    };
    match format {
        ForeignFormat::Json => {
            let mut reader = io::BufReader::new(input);
            let mut line = String::new();
            let mut n = 0u64;
            loop {
                line.clear();
                if io::BufRead::read_line(&mut reader, &mut line).map_err(io_err)? == 0 {
                    break;
                }
                n += 1;
                if line.trim().is_empty() {
                    continue;
                }
                let f = parse_vegeta_json(line.trim()).map_err(|e| bad(n, e))?;
                push(f)?;
            }
        }
        ForeignFormat::Csv => {
            let mut reader =
                csv::ReaderBuilder::new().has_headers(false).flexible(true).trim(csv::Trim::Headers).from_reader(input);
            let mut row = csv::StringRecord::new();
            let mut n = 0u64;
            loop {
                match reader.read_record(&mut row) {
                    Ok(false) => break,
                    Ok(true) => {}
                    Err(e) => return Err(bad(n + 1, e.to_string())),
                }
                n += 1;
                let f = parse_vegeta_csv(&row).map_err(|e| bad(n, e))?;
                push(f)?;
            }
        }
    }
    match importer {
        Some(i) => i.finish().map_err(io_err),
        None => Err(bad(0, "no results in input".to_owned())),
    }
}

struct Importer<W: Write> {
    writer: Writer<W>,
    start_ns: u64,
    count: u64,
    errors: HashMap<String, u32>,
}

impl<W: Write> Importer<W> {
    fn new(out: W, first: &Foreign) -> io::Result<Self> {
        let header = RunHeader {
            name: first.attack.clone(),
            start_unix_ns: first.timestamp_ns.saturating_sub(IMPORT_ORIGIN_SLACK_NS),
            settings: [("imported_from".to_owned(), "vegeta".into())].into_iter().collect(),
            run_plan: Some(crate::RunPlan { imported_from: Some("vegeta".into()), ..Default::default() }),
            ..Default::default()
        };
        Ok(Importer {
            writer: Writer::new(out, &header)?,
            start_ns: header.start_unix_ns,
            count: 0,
            errors: HashMap::new(),
        })
    }

    fn push(&mut self, f: &Foreign) -> io::Result<()> {
        let target = if f.method.is_empty() && f.url.is_empty() {
            0
        } else {
            self.writer.intern_target(&format!("{} {}", f.method, f.url))
        };
        let error = if f.error.is_empty() {
            0
        } else if let Some(&i) = self.errors.get(&f.error) {
            i
        } else {
            let i = self.writer.intern_error(&f.error);
            self.errors.insert(f.error.clone(), i);
            i
        };
        let latency_us = f.latency_ns / 1000;
        self.writer.push(&Record {
            seq: f.seq,
            target,
            scheduled_us: f.timestamp_ns.saturating_sub(self.start_ns) / 1000,
            latency_us,
            ttfb_us: latency_us,
            lag_us: 0,
            status: f.code,
            bytes_in: f.bytes_in,
            bytes_out: f.bytes_out,
            error,
            new_conn: false,
        })?;
        self.count += 1;
        Ok(())
    }

    fn finish(self) -> io::Result<u64> {
        self.writer.finish()?;
        Ok(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Item, Reader};

    const JSON: &str = r#"{"attack":"a","seq":0,"code":200,"timestamp":"2022-07-05T10:52:35.5+01:00","latency":1006793049,"bytes_out":0,"bytes_in":236484,"error":"","body":null,"method":"GET","url":"http://127.0.0.1:8080/news","headers":null}
{"attack":"a","seq":1,"code":0,"timestamp":"2022-07-05T10:52:35.501+01:00","latency":30000000000,"bytes_out":0,"bytes_in":0,"error":"timeout","body":null,"method":"GET","url":"http://127.0.0.1:8080/news","headers":null}
"#;

    fn records(bytes: &[u8]) -> Vec<(Record, Option<String>)> {
        let mut r = Reader::new(bytes, "x");
        let mut out = Vec::new();
        while let Some(it) = r.next().unwrap() {
            if let Item::Record(rec) = it {
                out.push((rec, r.error_text(rec.error).map(str::to_owned)));
            }
        }
        out
    }

    #[test]
    fn imports_vegeta_json() {
        let mut out = Vec::new();
        assert_eq!(import(JSON.as_bytes(), "in.json", ForeignFormat::Json, &mut out).unwrap(), 2);
        let recs = records(&out);
        assert_eq!(recs[0].0.latency_us, 1_006_793);
        assert_eq!(recs[0].0.bytes_in, 236_484);
        assert_eq!(recs[1].0.status, 0);
        assert_eq!(recs[1].1.as_deref(), Some("timeout"));
        assert_eq!(recs[1].0.scheduled_us - recs[0].0.scheduled_us, 1000);
    }

    #[test]
    fn imports_vegeta_csv_old_and_new() {
        let csv = "1657014755500000000,200,1006793049,0,236484,,,a,0\n\
                   1657014755501000000,500,2000,0,10,\"500 Internal Server Error, really\",,a,1,GET,http://127.0.0.1/,\n";
        let mut out = Vec::new();
        assert_eq!(import(csv.as_bytes(), "in.csv", ForeignFormat::Csv, &mut out).unwrap(), 2);
        let recs = records(&out);
        assert_eq!(recs[1].1.as_deref(), Some("500 Internal Server Error, really"));
        assert_eq!(recs[1].0.status, 500);
    }

    #[test]
    fn bad_line_names_line_and_field() {
        let input = format!(
            "{}{}",
            JSON.lines().next().unwrap(),
            "\n{\"code\":200,\"timestamp\":\"yesterday\",\"latency\":1}\n"
        );
        let err = import(input.as_bytes(), "in.json", ForeignFormat::Json, Vec::new()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("in.json:2: field timestamp"), "{msg}");
        let err = import(&b"1,200,x,0,0,,,a,0\n"[..], "in.csv", ForeignFormat::Csv, Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "in.csv:1: field latency: not a number: \"x\"");
    }

    #[test]
    fn export_round_trips_through_import() {
        let header = RunHeader { name: "r".into(), start_unix_ns: 1_600_000_000_000_000_000, ..Default::default() };
        let rec = Record {
            seq: 3,
            scheduled_us: 5,
            latency_us: 1234,
            ttfb_us: 1000,
            status: 200,
            bytes_in: 10,
            ..Default::default()
        };
        let e = Exported {
            header: &header,
            record: &rec,
            target: Some("GET http://127.0.0.1/a"),
            error: None,
            trace: None,
        };
        let mut line = Vec::new();
        write_json(&mut line, &e).unwrap();
        let f = parse_vegeta_json(std::str::from_utf8(&line).unwrap().trim()).unwrap();
        assert_eq!(f.timestamp_ns, 1_600_000_000_000_005_000);
        assert_eq!(f.latency_ns, 1_234_000);
        assert_eq!((f.method.as_str(), f.url.as_str()), ("GET", "http://127.0.0.1/a"));
        let mut w = csv::Writer::from_writer(Vec::new());
        write_csv(&mut w, &e).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text, "1600000000000005000,200,1234000,0,10,,,r,3,GET,http://127.0.0.1/a,\n");
    }
}
