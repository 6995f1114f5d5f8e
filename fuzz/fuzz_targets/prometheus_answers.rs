//! Any bytes as a Prometheus server's JSON answer: the envelope, a query's vector and the
//! targets' scrape intervals read or refused in one line, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let one_line = |e: &str| !e.contains('\n') && !e.contains('\u{1b}') && !e.contains('\u{7}');
    match scrape::answers::envelope(200, data) {
        Err(e) => assert!(one_line(&e)),
        Ok(json) => {
            if let Err(e) = scrape::answers::vector(&json) {
                assert!(one_line(&e));
            }
            match scrape::answers::intervals(&json) {
                Ok(i) => assert!(i.iter().all(|d| scrape::prometheus::interval_ok(*d))),
                Err(e) => assert!(one_line(&e)),
            }
        }
    }
});
