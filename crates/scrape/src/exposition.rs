//! The Prometheus text exposition an exporter answers (`/metrics`), read as series: a name, its
//! labels, a value, as PromQL sees them (a histogram's `_bucket`, `_sum` and `_count` are series
//! of their own). Every line is read by the format's rules: label values with escapes and any
//! character (commas, braces, `=`), an optional timestamp, any comment, OpenMetrics' `# EOF`.
//!
//! Written here because none of the crates for the format reads what real exporters write:
//! openmetrics-parser 0.4.4 refuses node_exporter 1.5's whole exposition (its line 244) and any
//! untyped series after a typed one; prometheus-parse 0.2.5 cuts label values at `,` and `=`;
//! nom-openmetrics 0.2 takes no timestamp (cAdvisor writes one on every line).

use std::collections::{BTreeSet, HashMap};

use results::text::plain_line;

use crate::counters::{checked, series_key, Counters, SHOWN};
use crate::Selector;

/// One series' value at the scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub labels: HashMap<String, String>,
    pub value: f64,
}

/// A parsed exposition.
#[derive(Clone, Debug, Default)]
pub struct Exposition {
    pub series: Vec<Series>,
}

impl Exposition {
    /// Parses `text`; the error names the first line that is not of the format, in one line.
    pub fn parse(text: &str) -> Result<Exposition, String> {
        let mut series = Vec::new();
        let mut seen = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let s = sample(line)
                .ok_or_else(|| format!("not the Prometheus text format: line {}: {:?}", n + 1, one_line(line)))?;
            // The same series twice is refused, as Prometheus refuses it: summed, it would count
            // a counter's growth twice.
            if let Some(first) = seen.insert(series_key(&s.name, &s.labels), n + 1) {
                return Err(format!(
                    "not a valid exposition: line {}: the series of line {first} again: {}",
                    n + 1,
                    plain_line(&series_key(&s.name, &s.labels), SHOWN)
                ));
            }
            series.push(s);
        }
        Ok(Exposition { series })
    }

    /// The series `selector` selects, as a counter's, each value checked.
    pub fn counters(&self, selector: &Selector) -> Result<Counters, String> {
        let selected = self.series.iter().filter(|s| selector.matches(&s.name, &s.labels));
        Counters::of(selected.map(|s| (series_key(&s.name, &s.labels), s.value)), &selector.to_string())
    }

    /// The sum of a gauge's selected series, each value checked against `max`; none when it
    /// selects none.
    pub fn gauge(&self, selector: &Selector, max: f64) -> Result<Option<f64>, String> {
        let mut found = None;
        for s in self.series.iter().filter(|s| selector.matches(&s.name, &s.labels)) {
            *found.get_or_insert(0.0) += checked(&series_key(&s.name, &s.labels), s.value, max)?;
        }
        Ok(found)
    }

    /// The sum of the series `selector` selects, none when it selects none.
    pub fn sum(&self, selector: &Selector) -> Option<f64> {
        let mut found = None;
        for s in self.series.iter().filter(|s| selector.matches(&s.name, &s.labels)) {
            *found.get_or_insert(0.0) += s.value;
        }
        found
    }

    /// How many series `selector` selects.
    pub fn count(&self, selector: &Selector) -> usize {
        self.series.iter().filter(|s| selector.matches(&s.name, &s.labels)).count()
    }

    /// For an error about a selector that selects nothing: the series of its name with their
    /// labels (what a matcher could have asked for), or else the names the exposition has that
    /// look like it, a few of each.
    pub fn near(&self, selector: &Selector) -> String {
        let same: Vec<&Series> = self.series.iter().filter(|s| Some(s.name.as_str()) == selector.name()).collect();
        if !same.is_empty() {
            let shown: BTreeSet<String> = same.iter().map(|s| labelled(s)).collect();
            let more = if shown.len() > 5 { format!(" and {} more", shown.len() - 5) } else { String::new() };
            return format!("its series are {}{more}", shown.into_iter().take(5).collect::<Vec<_>>().join(", "));
        }
        let names: BTreeSet<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        let stem = selector.name().unwrap_or("").split('_').next().unwrap_or("");
        let mut like: Vec<&str> = names.iter().copied().filter(|n| !stem.is_empty() && n.starts_with(stem)).collect();
        if like.is_empty() {
            like = names.iter().copied().collect();
        }
        let more = if like.len() > 8 { format!(" and {} more", like.len() - 8) } else { String::new() };
        match like.is_empty() {
            true => "the exposition has no series".into(),
            false => format!("series there: {}{more}", like.into_iter().take(8).collect::<Vec<_>>().join(", ")),
        }
    }
}

fn labelled(s: &Series) -> String {
    plain_line(&series_key(&s.name, &s.labels), SHOWN)
}

/// One sample line: `name{label="value",...} value [timestamp]`.
fn sample(line: &str) -> Option<Series> {
    let name_end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = HashMap::new();
    if let Some(mut s) = rest.strip_prefix('{') {
        loop {
            s = s.trim_start();
            if let Some(after) = s.strip_prefix('}') {
                rest = after;
                break;
            }
            let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
            let label = &s[..end];
            if label.is_empty() {
                return None;
            }
            s = s[end..].trim_start().strip_prefix('=')?.trim_start().strip_prefix('"')?;
            let mut value = String::new();
            let mut chars = s.char_indices();
            let close = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    (_, c) => value.push(c),
                }
            };
            labels.insert(label.to_owned(), value);
            s = s[close + 1..].trim_start();
            s = s.strip_prefix(',').unwrap_or(s);
        }
    }
    let mut words = rest.split_whitespace();
    let value = match words.next()? {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse::<f64>().ok()?,
    };
    // A timestamp in ms, then nothing.
    if words.next().is_some_and(|t| t.parse::<i64>().is_err()) || words.next().is_some() {
        return None;
    }
    Some(Series { name: name.to_owned(), labels, value })
}

fn one_line(s: &str) -> String {
    let flat: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    flat.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROCESS_EXPORTER: &str = r#"# HELP namedprocess_namegroup_cpu_seconds_total Cpu user usage in seconds
# TYPE namedprocess_namegroup_cpu_seconds_total counter
namedprocess_namegroup_cpu_seconds_total{groupname="svc",mode="system"} 1.25
namedprocess_namegroup_cpu_seconds_total{groupname="svc",mode="user"} 3.5
namedprocess_namegroup_cpu_seconds_total{groupname="svc,2 {x}",mode="user"} 100
# HELP namedprocess_namegroup_memory_bytes number of bytes of memory in use
# TYPE namedprocess_namegroup_memory_bytes gauge
namedprocess_namegroup_memory_bytes{groupname="svc",memtype="resident"} 2.09715e+07
namedprocess_namegroup_memory_bytes{groupname="svc",memtype="virtual"} 1e+09
# HELP http_request_duration_seconds A histogram
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.1"} 3
http_request_duration_seconds_bucket{le="+Inf"} 4
http_request_duration_seconds_sum 0.5
http_request_duration_seconds_count 4
process_cpu_seconds_total 7.01"#;

    #[test]
    fn selected_series_are_summed_whatever_their_labels_hold() {
        let e = Exposition::parse(PROCESS_EXPORTER).unwrap();
        let sel = |s: &str| Selector::parse(s).unwrap();
        assert_eq!(e.sum(&sel(r#"namedprocess_namegroup_cpu_seconds_total{groupname="svc"}"#)), Some(4.75));
        assert_eq!(e.sum(&sel("namedprocess_namegroup_cpu_seconds_total")), Some(104.75));
        assert_eq!(e.sum(&sel(r#"namedprocess_namegroup_cpu_seconds_total{groupname="svc,2 {x}"}"#)), Some(100.0));
        let rss = sel(r#"namedprocess_namegroup_memory_bytes{groupname="svc",memtype="resident"}"#);
        assert_eq!(e.sum(&rss), Some(2.09715e7));
        assert_eq!(e.sum(&sel("process_cpu_seconds_total")), Some(7.01));
        assert_eq!(e.sum(&sel("http_request_duration_seconds_count")), Some(4.0));
        assert_eq!(e.sum(&sel("http_request_duration_seconds_sum")), Some(0.5));
        let none = sel(r#"namedprocess_namegroup_cpu_seconds_total{groupname="nginx"}"#);
        assert_eq!(e.sum(&none), None);
        let near = e.near(&none);
        assert!(near.contains(r#"groupname="svc""#) && near.contains("mode"), "{near}");
        let near = e.near(&sel("namedprocess_cpu"));
        assert!(near.contains("namedprocess_namegroup_cpu_seconds_total"), "{near}");
    }

    #[test]
    fn every_form_of_the_format_is_read() {
        let text = "# any comment\nup 1\nbar{a=\"x\",} 2 1700000000000\n  baz{ a = \"q\\\"\\\\\\n\" } NaN\n\
                    inf_{le=\"+Inf\"} +Inf\nneg -Inf\nsci 1.5e+03\n# EOF\n";
        let e = Exposition::parse(text).unwrap();
        let v = |n: &str| e.series.iter().find(|s| s.name == n).unwrap();
        assert_eq!(v("up").value, 1.0);
        assert_eq!(v("bar").labels["a"], "x");
        assert_eq!(v("baz").labels["a"], "q\"\\\n");
        assert!(v("baz").value.is_nan());
        assert_eq!(v("inf_").value, f64::INFINITY);
        assert_eq!(v("neg").value, f64::NEG_INFINITY);
        assert_eq!(v("sci").value, 1500.0);
    }

    #[test]
    fn garbage_is_refused_in_one_line() {
        for (text, line) in [
            ("<html><body>Not Found</body></html>", 1),
            ("ok 1\nx{a=\"b} 1\n", 2),
            ("\u{0}\u{1}binary", 1),
            ("x 1 2 3", 1),
            ("x{a=b} 1", 1),
            ("x 1 12:00", 1),
        ] {
            let e = Exposition::parse(text).unwrap_err();
            assert!(
                e.starts_with(&format!("not the Prometheus text format: line {line}:")) && !e.contains('\n'),
                "{e}"
            );
        }
        assert!(Exposition::parse("").unwrap().series.is_empty());
        let e = Exposition::parse("a{x=\"1\"} 1\nb 2\na{x=\"1\"} 3\n").unwrap_err();
        assert!(e.contains("line 3: the series of line 1 again: a{x=\"1\"}"), "{e}");
        assert_eq!(Exposition::parse("a{x=\"1\"} 1\na{x=\"2\"} 3\n").unwrap().series.len(), 2);
    }
}
