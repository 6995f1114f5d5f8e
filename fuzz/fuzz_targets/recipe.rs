//! Any bytes posted as a recipe: recipes or a one-line error naming the recipe, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = origin::parse_upload(data) {
        assert!(!e.0.contains('\n') && e.0.starts_with("recipe"), "{}", e.0);
    }
});
