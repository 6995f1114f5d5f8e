//! Text from outside (a name a CI job was given, a label an exporter answered, an error a server
//! wrote) as it may be shown: no terminal, table or page may act on it, and one line stays one
//! line of a readable length.

/// `s` with each control character (an ANSI escape, a newline, a bell) and each character that
/// reorders text (the bidirectional overrides of "Trojan Source") as `?`.
pub fn plain(s: &str) -> String {
    s.chars().map(|c| if reorders_or_controls(c) { '?' } else { c }).collect()
}

/// A control character, or one that changes the direction text is shown in.
pub fn reorders_or_controls(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// [`plain`], cut to its first `max` characters, with how many more there were.
pub fn plain_line(s: &str, max: usize) -> String {
    let mut out = plain(&s.chars().take(max).collect::<String>());
    let more = s.chars().count().saturating_sub(max);
    if more > 0 {
        out.push_str(&format!("... ({more} more characters)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_visible_and_long_text_is_cut() {
        assert_eq!(plain("a\u{1b}]0;pwned\u{7}b\u{1b}[2J\u{202e}c\n"), "a?]0;pwned?b?[2J?c?");
        let long = "x".repeat(2_000_000);
        let cut = plain_line(&long, 200);
        assert!(cut.starts_with(&"x".repeat(200)) && cut.ends_with("(1999800 more characters)"), "{}", cut.len());
        assert_eq!(plain_line("é\u{7}", 200), "é?");
    }
}
