//! Any bytes as an OTLP/HTTP export body (the first byte picks protobuf or JSON, gzip or not):
//! spans read or the body refused in one line, never a panic, every name plain and bounded.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&how, body)) = data.split_first() else { return };
    let encoding = if how & 1 == 0 { spans::Encoding::Protobuf } else { spans::Encoding::Json };
    match spans::spans(body, encoding, how & 2 != 0) {
        Err(e) => assert!(!e.contains('\n') && !e.contains('\u{1b}')),
        Ok((kept, _)) => {
            for s in kept {
                assert!(s.end_ns >= s.start_ns && s.trace_id != 0 && s.span_id != 0);
                assert!(s.name.chars().count() <= spans::MAX_NAME && !s.name.chars().any(char::is_control));
            }
        }
    }
});
