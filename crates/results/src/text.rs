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

/// `s` as one word for a POSIX shell, as a command meant to be pasted is printed: as it is when
/// it holds only characters no shell treats specially, else in single quotes.
pub fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._/:@%+=,-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
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

    #[test]
    fn a_word_for_the_shell_stays_one_word() {
        assert_eq!(shell_word("abc1234"), "abc1234");
        assert_eq!(shell_word("v1.2-rc"), "v1.2-rc");
        assert_eq!(shell_word("x'; rm -rf ~; '"), r"'x'\''; rm -rf ~; '\'''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word(""), "''");
        // What sh makes of it: the text itself, as one argument.
        let hostile = "c6\"$(touch /x)`id`'\\ ;|&";
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf %s {}", shell_word(hostile))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
    }
}
