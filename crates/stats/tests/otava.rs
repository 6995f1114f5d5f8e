//! The change points of the history agree with Apache Otava's on the same series: seeded series
//! (steps, two steps, a late step, none; normal, lognormal and spiky noise; 30-200 points) and
//! Otava's answer on each, recorded by bench/otava.sh.

use stats::change_points::{change_points, Settings};

#[derive(serde::Deserialize)]
struct Fixtures {
    otava: String,
    window: usize,
    max_pvalue: f64,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    values: Vec<f64>,
    otava: Vec<usize>,
}

#[test]
fn change_points_match_otavas_within_one_point() {
    let f: Fixtures = serde_json::from_str(include_str!("otava.json")).unwrap();
    assert!(f.otava.starts_with("apache-otava"), "{}", f.otava);
    assert!(f.cases.len() >= 100 && f.cases.iter().filter(|c| !c.otava.is_empty()).count() >= 50);
    // Otava's own rule: no points needed on each side beyond its own, its merge step.
    let otava = Settings { window: f.window, max_pvalue: f.max_pvalue, min_magnitude: 0.0, min_points: 1 };
    let near = |a: &[usize], b: &[usize]| a.iter().all(|i| b.iter().any(|j| i.abs_diff(*j) <= 1));
    let mut differ = Vec::new();
    for c in &f.cases {
        let ours: Vec<usize> = change_points(&c.values, &otava).iter().map(|p| p.index).collect();
        if !(near(&ours, &c.otava) && near(&c.otava, &ours)) {
            differ.push(format!("{}: ours {ours:?}, Otava's {:?}", c.name, c.otava));
        }
    }
    assert!(differ.is_empty(), "{} of {} series differ:\n{}", differ.len(), f.cases.len(), differ.join("\n"));
}
