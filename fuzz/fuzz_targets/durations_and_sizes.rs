//! Any text as a duration or a payload size: a value within bounds or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(d) = results::duration::parse(text) {
        assert!(d <= results::duration::MAX);
    }
    if let Ok(n) = origin::recipe::parse_size(text) {
        assert!(n <= 1 << 30);
    }
});
