//! The judge's rules on cells of known pairs.

use super::*;

fn cell(load: &str, cpu: &[(f64, f64)]) -> CellPairs {
    let side = |v: f64| Some(BTreeMap::from([(Metric::TargetCpu, v), (Metric::P50, 2.0 + v / 1e4)]));
    CellPairs {
        at_once: false,
        target: "svc".into(),
        load: load.into(),
        pairs: cpu.iter().map(|(b, h)| (side(*b), side(*h))).collect(),
        answer_bytes: None,
        speed: Vec::new(),
    }
}

fn gates() -> Vec<Gate> {
    Gate::parse_list("target_cpu>+5%").unwrap()
}

#[test]
fn a_clear_rise_past_the_gate_is_worse_and_a_steady_one_within() {
    let slower: Vec<(f64, f64)> = (0..8).map(|i| (700.0 + f64::from(i), 790.0 + f64::from(i) * 1.5)).collect();
    let l = look(&[cell("100/s", &slower)], &gates(), ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!(r.said, Said::Worse, "{r:?}");
    assert!(r.change_pct > 12.0 && r.change_pct < 14.0, "{r:?}");
    assert!(l.decided() && l.worse().len() == 1);
    // p50 is not gated: shown only.
    assert!(l.rows.iter().any(|r| r.metric == Metric::P50 && r.said == Said::Shown));
    let same: Vec<(f64, f64)> = (0..8).map(|i| (700.0 + f64::from(i % 3), 701.0 - f64::from(i % 2))).collect();
    let l = look(&[cell("100/s", &same)], &gates(), ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!(r.said, Said::Within, "{r:?}");
    assert!(r.detectable_pct.unwrap() > 0.0 && r.detectable_pct.unwrap() < 5.0, "{r:?}");
    assert!(l.decided() && l.worse().is_empty());
}

#[test]
fn a_noisy_rise_is_undecided_and_a_single_pair_too_few() {
    let noisy = [(700.0, 900.0), (700.0, 650.0), (700.0, 800.0)];
    let l = look(&[cell("100/s", &noisy)], &gates(), ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!(r.said, Said::Undecided, "{r:?}");
    assert!(!l.decided());
    assert_eq!(l.undecided().len(), 1);
    // Two wild pairs: too few to say what the run could have seen, never a figure of 78 digits.
    let l = look(&[cell("100/s", &[(700.0, 1400.0), (700.0, 350.0)])], &gates(), ALPHA / 20.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!((r.said, r.detectable_pct), (Said::Undecided, None), "{r:?}");
    let l = look(&[cell("100/s", &[(700.0, 900.0)])], &gates(), ALPHA);
    assert_eq!(l.too_few().len(), 1);
    // A pair whose head did not count is left out of that cell.
    let mut c = cell("100/s", &[(700.0, 701.0), (700.0, 702.0), (700.0, 699.0)]);
    c.pairs[1].1 = None;
    let l = look(&[c], &gates(), ALPHA);
    assert_eq!(l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap().pairs, 2);
}

/// A cell whose pairs move with the machine's moment: pair i's head and base CPU per request
/// and loadlab's own, the machine's moment `m[i]` (a log shift) moving the target by 0.4 of
/// loadlab's move, and `noise[i]` the target's own.
fn machine_cell(change: f64, own_change: f64, m: &[f64], noise: &[f64]) -> CellPairs {
    let side = |cpu: f64, own: f64| Some(BTreeMap::from([(Metric::TargetCpu, cpu), (MACHINE, own)]));
    CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "400 req/s".into(),
        pairs: m
            .iter()
            .zip(noise)
            .map(|(m, n)| {
                let base = side(700.0, 120.0);
                let head = side(700.0 * change * (0.4 * m + n).exp(), 120.0 * own_change * m.exp());
                (base, head)
            })
            .collect(),
        answer_bytes: Some((120.0, if own_change > 1.0 { 240.0 } else { 120.0 })),
        speed: Vec::new(),
    }
}

#[test]
fn the_probe_on_the_targets_cpus_is_the_measure_where_every_pair_has_it() {
    let gates = gates();
    // The machine's moment seen by the probe on the target's CPUs; loadlab's own CPU per
    // request, on other CPUs, moves on its own.
    let mut cell = machine_cell(1.0, 1.0, &MOMENTS, &NOISE);
    cell.answer_bytes = None;
    let others = [0.1, 0.2, -0.3, -0.1, 0.25, -0.2, 0.05, 0.0];
    for ((b, h), o) in cell.pairs.iter_mut().zip(others) {
        *b.as_mut().unwrap().get_mut(&MACHINE).unwrap() = 120.0;
        *h.as_mut().unwrap().get_mut(&MACHINE).unwrap() = 120.0 * f64::exp(o);
    }
    cell.speed = MOMENTS.iter().map(|m| (Some(180.0), Some(180.0 * m.exp()))).collect();
    let l = look(&[cell.clone()], &gates, ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    let m = r.machine.as_ref().unwrap();
    // Every pair has both: both are taken out together, loadlab's own explaining nothing here.
    assert_eq!(m.measure, BOTH);
    assert!(m.used && (m.slope.unwrap() - 0.4).abs() < 0.05, "{m:?}");
    assert!(m.second_slope.unwrap().abs() < 0.05, "{m:?}");
    assert_eq!(r.said, Said::Within, "{r:?}");
    // loadlab's own CPU moved with the head: the probe alone.
    let mut moved = cell.clone();
    for (_, h) in &mut moved.pairs {
        *h.as_mut().unwrap().get_mut(&MACHINE).unwrap() *= 1.3;
    }
    let l = look(&[moved], &gates, ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!(r.machine.as_ref().unwrap().measure, PROBE, "{r:?}");
    assert_eq!(r.said, Said::Within, "{r:?}");
    // A pair without the probe: loadlab's own CPU per request, which explains nothing here.
    cell.speed[3].1 = None;
    let l = look(&[cell], &gates, ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!(r.machine.as_ref().unwrap().measure, OWN);
    assert_ne!(r.said, Said::Within, "{r:?}");
}

#[test]
fn pairs_run_at_once_are_read_as_measured() {
    // The cell the probe explained above, its labs run at once: the machine's measures are the
    // same process's and probe's on both sides, so nothing is taken out, whatever they read.
    let mut cell = machine_cell(1.0, 1.0, &MOMENTS, &NOISE);
    cell.answer_bytes = None;
    cell.speed = MOMENTS.iter().map(|m| (Some(180.0), Some(180.0 * m.exp()))).collect();
    let apart = look(&[cell.clone()], &gates(), ALPHA / 4.0);
    let row = |l: &Look| l.rows.iter().find(|r| r.metric == Metric::TargetCpu).cloned().unwrap();
    assert!(row(&apart).machine.is_some_and(|m| m.used));
    cell.at_once = true;
    let together = look(&[cell.clone()], &gates(), ALPHA / 4.0);
    let r = row(&together);
    assert!(r.machine.is_none(), "{r:?}");
    let plain = Paired::of(&cell.of(Metric::TargetCpu));
    assert!((r.change_pct - pct(plain.ratio)).abs() < 1e-9, "{r:?}");
}

#[test]
fn where_loadlabs_own_cpu_sees_the_machine_and_the_probe_does_not_both_leave_what_it_leaves() {
    // nginx-like: the target's CPU moves with loadlab's own (both the kernel's network path);
    // the probe's time moves on its own. Both measures together decide as loadlab's alone does.
    let mut cell = machine_cell(1.0, 1.0, &MOMENTS, &NOISE);
    cell.answer_bytes = None;
    let probe = [0.05, -0.08, 0.02, 0.07, -0.04, 0.03, -0.06, 0.01];
    cell.speed = probe.iter().map(|p| (Some(180.0), Some(180.0 * f64::exp(*p)))).collect();
    let l = look(&[cell], &gates(), ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    let m = r.machine.as_ref().unwrap();
    assert_eq!(m.measure, BOTH);
    assert!(m.used && m.correlation.unwrap() > 0.95 && (m.second_slope.unwrap() - 0.4).abs() < 0.05, "{m:?}");
    assert_eq!(r.said, Said::Within, "{r:?}");
}

#[test]
fn a_change_only_the_regression_on_the_machine_shows_is_held_undecided() {
    // nginx, A/A, five pairs on one line of the probe (two spells of the machine): read at no
    // change of the probe +19.7%, as measured +5%, p about 0.2. Not worse.
    let c: [f64; 5] = [-0.06, -0.05, -0.03, 0.0, 0.005];
    let jitter = [0.001, -0.001, 0.0005, -0.0005, 0.0];
    let side = |cpu: f64, own: f64| Some(BTreeMap::from([(Metric::TargetCpu, cpu), (MACHINE, own)]));
    let cell = CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "400 req/s".into(),
        pairs: c
            .iter()
            .zip(jitter)
            .map(|(c, j)| (side(43.0, 81.0), side(43.0 * f64::exp(0.18 + 4.74 * c + j), 81.0)))
            .collect(),
        answer_bytes: None,
        speed: c.iter().map(|c| (Some(200.0), Some(200.0 * f64::exp(*c)))).collect(),
    };
    let l = look(&[cell], &gates(), ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    let m = r.machine.as_ref().unwrap();
    assert_eq!(m.measure, PROBE);
    assert!(r.change_pct > 15.0 && m.unadjusted_change_pct < 8.0, "{r:?}");
    assert_ne!(r.said, Said::Worse, "{r:?}");
    assert!(m.held.as_deref().is_some_and(|h| h.contains("as measured (p = 0.")), "{m:?}");
}

#[test]
fn from_twelve_pairs_a_change_the_machine_hid_is_worse_without_the_hold() {
    // The Python server with 10% more hashing, 20 pairs whose head labs happened on a faster
    // machine (the probe -2% on average, its CPU moving 2.5 times the probe): as measured +5%
    // (p about 0.1), relative to the probe +10%. Held at 8 pairs, worse at 20.
    let z: [f64; 20] =
        [0.5, -1.2, 0.3, 1.4, -0.7, 0.9, -1.5, 0.1, 1.1, -0.4, -0.9, 1.6, -0.2, 0.6, -1.1, 0.2, 1.3, -0.6, -1.4, 0.8];
    let c: Vec<f64> = z.iter().map(|z| -0.02 + 0.08 * z).collect();
    let jitter = |i: usize| 0.01 * [0.3, -0.5, 0.8, -0.2, 0.1][i % 5];
    let side = |cpu: f64, own: f64| Some(BTreeMap::from([(Metric::TargetCpu, cpu), (MACHINE, own)]));
    let cell = |n: usize| CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "50 req/s".into(),
        pairs: (0..n)
            .map(|i| (side(2800.0, 250.0), side(2800.0 * f64::exp(0.10 + 2.5 * c[i] + jitter(i)), 250.0)))
            .collect(),
        answer_bytes: None,
        speed: c[..n].iter().map(|c| (Some(200.0), Some(200.0 * f64::exp(*c)))).collect(),
    };
    let judged = |n: usize| {
        let l = look(&[cell(n)], &gates(), ALPHA / 5.0);
        l.rows.into_iter().find(|r| r.metric == Metric::TargetCpu).unwrap()
    };
    let r = judged(8);
    let m = r.machine.as_ref().unwrap();
    assert!(m.unadjusted_change_pct < 6.0 && r.change_pct > 9.0, "{r:?}");
    assert_ne!(r.said, Said::Worse, "{r:?}");
    assert!(m.held.is_some(), "{m:?}");
    let r = judged(20);
    let m = r.machine.as_ref().unwrap();
    assert!(m.unadjusted_change_pct < 7.0 && (r.change_pct - 10.0).abs() < 1.5, "{r:?}");
    let measured = Paired::of(&cell(20).of(Metric::TargetCpu)).p_worse(true).unwrap();
    assert!(measured > AS_MEASURED_P, "as measured the pairs do not show it: {measured}");
    assert_eq!(r.said, Said::Worse, "{r:?}");
    assert!(m.held.is_none(), "{m:?}");
}

const MOMENTS: [f64; 8] = [0.30, -0.22, 0.08, -0.37, 0.27, -0.03, 0.18, -0.15];
const NOISE: [f64; 8] = [0.004, -0.006, 0.002, 0.005, -0.003, 0.001, -0.004, 0.006];

#[test]
fn the_machines_moment_is_taken_out_where_loadlabs_own_cpu_measured_it() {
    let gates = gates();
    // A/A: the pairs' spread is the machine's (sd about 6%); as measured the cell cannot be
    // shown within +5% at 8 pairs, relative to loadlab's own CPU it is.
    let l = look(&[machine_cell(1.0, 1.0, &MOMENTS, &NOISE)], &gates, ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    let m = r.machine.as_ref().unwrap();
    assert!(m.used && m.correlation.unwrap() > 0.95, "{r:?}");
    assert!((m.slope.unwrap() - 0.4).abs() < 0.05, "{m:?}");
    assert_eq!(r.said, Said::Within, "{r:?}");
    assert!(r.change_pct.abs() < 1.0 && r.detectable_pct.unwrap() < 3.0, "{r:?}");
    let plain = Paired::of(&machine_cell(1.0, 1.0, &MOMENTS, &NOISE).of(Metric::TargetCpu));
    assert!(plain.bound(true, stats::CONFIDENCE).unwrap() > 1.05, "as measured it is undecided: {plain:?}");
    // +8%: worse past the gate, the change read as it is.
    let l = look(&[machine_cell(1.08, 1.0, &MOMENTS, &NOISE)], &gates, ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    assert_eq!(r.said, Said::Worse, "{r:?}");
    assert!((r.change_pct - 8.0).abs() < 1.0, "{r:?}");
    // Too few pairs for a slope: the pairs as they are.
    let l = look(&[machine_cell(1.0, 1.0, &MOMENTS[..4], &NOISE[..4])], &gates, ALPHA / 4.0);
    assert!(l.rows.iter().all(|r| r.machine.is_none()), "{:?}", l.rows);
}

#[test]
fn a_head_that_moves_loadlabs_own_cpu_is_read_as_measured() {
    // The head makes loadlab work 10% more a request (a larger answer): its own CPU measures
    // the head, not only the machine, and the row says so.
    let l = look(&[machine_cell(1.08, 1.10, &MOMENTS, &NOISE)], &gates(), ALPHA / 4.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap();
    let m = r.machine.as_ref().unwrap();
    assert!(
        !m.used && m.not_used.as_deref().unwrap().contains("brought 240 bytes each against the base's 120"),
        "{m:?}"
    );
    assert!((r.change_pct - m.unadjusted_change_pct).abs() < 1e-9, "{r:?}");
    // The same answers, and loadlab's own CPU steadily 10% up with the head: it stands out of
    // the machine's moments, and is not used.
    let mut c = machine_cell(1.08, 1.10, &[0.01, -0.01, 0.0, 0.02, -0.02, 0.01, 0.0, -0.01], &NOISE);
    c.answer_bytes = Some((120.0, 120.0));
    let l = look(&[c], &gates(), ALPHA / 4.0);
    let m = l.rows.iter().find(|r| r.metric == Metric::TargetCpu).unwrap().machine.clone().unwrap();
    assert!(!m.used && m.not_used.as_deref().unwrap().contains("moved with the head (+10."), "{m:?}");
}

#[test]
fn a_spread_no_run_can_decide_is_called_out_of_reach_and_what_would_decide_it() {
    // p99-like pairs: about 25% spread, no change, against a 5% gate.
    let wild = [(10.0, 13.0), (10.0, 7.8), (10.0, 12.6), (10.0, 8.1), (10.0, 10.4), (10.0, 7.5), (10.0, 12.9)];
    let side = |v: f64| Some(BTreeMap::from([(Metric::P99, v)]));
    let cell = |n: usize| CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "400 req/s".into(),
        pairs: wild[..n].iter().map(|(b, h)| (side(*b), side(*h))).collect(),
        answer_bytes: None,
        speed: Vec::new(),
    };
    let gates = Gate::parse_list("p99>+5%").unwrap();
    let l = look(&[cell(7)], &gates, ALPHA / 4.0);
    let r = &l.rows[0];
    assert_eq!(r.said, Said::Undecided, "{r:?}");
    assert_eq!(l.out_of_reach(20).len(), 1, "{r:?}");
    let words = r.out_of_reach_words(20).unwrap();
    assert!(words.starts_with("its pairs' spread (2") && words.contains("needs at least "), "{words}");
    assert!(words.contains(" or wider in 20"), "{words}");
    // Within reach of a longer run: not called out of reach.
    let n = r.needs_pairs.unwrap();
    assert!(n > 20 && l.out_of_reach(n).is_empty(), "{n}");
    // Three pairs say too little about a spread to call anything out of reach.
    let l = look(&[cell(3)], &gates, ALPHA / 4.0);
    assert!(l.out_of_reach(20).is_empty() && l.rows[0].out_of_reach_words(20).is_none());
}

#[test]
fn a_gate_below_judges_a_fall() {
    let side = |v: f64| Some(BTreeMap::from([(Metric::Throughput, v)]));
    let c = CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "c8".into(),
        pairs: (0..6).map(|i| (side(1000.0 + f64::from(i)), side(800.0 - f64::from(i)))).collect(),
        answer_bytes: None,
        speed: Vec::new(),
    };
    let l = look(&[c], &Gate::parse_list("throughput<-5%").unwrap(), ALPHA);
    assert_eq!(l.worse().len(), 1, "{:?}", l.rows);
    assert!(l.rows[0].change_pct < -19.0);
}

#[test]
fn real_within_its_gate_holds_to_the_runs_error_rate() {
    // A real A/A run of the Go service (one build both sides, 400 req/s), its 8 pairs as the
    // labs measured them: p50 (ms), loadlab's own CPU a request (µs) and the probe (µs). Relative
    // to both measures p50 reads +2.3% at p 1e-4 on pairs lying on one plane; as measured +3.1%
    // at p 0.07. Within its gate, and not named real.
    const LABS: [[f64; 6]; 8] = [
        [0.494, 83.293, 237.380, 0.518, 90.919, 237.864],
        [0.502, 84.508, 241.614, 0.522, 88.130, 239.870],
        [0.510, 88.586, 228.209, 0.483, 72.414, 208.149],
        [0.417, 57.665, 180.240, 0.450, 66.137, 206.222],
        [0.455, 70.974, 218.566, 0.466, 69.722, 209.879],
        [0.476, 76.485, 207.663, 0.497, 81.914, 226.171],
        [0.490, 83.884, 228.721, 0.471, 70.602, 201.567],
        [0.458, 71.037, 227.042, 0.511, 86.967, 224.323],
    ];
    let side = |p50: f64, own: f64| Some(BTreeMap::from([(Metric::P50, p50), (MACHINE, own)]));
    let aa = CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "400 req/s".into(),
        pairs: LABS.iter().map(|l| (side(l[0], l[1]), side(l[3], l[4]))).collect(),
        answer_bytes: None,
        speed: LABS.iter().map(|l| (Some(l[2]), Some(l[5]))).collect(),
    };
    let gates = Gate::parse_list("p50>+5%").unwrap();
    let l = look(&[aa], &gates, ALPHA / 5.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::P50).unwrap();
    let m = r.machine.as_ref().unwrap();
    assert!(m.used && m.correlation.unwrap() > 0.99, "{m:?}");
    assert!(r.p.unwrap() < ALPHA / 5.0 && r.interval_pct.unwrap().0 > 0.0, "{r:?}");
    assert_eq!(r.said, Said::Within, "{r:?}");
    assert!(!r.real, "as measured the pairs do not show it: {r:?}");
    // The same pairs with the head's p50 1.5% higher in each: as measured +4.6% (p 0.02), real
    // and within its gate.
    let slower: Vec<_> = LABS.iter().map(|l| (side(l[0], l[1]), side(l[3] * 1.015, l[4]))).collect();
    let speed = LABS.iter().map(|l| (Some(l[2]), Some(l[5]))).collect();
    let cell = CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "400 req/s".into(),
        pairs: slower,
        answer_bytes: None,
        speed,
    };
    let l = look(&[cell], &gates, ALPHA / 5.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::P50).unwrap();
    assert_eq!(r.said, Said::Within, "{r:?}");
    assert!(r.real, "{r:?}");
    // From 12 pairs, as for "worse", the pairs read relative to the machine decide alone.
    let twelve: Vec<_> = LABS.iter().chain(&LABS[..4]).map(|l| (side(l[0], l[1]), side(l[3], l[4]))).collect();
    let speed = LABS.iter().chain(&LABS[..4]).map(|l| (Some(l[2]), Some(l[5]))).collect();
    let cell = CellPairs {
        at_once: false,
        target: "svc".into(),
        load: "400 req/s".into(),
        pairs: twelve,
        answer_bytes: None,
        speed,
    };
    let l = look(&[cell], &gates, ALPHA / 5.0);
    let r = l.rows.iter().find(|r| r.metric == Metric::P50).unwrap();
    assert!(r.pairs >= HOLD_BELOW_PAIRS && r.said == Said::Within, "{r:?}");
    assert!(r.p.unwrap() < ALPHA / 5.0 && r.real, "{r:?}");
}
