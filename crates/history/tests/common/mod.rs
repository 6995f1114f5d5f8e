//! Simulated labs for the gate's tests: a service's lab-to-lab spreads, one lab's figures, a
//! history's entries and a check of one of them.
#![allow(dead_code)]

use history::{Checked, Entry, Rules, Step, Stored};
use rand::rngs::StdRng;
use rand::Rng;
use stats::change_points::Settings;

/// How a service's labs spread: the standard deviation of each metric's logarithm between labs,
/// and, with `mode_share`, labs in a slower mode (`mode_shift` higher on every metric).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Service {
    pub(crate) name: &'static str,
    pub(crate) p50_sd: f64,
    pub(crate) p99_sd: f64,
    pub(crate) cpu_sd: f64,
    pub(crate) mode_share: f64,
    pub(crate) mode_shift: f64,
    /// Labs a slower mode lasts once it starts (a busy neighbour for a minute: 2 labs).
    pub(crate) mode_labs: usize,
}

/// The CPU-bound server measured on this machine: labs about 3% apart on p50 and CPU.
pub(crate) const CPU_BOUND: Service = Service {
    name: "CPU-bound (3%)",
    p50_sd: 0.03,
    p99_sd: 0.08,
    cpu_sd: 0.03,
    mode_share: 0.0,
    mode_shift: 0.0,
    mode_labs: 1,
};

/// Standard normal draws (Box-Muller), so no distribution crate is needed for the test.
pub(crate) fn normal(rng: &mut StdRng) -> f64 {
    let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// One lab's figures: p50 2.2 ms, p99 4 ms, target CPU 2,200 µs per request, times `work`,
/// and times the slower mode when `slow`.
pub(crate) fn lab(svc: &Service, work: f64, slow: bool, rng: &mut StdRng) -> [(String, f64); 3] {
    let mode = if slow { 1.0 + svc.mode_shift } else { 1.0 };
    let mut draw = |centre: f64, sd: f64| centre * work * mode * (sd * normal(rng)).exp();
    [
        ("p50".to_owned(), draw(2.2, svc.p50_sd)),
        ("p99".to_owned(), draw(4.0, svc.p99_sd)),
        ("target_cpu".to_owned(), draw(2200.0, svc.cpu_sd)),
    ]
}

pub(crate) fn entry(i: usize, values: &[(String, f64)]) -> Stored {
    let step = Step {
        id: "01-r200".into(),
        target: "svc".into(),
        load: r#"{"rate":200.0}"#.into(),
        label: "200/s".into(),
        repeat: 0,
        not_counted: None,
        values: values.iter().map(|(m, v)| (m.as_str().into(), *v)).collect(),
    };
    let e = Entry {
        uid: format!("lab-{i}"),
        plan: "api".into(),
        started_unix_s: 1_790_000_000 + i as i64 * 600,
        commit: Some(format!("c{i:02}")),
        branch: Some("main".into()),
        tags: "{}".into(),
        loadlab: "0.1.0".into(),
        measurement: 2,
        machine: "m".into(),
        machine_text: "test".into(),
        path: format!("labs/{i}"),
        quick: false,
        steps: vec![step],
    };
    (i as i64 + 1, e)
}

/// Checks lab `at` (0-based) of `labs` on the default gates.
pub(crate) fn check(labs: &[Stored], at: usize) -> Checked {
    let settings = Settings::default();
    // GATES tries other gates in `figures` (default: the stated default).
    let gates = std::env::var("GATES").map(|g| lab::Gate::parse_history_list(&g).unwrap()).unwrap_or_default();
    let mut rules = Rules::new(&gates, &settings, &[]);
    // IN_A_ROW and TRIM try other rules in `figures`.
    rules.in_a_row = std::env::var("IN_A_ROW").map_or(rules.in_a_row, |v| v.parse().unwrap());
    rules.trim = std::env::var("TRIM").map_or(rules.trim, |v| v == "1");
    // ALONE=0: without the rule that fails a lab alone far past its gate.
    rules.alone = std::env::var("ALONE").map_or(rules.alone, |v| v != "0");
    history::check(&labs[..=at], labs[at].0, &rules).unwrap()
}
