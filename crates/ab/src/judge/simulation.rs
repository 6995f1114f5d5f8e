//! The whole rule simulated, as `lab ab` runs it (looks at 3, 5, 8, 12 and 20 pairs at the
//! run's 1% shared between them, stopping once every gated cell is decided or only cells out of
//! reach are left), on pairs whose spread is made of the parts measured on this machine: the
//! machine's moment, which moves the target, loadlab's own CPU and the speed probe by their
//! own amounts, and what is each figure's own. `cargo test --release -p ab ab_figures --
//! --ignored --nocapture` prints the table docs/DECISIONS.md quotes.

use std::collections::BTreeMap;

use lab::{Gate, Metric};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{look, CellPairs, ALPHA, MACHINE};

/// How a server's figures move between the two labs of a pair (sds of log differences).
struct Server {
    name: &'static str,
    /// A pair's labs at once: the machine's moment is the same on both sides.
    at_once: bool,
    /// The machine's moment between the pair's labs.
    machine: f64,
    /// The target's CPU per request and p50: how much of the moment each takes, and their own.
    cpu_slope: f64,
    cpu_own: f64,
    p50_slope: f64,
    p50_own: f64,
    /// loadlab's own CPU per request (slope 1: the moment's unit) and the probe's (slope, own).
    generator_own: f64,
    probe_slope: f64,
    probe_own: f64,
}

/// The three servers, from the pairs measured (docs/DECISIONS.md, "Where the spread comes
/// from"): the Go service (2% left after the machine), nginx (8-9% left, loadlab's own CPU
/// its measure), the CPU-bound Python server (the probe its measure, 5-7% per request left);
/// and the three run at once, on one CPU (docs/DECISIONS.md, "Both builds at once": the pairs'
/// spread raw, no moment between the sides).
const SERVERS: [Server; 6] = [
    Server {
        name: "Go-like",
        at_once: false,
        machine: 0.10,
        cpu_slope: 0.5,
        cpu_own: 0.02,
        p50_slope: 0.5,
        p50_own: 0.02,
        generator_own: 0.05,
        probe_slope: 0.5,
        probe_own: 0.03,
    },
    Server {
        name: "nginx-like",
        at_once: false,
        machine: 0.20,
        cpu_slope: 1.2,
        cpu_own: 0.06,
        p50_slope: 1.0,
        p50_own: 0.07,
        generator_own: 0.03,
        probe_slope: 0.2,
        probe_own: 0.03,
    },
    Server {
        name: "Python-like",
        at_once: false,
        machine: 0.10,
        cpu_slope: 1.0,
        cpu_own: 0.06,
        p50_slope: 1.0,
        p50_own: 0.07,
        generator_own: 0.12,
        probe_slope: 0.5,
        probe_own: 0.02,
    },
    at_once("Go at once", 0.016, 0.012),
    at_once("nginx at once", 0.028, 0.022),
    at_once("Python at once", 0.016, 0.029),
];

/// A server whose pair's labs run at once: what spreads is each process's own.
const fn at_once(name: &'static str, cpu_own: f64, p50_own: f64) -> Server {
    Server {
        name,
        at_once: true,
        machine: 0.0,
        cpu_slope: 0.0,
        cpu_own,
        p50_slope: 0.0,
        p50_own,
        generator_own: 0.05,
        probe_slope: 0.0,
        probe_own: 0.03,
    }
}

fn normal(rng: &mut StdRng) -> f64 {
    let (u, v): (f64, f64) = (rng.random(), rng.random());
    (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// `n` pairs of `server` with the head `change` times the base's CPU per request and p50.
fn pairs(server: &Server, change: f64, n: usize, rng: &mut StdRng) -> CellPairs {
    let side = |cpu: f64, p50: f64, own: f64| {
        Some(BTreeMap::from([(Metric::TargetCpu, cpu), (Metric::P50, p50), (MACHINE, own)]))
    };
    let mut cell =
        CellPairs { at_once: server.at_once, target: "svc".into(), load: "400 req/s".into(), ..CellPairs::default() };
    for _ in 0..n {
        let m = server.machine * normal(rng);
        let cpu = 700.0 * change * (server.cpu_slope * m + server.cpu_own * normal(rng)).exp();
        let p50 = 2.0 * change * (server.p50_slope * m + server.p50_own * normal(rng)).exp();
        let own = 120.0 * (m + server.generator_own * normal(rng)).exp();
        let probe = 200.0 * (server.probe_slope * m + server.probe_own * normal(rng)).exp();
        cell.pairs.push((side(700.0, 2.0, 120.0), side(cpu, p50, own)));
        cell.speed.push((Some(200.0), Some(probe)));
    }
    cell
}

/// One run: whether it ended worse, after how many pairs, and whether its last look named a
/// change short of worse (within its gate, or undecided against it) real.
fn run(server: &Server, change: f64, gates: &[Gate], rng: &mut StdRng) -> (bool, usize, bool) {
    let looks = stats::paired::looks(20);
    let alpha = ALPHA / looks.len() as f64;
    let all = pairs(server, change, 20, rng);
    for &n in &looks {
        let cell = CellPairs { pairs: all.pairs[..n].to_vec(), speed: all.speed[..n].to_vec(), ..all.clone() };
        let l = look(&[cell], gates, alpha);
        if !l.worse().is_empty() {
            return (true, n, false);
        }
        let stuck = l.out_of_reach(20);
        let only_stuck = !l.decided() && l.too_few().is_empty() && l.undecided().len() == stuck.len();
        if l.decided() || only_stuck || n == 20 {
            return (false, n, l.rows.iter().any(|r| r.real));
        }
    }
    (false, 20, false)
}

#[test]
#[ignore = "a simulation that prints figures; run by hand"]
fn ab_figures() {
    let gates = Gate::parse_list("p50>+5%,target_cpu>+5%").unwrap();
    let runs: usize = std::env::var("RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(4_000);
    for server in &SERVERS {
        for change in [1.0, 1.05, 1.10] {
            let mut rng = StdRng::seed_from_u64(11);
            let (mut red, mut pairs_sum, mut red_by_12, mut real) = (0, 0, 0, 0);
            for _ in 0..runs {
                let (worse, n, named) = run(server, change, &gates, &mut rng);
                red += usize::from(worse);
                real += usize::from(named);
                red_by_12 += usize::from(worse && n <= 12);
                pairs_sum += n;
            }
            println!(
                "{} {:+.0}%: red in {:.2}% of runs ({:.2}% by 12 pairs), mean pairs {:.1}, named real short of red {:.2}%, found (red or real) {:.2}%",
                server.name,
                (change - 1.0) * 100.0,
                100.0 * red as f64 / runs as f64,
                100.0 * red_by_12 as f64 / runs as f64,
                pairs_sum as f64 / runs as f64,
                100.0 * real as f64 / runs as f64,
                100.0 * (red + real) as f64 / runs as f64
            );
        }
    }
}
