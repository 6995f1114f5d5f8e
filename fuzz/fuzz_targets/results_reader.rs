//! Any bytes given to the results reader: items or an error, never a panic or a hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut reader = results::Reader::new(data, "fuzz.llr");
    while let Ok(Some(_)) = reader.next() {}
});
