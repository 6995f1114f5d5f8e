use super::*;

fn header(name: &str) -> RunHeader {
    RunHeader {
        name: name.into(),
        start_unix_ns: 1_700_000_000_000_000_000,
        targets: vec!["GET http://127.0.0.1/".into()],
        ..Default::default()
    }
}

fn sample(n: u64) -> Record {
    Record {
        seq: n,
        target: 0,
        scheduled_us: n * 1000,
        latency_us: 100_000 + (n * 7919) % 5000,
        ttfb_us: 99_000,
        lag_us: if n.is_multiple_of(10) { 3 } else { 0 },
        status: if n % 100 == 99 { 500 } else { 200 },
        bytes_in: 204_800,
        bytes_out: 0,
        error: 0,
        new_conn: n < 4,
    }
}

fn read_all(bytes: &[u8]) -> (Vec<Item>, Vec<String>) {
    let mut r = Reader::new(bytes, "test.llr");
    let mut items = Vec::new();
    while let Some(it) = r.next().unwrap() {
        items.push(it);
    }
    (items, r.warnings().to_vec())
}

fn write_run(name: &str, n: u64) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header(name)).unwrap();
    let e = w.intern_error("500 Internal Server Error");
    for i in 0..n {
        let mut r = sample(i);
        if r.status == 500 {
            r.error = e;
        }
        w.push(&r).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn round_trip_is_exact_and_compact() {
    let n = 10_000;
    let bytes = write_run("a", n);
    let (items, warnings) = read_all(&bytes);
    assert!(warnings.is_empty());
    assert!(matches!(&items[0], Item::Run(h) if h.name == "a"));
    assert_eq!(items.last(), Some(&Item::End(RunEnd::complete())));
    let records: Vec<Record> =
        items.iter().filter_map(|i| if let Item::Record(r) = i { Some(*r) } else { None }).collect();
    assert_eq!(records.len(), n as usize);
    for (i, r) in records.iter().enumerate() {
        let mut want = sample(i as u64);
        if want.status == 500 {
            want.error = 1;
        }
        assert_eq!(*r, want);
    }
    let per_record = bytes.len() as f64 / n as f64;
    assert!(per_record <= 12.0, "{per_record} bytes per record");
}

#[test]
fn out_of_order_records_round_trip() {
    let mut w = Writer::new(Vec::new(), &header("x")).unwrap();
    let recs = [
        Record { seq: 5, scheduled_us: 5000, latency_us: 10, ttfb_us: 10, ..Default::default() },
        Record { seq: 2, scheduled_us: 2000, latency_us: 90_000, ttfb_us: 1, target: 3, ..Default::default() },
        Record {
            seq: 9,
            scheduled_us: 1,
            latency_us: 0,
            ttfb_us: 0,
            bytes_in: 0,
            status: 0,
            error: 0,
            ..Default::default()
        },
    ];
    for r in &recs {
        w.push(r).unwrap();
    }
    let bytes = w.finish().unwrap();
    let (items, _) = read_all(&bytes);
    let got: Vec<Record> = items.iter().filter_map(|i| if let Item::Record(r) = i { Some(*r) } else { None }).collect();
    assert_eq!(got, recs);
}

#[test]
fn concatenated_files_read_as_two_runs() {
    let mut bytes = write_run("first", 10);
    bytes.extend(write_run("second", 5));
    let (items, warnings) = read_all(&bytes);
    assert!(warnings.is_empty());
    let runs: Vec<&str> =
        items.iter().filter_map(|i| if let Item::Run(h) = i { Some(h.name.as_str()) } else { None }).collect();
    assert_eq!(runs, ["first", "second"]);
    assert_eq!(items.iter().filter(|i| matches!(i, Item::Record(_))).count(), 15);
}

#[test]
fn damaged_block_keeps_what_came_before() {
    let mut w = Writer::new(Vec::new(), &header("d")).unwrap();
    for i in 0..100 {
        w.push(&sample(i)).unwrap();
    }
    w.flush().unwrap();
    let good_len = w.out.len();
    for i in 100..200 {
        w.push(&sample(i)).unwrap();
    }
    let mut bytes = w.finish().unwrap();
    bytes[good_len + 20] ^= 0xff;
    let (items, warnings) = read_all(&bytes);
    assert_eq!(items.iter().filter(|i| matches!(i, Item::Record(_))).count(), 100);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("checksum mismatch"), "{}", warnings[0]);
    assert!(warnings[0].contains(&format!("byte {good_len}")), "{}", warnings[0]);
}

#[test]
fn truncated_file_keeps_whole_blocks() {
    let mut w = Writer::new(Vec::new(), &header("t")).unwrap();
    for i in 0..50 {
        w.push(&sample(i)).unwrap();
    }
    w.flush().unwrap();
    for i in 50..80 {
        w.push(&sample(i)).unwrap();
    }
    w.flush().unwrap();
    let bytes = w.out.clone();
    for cut in [bytes.len() - 1, bytes.len() - 30] {
        let (items, warnings) = read_all(&bytes[..cut]);
        assert_eq!(items.iter().filter(|i| matches!(i, Item::Record(_))).count(), 50);
        assert!(warnings[0].contains("truncated block"), "{}", warnings[0]);
    }
    // Without an end marker but whole: everything, no warning.
    let (items, warnings) = read_all(&bytes);
    assert_eq!(items.iter().filter(|i| matches!(i, Item::Record(_))).count(), 80);
    assert!(warnings.is_empty());
}

#[test]
fn junk_is_an_error() {
    for junk in [&b"GET http://x/\n"[..], b"", b"\x89LL"] {
        let mut r = Reader::new(junk, "junk.txt");
        let err = r.next().unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotResults);
        assert!(err.to_string().starts_with("junk.txt: not a loadlab results file"));
    }
}

#[test]
fn vegeta_results_are_recognised_with_the_way_to_bring_them_in() {
    // Written by `vegeta attack -rate 5 -duration 1s` against a loopback origin.
    let gob = include_bytes!("../../tests/data/vegeta-5-requests.bin");
    let err = Reader::new(&gob[..], "r.bin").next().unwrap_err();
    assert!(err.to_string().contains("vegeta's binary (gob) results: convert them with `vegeta encode"), "{err}");
    let json = br#"{"attack":"","seq":0,"code":200,"timestamp":"2026-11-23T09:03:00Z","latency":1}"#;
    let err = Reader::new(&json[..], "r.json").next().unwrap_err();
    assert!(err.to_string().contains("loadlab encode --from vegeta-json"), "{err}");
}

#[test]
fn error_table_spans_blocks() {
    let mut w = Writer::new(Vec::new(), &header("e")).unwrap();
    let a = w.intern_error("connection refused");
    w.push(&Record { error: a, ..Default::default() }).unwrap();
    w.flush().unwrap();
    let b = w.intern_error("timeout");
    assert_eq!(w.intern_error("connection refused"), a);
    w.push(&Record { seq: 1, error: b, ..Default::default() }).unwrap();
    let bytes = w.finish().unwrap();
    let mut r = Reader::new(&bytes[..], "e");
    let mut seen = Vec::new();
    while let Some(it) = r.next().unwrap() {
        if let Item::Record(rec) = it {
            seen.push(r.error_text(rec.error).unwrap().to_owned());
        }
    }
    assert_eq!(seen, ["connection refused", "timeout"]);
}

#[test]
fn targets_learned_while_streaming_are_kept() {
    let mut w = Writer::new(Vec::new(), &header("t")).unwrap();
    assert_eq!(w.intern_target("GET http://127.0.0.1/"), 0);
    let t = w.intern_target("POST http://127.0.0.1/x");
    assert_eq!(t, 1);
    w.push(&Record { target: t, ..Default::default() }).unwrap();
    let bytes = w.finish().unwrap();
    let mut r = Reader::new(&bytes[..], "t");
    while r.next().unwrap().is_some() {}
    assert_eq!(r.targets(), ["GET http://127.0.0.1/", "POST http://127.0.0.1/x"]);
}
