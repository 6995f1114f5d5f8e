//! What an exporter or a Prometheus server answers is outside input: any text as an exposition
//! and any bytes as the server's JSON give a value or a one-line refusal, never a panic, and
//! nothing read becomes a figure a counter or a time cannot be.

use proptest::prelude::*;
use scrape::exposition::Exposition;
use scrape::{answers, Selector};

/// Lines shaped like an exposition's, with hostile parts: escapes, quotes, huge numbers, NaN.
fn exposition_text() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["process_cpu_seconds_total", "x", "node_cpu_seconds_total", "9bad", ""]);
    let label = "[a-z\u{1b}\u{7}\"\\\\,={} \n]{0,12}";
    let value = prop::sample::select(vec!["1", "NaN", "+Inf", "-Inf", "-5e9", "1e308", "0x10", "", "1.5e+03", "1 2 3"]);
    prop::collection::vec((name, label, value), 0..12)
        .prop_map(|lines| lines.into_iter().map(|(n, l, v)| format!("{n}{{mode=\"{l}\"}} {v}\n")).collect::<String>())
}

fn one_line(e: &str) -> bool {
    !e.contains('\n') && !e.contains('\u{1b}') && !e.contains('\u{7}')
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_exposition_is_read_or_refused_in_one_line(text in exposition_text(), noise in ".{0,40}") {
        for text in [text.clone(), format!("{text}{noise}")] {
            match Exposition::parse(&text) {
                Err(e) => prop_assert!(!e.contains('\n'), "{e:?}"),
                Ok(e) => {
                    let selector = Selector::parse("process_cpu_seconds_total").unwrap();
                    match e.counters(&selector) {
                        Ok(c) => prop_assert!(c.series.values().all(|v| v.is_finite() && *v >= 0.0)),
                        Err(why) => prop_assert!(one_line(&why), "{why:?}"),
                    }
                    if let Err(why) = scrape::host::HostCpu::of(&e) {
                        prop_assert!(one_line(&why), "{why:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn any_answer_of_a_server_is_read_or_refused_in_one_line(
        status in 100u16..600,
        body in prop::collection::vec(any::<u8>(), 0..200),
        value in prop::sample::select(vec!["1", "NaN", "+Inf", "-1", "1e400", "x", ""]),
        label in "[a-z\u{1b}\u{7} ]{0,10}",
        interval in prop::sample::select(vec!["15s", "0s", "99999999999999999999999h", "2h", "1m30s", "", "s"]),
    ) {
        let vector = format!(
            r#"{{"status":"success","data":{{"result":[{{"metric":{{"pod":{label}}},"value":[1,"{value}"]}}],"activeTargets":[{{"scrapeInterval":"{interval}"}}]}}}}"#,
            label = serde_json::to_string(&label).unwrap()
        );
        for bytes in [body, vector.into_bytes()] {
            match answers::envelope(status, &bytes) {
                Err(e) => prop_assert!(one_line(&e), "{e:?}"),
                Ok(json) => {
                    if let Err(e) = answers::vector(&json) {
                        prop_assert!(one_line(&e), "{e:?}");
                    }
                    match answers::intervals(&json) {
                        Ok(i) => prop_assert!(i.iter().all(|d| scrape::prometheus::interval_ok(*d))),
                        Err(e) => prop_assert!(one_line(&e), "{e:?}"),
                    }
                }
            }
        }
    }
}
