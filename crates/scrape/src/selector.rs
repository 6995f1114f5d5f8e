//! A series selector as PromQL writes one: a name and label matchers,
//! `namedprocess_namegroup_cpu_seconds_total{groupname="svc",mode=~"user|system"}`. The same
//! text is matched against an exporter's exposition here, and sent as it is to a Prometheus
//! server (wrapped in `sum(...)`), so one plan reads the same series from both.

use std::collections::HashMap;
use std::fmt;

use regex::Regex;

/// How a label is matched.
#[derive(Clone, Debug)]
enum Op {
    Equal(String),
    NotEqual(String),
    /// Fully anchored, as PromQL anchors them.
    Matches(Regex),
    NotMatches(Regex),
}

#[derive(Clone, Debug)]
struct Matcher {
    label: String,
    op: Op,
}

/// A parsed selector, with the text it came from.
#[derive(Clone, Debug)]
pub struct Selector {
    text: String,
    name: Option<String>,
    matchers: Vec<Matcher>,
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Selector {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Selector {
    /// Parses `text`; the error names what is wrong and where.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let text = text.trim();
        let bad = |why: &str| Err(format!("selector {text:?}: {why}"));
        let name_end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(text.len());
        let name = &text[..name_end];
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            return bad("a series name does not start with a digit");
        }
        let rest = text[name_end..].trim_start();
        let mut matchers = Vec::new();
        if !rest.is_empty() {
            let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
                return bad("expected a name, then label matchers in { }");
            };
            let mut s = inner.trim_start();
            while !s.is_empty() {
                let label_end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
                let label = &s[..label_end];
                if label.is_empty() || label.starts_with(|c: char| c.is_ascii_digit()) {
                    return bad(&format!("expected a label name at {:?}", cut(s)));
                }
                s = s[label_end..].trim_start();
                let op = ["=~", "!~", "!=", "="].into_iter().find(|op| s.starts_with(op));
                let Some(op) = op else { return bad(&format!("expected =, !=, =~ or !~ after {label}")) };
                s = s[op.len()..].trim_start();
                let (value, after) =
                    quoted(s).ok_or_else(|| format!("selector {text:?}: {label}'s value is not a quoted string"))?;
                let anchored = || {
                    Regex::new(&format!("^(?:{value})$"))
                        .map_err(|e| format!("selector {text:?}: {label}{op}{value:?}: {e}"))
                };
                let op = match op {
                    "=" => Op::Equal(value),
                    "!=" => Op::NotEqual(value),
                    "=~" => Op::Matches(anchored()?),
                    _ => Op::NotMatches(anchored()?),
                };
                matchers.push(Matcher { label: label.to_owned(), op });
                s = after.trim_start();
                match s.strip_prefix(',') {
                    Some(r) => s = r.trim_start(),
                    None if s.is_empty() => {}
                    None => return bad(&format!("expected , or }} at {:?}", cut(s))),
                }
            }
        }
        let by_name = matchers.iter().any(|m| m.label == "__name__");
        if name.is_empty() && !by_name {
            return bad("no series name");
        }
        Ok(Selector { text: text.to_owned(), name: (!name.is_empty()).then(|| name.to_owned()), matchers })
    }

    /// The series name it asks for, if it names one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether a series of `name` with `labels` is one of those selected (an absent label is
    /// the empty string, as in PromQL).
    pub fn matches(&self, name: &str, labels: &HashMap<String, String>) -> bool {
        if self.name.as_deref().is_some_and(|n| n != name) {
            return false;
        }
        self.matchers.iter().all(|m| {
            let v = if m.label == "__name__" { name } else { labels.get(&m.label).map_or("", String::as_str) };
            match &m.op {
                Op::Equal(want) => v == want,
                Op::NotEqual(want) => v != want,
                Op::Matches(re) => re.is_match(v),
                Op::NotMatches(re) => !re.is_match(v),
            }
        })
    }
}

/// A string in double quotes, single quotes or backticks at the start of `s` (PromQL's three;
/// backslash escapes in the first two), and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let quote = s.chars().next().filter(|c| matches!(c, '"' | '\'' | '`'))?;
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => return Some((out, &s[1 + i + 1..])),
            '\\' if quote != '`' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// The start of `s`, for an error.
fn cut(s: &str) -> String {
    s.chars().take(24).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn matchers_select_as_promql_does() {
        let s = Selector::parse(r#"namedprocess_namegroup_cpu_seconds_total{groupname="svc", mode=~"user|system"}"#)
            .unwrap();
        let name = "namedprocess_namegroup_cpu_seconds_total";
        assert!(s.matches(name, &labels(&[("groupname", "svc"), ("mode", "user")])));
        assert!(!s.matches(name, &labels(&[("groupname", "svc"), ("mode", "wait")])));
        assert!(!s.matches(name, &labels(&[("groupname", "svc2"), ("mode", "user")])), "anchored and exact");
        assert!(!s.matches("other", &labels(&[("groupname", "svc"), ("mode", "user")])));
        let s = Selector::parse(r#"node_cpu_seconds_total{mode!="idle",cpu!~'1|2'}"#).unwrap();
        assert!(s.matches("node_cpu_seconds_total", &labels(&[("mode", "user"), ("cpu", "0")])));
        assert!(!s.matches("node_cpu_seconds_total", &labels(&[("mode", "idle"), ("cpu", "0")])));
        assert!(!s.matches("node_cpu_seconds_total", &labels(&[("mode", "user"), ("cpu", "2")])));
        // An absent label is empty; a name may be given as a matcher.
        let s = Selector::parse(r#"{__name__=~"process_.*", job=""}"#).unwrap();
        assert!(s.matches("process_cpu_seconds_total", &labels(&[])));
        assert!(!s.matches("process_cpu_seconds_total", &labels(&[("job", "x")])));
        let s = Selector::parse("process_cpu_seconds_total").unwrap();
        assert_eq!(s.name(), Some("process_cpu_seconds_total"));
        // Flags, as Prometheus (RE2) takes them.
        let s = Selector::parse(r#"x{job=~"(?i)SVC-.*"}"#).unwrap();
        assert!(s.matches("x", &labels(&[("job", "svc-1")])) && !s.matches("x", &labels(&[("job", "db")])));
        let s = Selector::parse(r#"x{path="a\"b"}"#).unwrap();
        assert!(s.matches("x", &labels(&[("path", "a\"b")])));
    }

    #[test]
    fn a_bad_selector_says_what_is_wrong() {
        for (text, says) in [
            ("", "no series name"),
            ("x{job=svc}", "not a quoted string"),
            (r#"x{job="svc""#, "in { }"),
            (r#"x{job=="svc"}"#, "not a quoted string"),
            (r#"x{job~"svc"}"#, "expected =, !=, =~ or !~"),
            (r#"x{job=~"("}"#, "x{job=~"),
            (r#"x{job="a" mode="b"}"#, "expected , or }"),
            ("9x", "digit"),
        ] {
            let e = Selector::parse(text).unwrap_err();
            assert!(e.contains(says) && e.starts_with("selector "), "{text}: {e}");
        }
    }
}
