//! Properties of the results file and the duration parser, over generated inputs: what is
//! written reads back the same, a damaged or cut file gives a prefix of what was written (never
//! a panic, never an invented record), and any text is a duration or a one-line refusal.

use std::time::Duration;

use proptest::prelude::*;
use results::{Item, Reader, Record, RunEnd, RunHeader, Writer};

const ERRORS: [&str; 3] = ["timeout", "connection refused", "503 Service Unavailable"];

fn record() -> impl Strategy<Value = (Record, usize)> {
    (
        (0u64..1 << 40, 0u32..3, 0u64..1 << 40, 0u64..1 << 36),
        (0u64..1 << 36, 0u64..1 << 36, 0u16..600, 0u64..1 << 40, 0u64..1 << 40),
        (0usize..=ERRORS.len(), any::<bool>()),
    )
        .prop_map(
            |(
                (seq, target, scheduled_us, latency_us),
                (ttfb_us, lag_us, status, bytes_in, bytes_out),
                (error, new_conn),
            )| {
                // A response head never comes after the response's end (the file stores the body's time).
                let ttfb_us = ttfb_us % (latency_us + 1);
                let r = Record {
                    seq,
                    target,
                    scheduled_us,
                    latency_us,
                    ttfb_us,
                    lag_us,
                    status,
                    bytes_in,
                    bytes_out,
                    error: 0,
                    new_conn,
                };
                (r, error)
            },
        )
}

/// A file of one run holding `records`, with its end marker; and the records as written.
fn file(records: &[(Record, usize)]) -> (Vec<u8>, Vec<(Record, Option<&'static str>)>) {
    let header = RunHeader {
        name: "prop".into(),
        start_unix_ns: 1_700_000_000_000_000_000,
        targets: vec![
            "GET http://127.0.0.1/a".into(),
            "GET http://127.0.0.1/b".into(),
            "POST http://127.0.0.1/c".into(),
        ],
        ..Default::default()
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    let mut written = Vec::new();
    for (r, e) in records {
        let mut r = *r;
        let text = ERRORS.get(*e).copied();
        if let Some(t) = text {
            r.error = w.intern_error(t);
        }
        w.push(&r).unwrap();
        written.push((r, text));
    }
    (w.finish_with(&RunEnd { not_sent: 3, ..RunEnd::complete() }).unwrap(), written)
}

/// Records with their error texts.
type Read = Vec<(Record, Option<String>)>;

/// Everything a reader gives: records with their error texts, and whether the end was seen.
fn read(bytes: &[u8]) -> (Read, bool, Result<(), String>) {
    let mut reader = Reader::new(bytes, "prop.llr");
    let mut out = Vec::new();
    let mut ended = false;
    loop {
        match reader.next() {
            Ok(Some(Item::Record(r))) => out.push((r, reader.error_text(r.error).map(str::to_owned))),
            Ok(Some(Item::End(_))) => ended = true,
            Ok(Some(Item::Run(_))) => {}
            Ok(None) => return (out, ended, Ok(())),
            Err(e) => return (out, ended, Err(e.to_string())),
        }
    }
}

fn same(read: &[(Record, Option<String>)], written: &[(Record, Option<&str>)]) -> bool {
    read.len() <= written.len()
        && read.iter().zip(written).all(|((a, ea), (b, eb))| {
            let (mut a, mut b) = (*a, *b);
            (a.error, b.error) = (0, 0);
            a == b && ea.as_deref() == *eb
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn what_is_written_reads_back_the_same(records in prop::collection::vec(record(), 0..600)) {
        let (bytes, written) = file(&records);
        let (got, ended, result) = read(&bytes);
        prop_assert!(result.is_ok());
        prop_assert!(ended);
        prop_assert_eq!(got.len(), written.len());
        prop_assert!(same(&got, &written));
    }

    #[test]
    fn a_cut_file_gives_a_prefix_of_what_was_written(records in prop::collection::vec(record(), 1..400), cut in any::<prop::sample::Index>()) {
        let (bytes, written) = file(&records);
        let cut = cut.index(bytes.len());
        let (got, ended, _) = read(&bytes[..cut]);
        prop_assert!(!ended || cut == bytes.len());
        prop_assert!(same(&got, &written), "{} records read from {} bytes", got.len(), cut);
    }

    #[test]
    fn a_damaged_file_gives_a_prefix_of_what_was_written(
        records in prop::collection::vec(record(), 1..400),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let (mut bytes, written) = file(&records);
        let at = at.index(bytes.len());
        bytes[at] ^= flip;
        let (got, _, _) = read(&bytes);
        prop_assert!(same(&got, &written), "byte {} flipped: {} records read", at, got.len());
    }

    #[test]
    fn any_bytes_are_read_or_refused_without_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = read(&bytes);
        let mut with_magic = b"\x89LLR\r\n\x1a\n\x01".to_vec();
        with_magic.extend_from_slice(&bytes);
        let _ = read(&with_magic);
    }

    #[test]
    fn any_text_is_a_duration_or_a_one_line_refusal(s in "\\PC{0,60}") {
        match results::duration::parse(&s) {
            Ok(d) => prop_assert!(d <= results::duration::MAX),
            Err(e) => prop_assert!(!e.contains('\n') && e.starts_with("bad duration")),
        }
    }

    #[test]
    fn durations_in_go_syntax_parse_to_their_value(parts in prop::collection::vec((0u64..10_000, 0usize..6), 1..4)) {
        const UNITS: [(&str, u64); 6] = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000)];
        let text: String = parts.iter().map(|(n, u)| format!("{n}{}", UNITS[*u].0)).collect();
        let want: u64 = parts.iter().map(|(n, u)| n * UNITS[*u].1).sum();
        prop_assert_eq!(results::duration::parse(&text), Ok(Duration::from_nanos(want)));
    }
}
