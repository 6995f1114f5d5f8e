//! Input quoted in messages.

/// Input quoted in a message, cut to its first 60 characters: a 10 MB line must not make a
/// 10 MB error.
pub fn quoted(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{:?}... ({} bytes)", &s[..i], s.len()),
        None => format!("{s:?}"),
    }
}
