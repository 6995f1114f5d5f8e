//! Bisects of simulated histories: commits whose labs scatter around a good or a bad level, the
//! first bad one drawn at random; how many labs a bisect takes and how often it names the right
//! commit. `cargo test -p bisect --test simulated -- --ignored --nocapture figures` prints the
//! table in docs/DECISIONS.md.

use bisect::{Answer, Levels, Search, State, Verdict, LEVEL_LABS, MOST_LABS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn normal(rng: &mut StdRng) -> f64 {
    let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// One lab of a commit: the level times lognormal noise; with `spikes`, that share of labs
/// lands 1.5x (a busy machine).
fn lab(level: f64, noise: f64, spikes: f64, rng: &mut StdRng) -> f64 {
    let spike = if rng.random::<f64>() < spikes { 1.5 } else { 1.0 };
    level * (noise * normal(rng)).exp() * spike
}

/// A bisect of `n` commits (the last bad) whose first bad one is `first`; the answer and the
/// labs it ran (the levels' included).
fn bisect(n: usize, first: usize, change: f64, noise: f64, spikes: f64, rng: &mut StdRng) -> (Answer, usize) {
    let level = |i: usize| if i >= first { 1.0 + change } else { 1.0 };
    let mut labs = 2 * LEVEL_LABS;
    let levels = Levels {
        good: (0..LEVEL_LABS).map(|_| lab(1.0, noise, spikes, rng)).collect(),
        bad: (0..LEVEL_LABS).map(|_| lab(1.0 + change, noise, spikes, rng)).collect(),
    };
    let mut search = Search::new(n);
    while let Some(i) = search.next() {
        let mut values = Vec::new();
        search.states[i] = loop {
            values.push(lab(level(i), noise, spikes, rng));
            labs += 1;
            match levels.judge(&values) {
                Verdict::Good => break State::Good,
                Verdict::Bad => break State::Bad,
                Verdict::Undecided if values.len() >= MOST_LABS => break State::Skipped("undecided".into()),
                Verdict::Undecided => {}
            }
        };
    }
    (search.answer(), labs)
}

/// Over `seeds` bisects: the share naming the right commit, the share naming a wrong one, and
/// the mean labs.
fn rates(n: usize, change: f64, noise: f64, spikes: f64, seeds: u64) -> (f64, f64, f64) {
    let (mut right, mut wrong, mut labs) = (0, 0, 0);
    for seed in 0..seeds {
        let mut rng = StdRng::seed_from_u64(seed);
        let first = rng.random_range(0..n);
        let (answer, used) = bisect(n, first, change, noise, spikes, &mut rng);
        labs += used;
        match answer {
            Answer::First(f) if f == first => right += 1,
            Answer::First(_) => wrong += 1,
            Answer::Range(r) if !r.contains(&first) => wrong += 1,
            Answer::Range(_) => {}
        }
    }
    let s = seeds as f64;
    (right as f64 / s, wrong as f64 / s, labs as f64 / s)
}

#[test]
fn a_large_change_is_found_in_a_lab_a_commit_and_a_small_one_rarely_named_wrong() {
    // +30% at 3% noise, 15 commits: the right commit nearly always, the levels' 10 labs and
    // one a commit tried.
    let (right, wrong, labs) = rates(15, 0.30, 0.03, 0.0, 200);
    assert!(right >= 0.97 && wrong <= 0.01, "right {right} wrong {wrong}");
    assert!(labs <= 15.0, "{labs}");
    // +10%: more labs, still rarely wrong; 5% of labs spiking 1.5x changes little.
    let (right, wrong, _) = rates(15, 0.10, 0.03, 0.0, 200);
    assert!(right >= 0.88 && wrong <= 0.05, "right {right} wrong {wrong}");
    let (right, wrong, _) = rates(15, 0.10, 0.03, 0.05, 200);
    assert!(right >= 0.85 && wrong <= 0.05, "right {right} wrong {wrong}");
}

#[test]
#[ignore = "prints the figures for docs/DECISIONS.md"]
fn figures() {
    println!("| commits | change | noise | spikes | right | wrong | labs (mean) |\n|---|---|---|---|---|---|---|");
    for (n, change, noise, spikes) in [
        (15, 0.30, 0.03, 0.0),
        (15, 0.10, 0.03, 0.0),
        (100, 0.30, 0.03, 0.0),
        (100, 0.10, 0.03, 0.0),
        (15, 0.05, 0.03, 0.0),
        (15, 0.10, 0.03, 0.05),
        (100, 0.10, 0.03, 0.05),
        (15, 0.10, 0.06, 0.0),
    ] {
        let (right, wrong, labs) = rates(n, change, noise, spikes, 1000);
        println!(
            "| {n} | +{:.0}% | {:.0}% | {:.0}% | {:.1}% | {:.1}% | {labs:.1} |",
            change * 100.0,
            noise * 100.0,
            spikes * 100.0,
            right * 100.0,
            wrong * 100.0
        );
    }
}
