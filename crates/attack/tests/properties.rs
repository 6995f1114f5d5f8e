//! Properties of the target and rate parsers over generated inputs: valid targets read back as
//! written, and anything else is refused in one bounded line, never a panic.

use attack::{parse_targets, RateSpec, TargetDefaults, TargetFormat};
use proptest::prelude::*;

fn refusal_is_one_short_line(e: &attack::TargetError) -> bool {
    let text = e.to_string();
    !text.contains('\n') && text.len() < 400
}

/// (method, url, headers) of a target, and its lines in vegeta's http format.
fn target() -> impl Strategy<Value = (String, String, Vec<(String, String)>)> {
    (
        prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"]),
        1u16..=65535,
        "(/[a-z0-9._~-]{0,8}){0,4}",
        prop::option::of("[a-z0-9]{1,5}=[a-z0-9]{0,5}"),
        prop::collection::vec(("[a-z][a-z0-9-]{0,10}", "[!-~]([ -~]{0,20}[!-~])?"), 0..4),
    )
        .prop_map(|(m, port, path, query, headers)| {
            let path = if path.is_empty() { "/".to_owned() } else { path };
            let query = query.map(|q| format!("?{q}")).unwrap_or_default();
            (m.to_owned(), format!("http://127.0.0.1:{port}{path}{query}"), headers)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn targets_read_back_as_written(targets in prop::collection::vec(target(), 1..6)) {
        // `{{` starts a template (its own properties are in the template tests).
        prop_assume!(targets.iter().all(|(_, _, h)| h.iter().all(|(_, v)| !v.contains("{{"))));
        let mut text = String::new();
        for (m, url, headers) in &targets {
            text += &format!("{m} {url}\n");
            for (k, v) in headers {
                text += &format!("{k}: {v}\n");
            }
            text += "\n";
        }
        let got = parse_targets(&text, TargetFormat::Http, "t", &TargetDefaults::default()).unwrap();
        prop_assert_eq!(got.len(), targets.len());
        for (t, (m, url, headers)) in got.iter().zip(&targets) {
            prop_assert_eq!(t.method.as_str(), m.as_str());
            prop_assert_eq!(t.url.to_string(), url.clone());
            let h: Vec<(String, String)> = t.headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned())).collect();
            prop_assert_eq!(&h, headers);
        }
    }

    #[test]
    fn any_text_is_targets_or_a_one_line_refusal(text in "\\PC{0,300}", json in any::<bool>()) {
        // `@file` lines read files: not from generated text.
        prop_assume!(!text.contains('@'));
        let format = if json { TargetFormat::Json } else { TargetFormat::Http };
        if let Err(e) = parse_targets(&text, format, "t", &TargetDefaults::default()) {
            prop_assert!(refusal_is_one_short_line(&e), "{}", e);
        }
    }

    #[test]
    fn a_port_out_of_range_is_refused(port in 65536u64..10_000_000) {
        let text = format!("GET http://127.0.0.1:{port}/\n");
        prop_assert!(parse_targets(&text, TargetFormat::Http, "t", &TargetDefaults::default()).is_err());
    }

    #[test]
    fn a_long_bad_line_is_quoted_short(junk in "[a-z]{5000,6000}") {
        let e = parse_targets(&junk, TargetFormat::Http, "t", &TargetDefaults::default()).unwrap_err();
        prop_assert!(refusal_is_one_short_line(&e), "{}", e);
    }

    #[test]
    fn any_rate_text_is_a_rate_or_a_refusal(text in "\\PC{0,40}") {
        if let Ok(r) = text.parse::<RateSpec>() {
            // What parses, prints back to the same rate.
            prop_assert_eq!(r.to_string().parse::<RateSpec>(), Ok(r));
        }
    }

    #[test]
    fn rates_round_trip(rate in 0.001f64..1e6, to in prop::option::of(0.001f64..1e6)) {
        let spec = match to {
            Some(b) => RateSpec::Ramp(rate, b),
            None => RateSpec::Constant(rate),
        };
        prop_assert_eq!(spec.to_string().parse::<RateSpec>(), Ok(spec));
    }
}

#[test]
fn a_json_key_holding_a_newline_is_refused_in_one_line() {
    // Found by `cargo fuzz run targets`.
    let text = "{\"0nn[\\\\\\n\"0nnnnn[\\\\\\\\\\nn\\n[nnnn2nn{nn\\23*5\u{1}\u{0}";
    let e = parse_targets(text, TargetFormat::Json, "t", &TargetDefaults::default()).unwrap_err();
    assert!(refusal_is_one_short_line(&e), "{e}");
    let e = parse_targets("{\"a\\nb\": 1}", TargetFormat::Json, "t", &TargetDefaults::default()).unwrap_err();
    assert!(refusal_is_one_short_line(&e), "{e}");
}
