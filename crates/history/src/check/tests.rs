use std::sync::Arc;

use super::*;
use crate::series::LabOf;

/// A series of p50s, one lab a commit (`c0`, `c1`, ...; the last `slower` labs all of `c6`),
/// with no change point found: the detector's answer on a noisy machine.
fn series(values: &[f64], slower: usize) -> Series {
    let points = values
        .iter()
        .enumerate()
        .map(|(i, &value)| {
            let commit = if i + slower >= values.len() { "c6".to_owned() } else { format!("c{i}") };
            let of = LabOf {
                started_unix_s: i as i64,
                commit: Some(commit),
                branch: Some("main".into()),
                path: String::new(),
                tags: String::new(),
            };
            Point { lab: i as i64 + 1, of: Arc::new(of), value, repeats: 1, own_cpu: None, speed: None }
        })
        .collect();
    let key = Key {
        plan: "api".into(),
        target: "svc".into(),
        load: "50/s".into(),
        load_key: "50".into(),
        metric: "p50".into(),
        machine: "m".into(),
        measurement: 1,
        quick: false,
    };
    Series { key, machine_text: String::new(), points, changes: Vec::new(), accepted: Vec::new(), machine: Vec::new() }
}

fn judged(s: &Series, accepted: &[Acceptance]) -> Judged {
    let gates = Gate::parse_history_list("p50>+5%").unwrap();
    let settings = stats::change_points::Settings::default();
    let rules = Rules::new(&gates, &settings, accepted);
    let mut j = vec![judge(s, s.points.last().unwrap().lab, &gates[0], std::slice::from_ref(s), &rules)];
    holm(&mut j, &gates, rules.alone);
    j.remove(0)
}

#[test]
fn an_accepted_commit_starts_a_level_where_no_change_point_was_found() {
    // Six labs at 10.5 ms with a busy machine's spread, then three of c6 at 12.2 ms: a step the
    // detector missed among the level's outliers.
    let s = series(&[10.51, 10.60, 12.4, 10.56, 10.46, 10.50, 12.10, 12.15, 12.22], 3);
    assert_eq!(judged(&s, &[]).outcome, Outcome::Worse);
    let accept = Acceptance {
        commit: "c6".into(),
        plan: None,
        metric: None,
        reason: "on purpose".into(),
        who: "ana".into(),
        at_unix_s: 0,
    };
    let j = judged(&s, std::slice::from_ref(&accept));
    assert_eq!(j.outcome, Outcome::Held, "{j:?}");
    assert_eq!(j.level_since.as_deref(), Some("c6"), "{j:?}");
    assert!(matches!(j.held_to, Some(HeldTo::Borrowed { .. })), "{j:?}");
    // An acceptance of another plan's commit changes nothing here.
    let other = Acceptance { plan: Some("web".into()), ..accept };
    assert_eq!(judged(&s, &[other]).outcome, Outcome::Worse);
}
