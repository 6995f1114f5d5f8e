//! Any bytes as an exporter's answer: an exposition, its counters and its host CPU read or
//! refused in one line, never a panic, never a counter's value that is not one.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match scrape::exposition::Exposition::parse(text) {
        Err(e) => assert!(!e.contains('\n')),
        Ok(e) => {
            let selector = scrape::Selector::parse("process_cpu_seconds_total").unwrap();
            match e.counters(&selector) {
                Ok(c) => assert!(c.series.values().all(|v| v.is_finite() && *v >= 0.0)),
                Err(why) => assert!(!why.contains('\n') && !why.contains('\u{1b}')),
            }
            if let Ok(h) = scrape::host::HostCpu::of(&e) {
                assert!(h.by_mode.values().all(|v| v.is_finite() && *v >= 0.0));
            }
        }
    }
});
