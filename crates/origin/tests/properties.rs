//! Properties of recipe validation and sizes over generated inputs: anything posted is a recipe or
//! a one-line refusal naming where it went wrong, never a panic.

use origin::parse_upload;
use origin::recipe::parse_size;
use proptest::prelude::*;
use serde_json::{json, Value};

/// JSON values that recipes might hold, right or wrong.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e12f64..1e12).prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "200kb",
            "1mb",
            "0b",
            "50kb..200kb",
            "2000mb",
            "1024mb..1b",
            "100ms",
            "1s..2s",
            "-5s",
            "1e9s",
            "gzip",
            "echo",
            "fibonacci",
            "reset",
            "hang",
            "slow_body",
            "64kb/s",
            "/news",
            "/*",
            "<<10kb>>",
            "<<1024mb>><<1024mb>>",
            "",
        ])
        .prop_map(|s| json!(s)),
        "\\PC{0,12}".prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "route",
        "stages",
        "origin",
        "body",
        "random_content",
        "headers",
        "handler",
        "at",
        "status",
        "latency",
        "fault",
        "bandwidth",
        "probability",
        "concurrency",
        "queue",
        "overflow_status",
        "content-encoding",
        "other",
    ])
    .prop_map(str::to_owned)
}

/// A valid recipe.
fn valid_recipe() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["/news", "/*", "/a/b*", "/"]),
        prop::sample::select(vec![json!({"body": "hi <<1kb>>"}), json!({"random_content": "1kb..4kb"}), json!({"handler": "echo"})]),
        prop::collection::vec((0u64..100, 200u16..600, prop::sample::select(vec!["0ms", "10ms", "5ms..20ms"])), 1..4),
    )
        .prop_map(|(route, payload, stages)| {
            let mut r = json!({"route": route, "stages": stages.iter().map(|(at, status, latency)| json!({"at": format!("{at}s"), "status": status, "latency": latency})).collect::<Vec<_>>()});
            r.as_object_mut().unwrap().extend(payload.as_object().unwrap().clone());
            r
        })
}

/// A valid recipe with up to three fields (of the recipe or of its first stage) set to
/// generated values.
fn recipe() -> impl Strategy<Value = Value> {
    (valid_recipe(), prop::collection::vec((any::<bool>(), key(), value()), 0..4)).prop_map(|(mut r, changes)| {
        for (in_stage, k, v) in changes {
            if in_stage && r["stages"].get(0).is_some_and(Value::is_object) {
                r["stages"][0][k] = v;
            } else {
                r[k] = v;
            }
        }
        r
    })
}

fn check(text: &[u8]) -> Result<(), TestCaseError> {
    if let Err(e) = parse_upload(text) {
        prop_assert!(!e.0.contains('\n') && e.0.starts_with("recipe"), "{}", e.0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_are_a_recipe_or_a_one_line_refusal(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check(&bytes)?;
    }

    #[test]
    fn any_recipe_shape_is_a_recipe_or_a_refusal_naming_the_field(r in recipe(), many in any::<bool>()) {
        let upload = if many { json!([r.clone(), r]) } else { r };
        check(upload.to_string().as_bytes())?;
    }

    #[test]
    fn valid_recipes_are_taken(r in valid_recipe()) {
        let recipes = parse_upload(r.to_string().as_bytes());
        prop_assert!(recipes.is_ok(), "{}: {:?}", r, recipes.err());
    }

    #[test]
    fn sizes_parse_to_their_bytes(n in 0u64..2048, unit in 0usize..3) {
        let (suffix, mult) = [("b", 1u64), ("kb", 1024), ("mb", 1 << 20)][unit];
        let got = parse_size(&format!("{n}{suffix}"));
        if n * mult <= 1 << 30 {
            prop_assert_eq!(got, Ok(n * mult));
        } else {
            prop_assert!(got.is_err());
        }
    }

    #[test]
    fn any_size_text_is_a_size_or_a_refusal(s in "\\PC{0,20}") {
        if let Ok(n) = parse_size(&s) {
            prop_assert!(n <= 1 << 30);
        }
    }
}
