//! Any text as targets in both formats: targets or a one-line error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // `@file` lines read files: not from fuzzed text.
    if text.contains('@') {
        return;
    }
    for format in [attack::TargetFormat::Http, attack::TargetFormat::Json] {
        if let Err(e) = attack::parse_targets(text, format, "fuzz", &attack::TargetDefaults::default()) {
            assert!(!e.to_string().contains('\n'));
        }
    }
    let _ = text.parse::<attack::RateSpec>();
});
