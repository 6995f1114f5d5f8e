//! The machine as the gate's control, on simulated histories: a slower machine, a busy one,
//! a target's CPU read at each lab's machine (loadlab's own CPU per request, the speed probe on
//! the target's CPUs), a lab alone on a slower machine.

mod common;

use common::*;
use history::Stored;
use rand::rngs::StdRng;
use rand::SeedableRng;
use stats::change_points::Settings;

#[test]
fn a_slower_machine_is_named_and_a_slower_build_still_fails() {
    let steady = Service { name: "steady (2%)", p50_sd: 0.02, p99_sd: 0.05, cpu_sd: 0.02, ..CPU_BOUND };
    // A lab with loadlab's own CPU per request beside the target's figures: `machine` scales
    // every process's CPU and the latencies, `build` the target's alone.
    let lab_on = |machine: f64, build: f64, rng: &mut StdRng| {
        let mut v = lab(&steady, machine * build, false, rng).to_vec();
        v.push(("generator_cpu".to_owned(), 150.0 * machine * (0.02 * normal(rng)).exp()));
        v
    };
    for (machine, build, worse) in [(1.3, 1.0, false), (1.0, 1.3, true)] {
        let mut rng = StdRng::seed_from_u64(5);
        let labs: Vec<Stored> = (0..11)
            .map(|i| if i < 8 { lab_on(1.0, 1.0, &mut rng) } else { lab_on(machine, build, &mut rng) })
            .enumerate()
            .map(|(i, v)| entry(i, &v))
            .collect();
        let c = check(&labs, 10);
        let text = history::check_text(&c);
        // The change point is the machine's (shown so, never a regression) only in the first.
        let all = history::series(&labs, &history::Query::default(), &Settings::default());
        for s in all.iter().filter(|s| ["target_cpu", "p50"].contains(&s.key.metric.as_str())) {
            assert_eq!(s.changes.iter().map(|c| c.index).collect::<Vec<_>>(), [8], "{}", s.key.text());
            assert_eq!(s.machine_made(0).is_some(), !worse, "{}: {:?}", s.key.text(), s.machine);
        }
        if worse {
            // The build: the target's CPU and its latencies, loadlab's own unchanged.
            let failed: Vec<&str> = c.worse().map(|j| j.key.metric.as_str()).collect();
            assert!(failed.contains(&"target_cpu") && failed.contains(&"p50"), "{text}");
            assert!(c.judged.iter().all(|j| j.machine.is_none()), "{text}");
        } else {
            // The machine: nothing fails, and each row it explains says so, as a warning.
            assert_eq!(c.worse().count(), 0, "{text}");
            for metric in ["target_cpu", "p50", "p99"] {
                assert!(c.judged.iter().any(|j| j.key.metric == metric && j.machine.is_some()), "{metric}: {text}");
            }
            assert!(text.contains("the machine changed, not the build"), "{text}");
            assert!(c.warnings().iter().any(|w| w.contains("the machine is slower")), "{text}");
        }
    }
}

#[test]
fn a_busy_machine_is_named_and_the_same_slowdown_on_a_quiet_one_still_fails() {
    let steady = Service { name: "steady (2%)", p50_sd: 0.02, p99_sd: 0.05, cpu_sd: 0.02, ..CPU_BOUND };
    // Latencies +30% in the last three labs, the target's CPU and loadlab's unchanged (a busy
    // neighbour does not slow each cycle); `others`: other processes' % of loadlab's machine.
    let lab_with = |latency: f64, others: f64, rng: &mut StdRng| {
        let mut v = lab(&steady, 1.0, false, rng).to_vec();
        for (m, value) in v.iter_mut() {
            if m != "target_cpu" {
                *value *= latency;
            }
        }
        v.push(("generator_cpu".to_owned(), 150.0 * (0.02 * normal(rng)).exp()));
        v.push(("machine_other".to_owned(), others));
        v
    };
    // (others in the slower labs, the lab checked, whether the latencies fail, said why)
    let busy = [88.0, 91.0, 85.0, 90.0, 87.0, 92.0, 89.0, 86.0];
    let quiet = [3.0, 4.0, 2.0, 3.0, 4.0, 2.0, 3.0, 4.0];
    let cases = [
        (&busy[..3], 10, false, "in 3 of the 3 labs judged, 3% in its level's"),
        (&quiet[..3], 10, true, ""),
        // The lab judged on a busy machine, or one of its run: the run is not the build's.
        (&[3.0, 4.0, 90.0][..], 10, false, "used 90% of loadlab's machine in 1 of the 3 labs judged"),
        (&[90.0, 4.0, 3.0][..], 10, false, "in 1 of the 3 labs judged"),
        // A confirmed change, carried: its labs on a busy machine, or on a quiet one.
        (&busy[..], 15, false, "machine in the median lab since the change, 3% before it"),
        (&quiet[..], 15, true, ""),
    ];
    for (others, at, worse, said) in cases {
        let mut rng = StdRng::seed_from_u64(9);
        let labs: Vec<Stored> = (0..=at)
            .map(|i| {
                if i < 8 {
                    lab_with(1.0, 2.0 + (i % 3) as f64, &mut rng)
                } else {
                    lab_with(1.3, others[i - 8], &mut rng)
                }
            })
            .enumerate()
            .map(|(i, v)| entry(i, &v))
            .collect();
        let c = check(&labs, at);
        let text = history::check_text(&c);
        let failed: Vec<&str> = c.worse().map(|j| j.key.metric.as_str()).collect();
        if worse {
            // Quiet in the labs judged: the build's.
            assert!(failed.contains(&"p50") && failed.contains(&"p99"), "{others:?}: {text}");
            assert!(c.judged.iter().all(|j| j.machine.is_none()), "{others:?}: {text}");
        } else {
            assert_eq!(failed, Vec::<&str>::new(), "{others:?}: {text}");
            for metric in ["p50", "p99"] {
                let j = c.judged.iter().find(|j| j.key.metric == metric).unwrap();
                let why = j.machine.as_deref().unwrap_or_default();
                assert!(
                    why.contains(said) && why.ends_with("a busy machine can explain it"),
                    "{others:?}: {why}: {text}"
                );
            }
            assert!(c.warnings().iter().any(|w| w.contains("a busy machine can explain it")), "{text}");
            // The team's page says why the row is not red, and the machine's own change in
            // points of it (a ratio from near nothing says nothing), after the service's.
            let all = history::series(&labs, &history::Query::default(), &Settings::default());
            let md = history::markdown(&all, &Settings::default(), std::slice::from_ref(&c), false);
            assert!(md.contains("| ok (a warning: other processes used"), "{md}");
            if at == 15 {
                assert!(md.contains("machine_other | `c08` (after `c07`) | 2.9% -> 88.5% | +85.6 points |"), "{md}");
                let (service, machine) = (md.find(": p99 | `c08`").unwrap(), md.find(": machine_other |").unwrap());
                assert!(service < machine, "{md}");
            }
        }
    }
}

#[test]
fn a_target_cpu_that_moves_with_the_machine_is_read_at_each_labs_machine() {
    // As the Go service's labs on this VM: loadlab's own CPU per request 25% apart between labs
    // (the machine), the target's moving with it at a slope of 0.35, 1% of its own besides.
    let lab_on = |machine: f64, work: f64, rng: &mut StdRng| {
        let m = (0.25 * normal(rng)).exp() * machine;
        let mut v = lab(&Service { cpu_sd: 0.01, p50_sd: 0.02, ..CPU_BOUND }, work, false, rng).to_vec();
        v[2].1 *= m.powf(0.35);
        v.push(("generator_cpu".to_owned(), 80.0 * m));
        v
    };
    let (mut slowed, mut quiet) = (0, 0);
    for seed in 0..10 {
        let mut rng = StdRng::seed_from_u64(300 + seed);
        let level: Vec<Vec<(String, f64)>> = (0..12).map(|_| lab_on(1.0, 1.0, &mut rng)).collect();
        let at = |last: Vec<(String, f64)>| {
            let labs: Vec<Stored> =
                level.iter().cloned().chain([last]).enumerate().map(|(i, v)| entry(i, &v)).collect();
            check(&labs, 12)
        };
        // The build 30% heavier on a machine like the level's: red on its first lab.
        let c = at(lab_on(1.0, 1.3, &mut rng));
        let text = history::check_text(&c);
        slowed += usize::from(c.worse().any(|j| j.key.metric == "target_cpu"));
        if seed == 0 {
            assert!(text.contains("the level read at this lab's machine: target_cpu moves 0.3"), "{text}");
        }
        // The same build on a machine 30% slower: the target's 9.6% more CPU is the machine's.
        let c = at(lab_on(1.3, 1.0, &mut rng));
        quiet += usize::from(!c.worse().any(|j| j.key.metric == "target_cpu"));
    }
    assert!(slowed >= 9, "{slowed} of 10 red on the first lab");
    assert_eq!(quiet, 10);
}

#[test]
fn a_lab_alone_on_a_machine_slower_by_as_much_is_a_warning_whatever_loadlabs_own_spread() {
    // A Python server's labs in two states of the machine: the level in the faster, one lab in
    // the slower (p50 and loadlab's own CPU per request 1.9 times); loadlab's CPU spreads
    // 27% between labs, so its own rules do not call the slower lab slower. The same p50 on a
    // machine like the level's fails.
    // (The lab judged reads loadlab's CPU without noise: a draw 2 sd high would explain half
    // of a doubled p50, and the run of labs after it would fail it instead.)
    let lab_on = |machine: f64, work: f64, sd: f64, rng: &mut StdRng| {
        let mut v = lab(&CPU_BOUND, work, false, rng).to_vec();
        v.push(("generator_cpu".to_owned(), 120.0 * machine * (sd * normal(rng)).exp()));
        v
    };
    for (machine, worse) in [(1.9, false), (1.0, true)] {
        let mut rng = StdRng::seed_from_u64(21);
        let labs: Vec<Stored> = (0..7)
            .map(|i| if i < 6 { lab_on(1.0, 1.0, 0.27, &mut rng) } else { lab_on(machine, 1.9, 0.0, &mut rng) })
            .enumerate()
            .map(|(i, v)| entry(i, &v))
            .collect();
        let c = check(&labs, 6);
        let text = history::check_text(&c);
        assert_eq!(c.worse().any(|j| j.key.metric == "p50"), worse, "{text}");
        assert_eq!(text.contains("the machine is slower, and can explain it"), !worse, "{text}");
    }
}

#[test]
fn the_probe_on_the_targets_cpus_is_read_before_loadlabs_own_cpu() {
    // The target's CPU per request moves with its own CPU's speed (the probe's time there, 25%
    // apart between labs); loadlab's own CPU per request, on another CPU, does not.
    let lab_on = |work: f64, rng: &mut StdRng| {
        let m = (0.25 * normal(rng)).exp();
        let mut v = lab(&Service { cpu_sd: 0.01, ..CPU_BOUND }, work, false, rng).to_vec();
        v[2].1 *= m.powf(0.5);
        v.push(("machine_speed".to_owned(), 150.0 * m));
        v.push(("generator_cpu".to_owned(), 80.0 * (0.25 * normal(rng)).exp()));
        v
    };
    let mut rng = StdRng::seed_from_u64(77);
    let labs: Vec<Stored> = (0..13)
        .map(|i| lab_on(if i < 12 { 1.0 } else { 1.3 }, &mut rng))
        .enumerate()
        .map(|(i, v)| entry(i, &v))
        .collect();
    let c = check(&labs, 12);
    let text = history::check_text(&c);
    assert!(c.worse().any(|j| j.key.metric == "target_cpu"), "{text}");
    assert!(
        text.contains("target_cpu moves 0.49") && text.contains("for 1% of the probe's time on the target's CPUs"),
        "{text}"
    );
}

#[test]
fn a_latency_that_moved_with_the_probe_on_the_targets_cpus_is_the_machines() {
    // A Go service's A/A history: from the 6th lab the target's CPU is 18% slower (the probe
    // there says so) and p50 12% higher; loadlab's own CPU per request, 25% apart between labs,
    // cannot tell. Nothing fails, and the row says which measure explained it.
    let mut rng = StdRng::seed_from_u64(8);
    let labs: Vec<Stored> = (0..9)
        .map(|i| {
            let m: f64 = if i >= 5 { 1.18 } else { 1.0 };
            let mut v = lab(&Service { p50_sd: 0.02, cpu_sd: 0.02, ..CPU_BOUND }, 1.0, false, &mut rng).to_vec();
            v[0].1 *= m.powf(0.7);
            v[2].1 *= m.powf(0.5);
            v.push(("machine_speed".to_owned(), 180.0 * m * (0.01 * normal(&mut rng)).exp()));
            v.push(("generator_cpu".to_owned(), 60.0 * (0.25 * normal(&mut rng)).exp()));
            v
        })
        .enumerate()
        .map(|(i, v)| entry(i, &v))
        .collect();
    let c = check(&labs, 8);
    let text = history::check_text(&c);
    assert_eq!(c.worse().count(), 0, "{text}");
    assert!(text.contains("the speed probe's time on the target's CPUs"), "{text}");
}

#[test]
fn a_run_on_a_machine_the_probe_reads_slower_is_judged_at_its_speed_by_the_targets_cpu_share() {
    // A CPU-bound server's p50 moves twice as much as the probe's time (its CPU per request,
    // slope 1.66-2). Three labs whose probe reads +7%, not beyond the probe's own level by its
    // rules, with p50 +15% after a level of four: the probe's slowing is taken out (squared, as
    // the target's CPU per request is all of its p50) and nothing fails. The same p50 with the
    // probe unchanged fails, as does a doubled p50 on the slower machine. A service that waits
    // (its CPU a fifth of its p50) 15% slower on the same machine fails: the machine explains
    // only the share of its latency that is its work.
    let lab_on = |machine: f64, work: f64, waits: bool, rng: &mut StdRng| {
        let mut v = lab(&Service { p50_sd: 0.01, cpu_sd: 0.01, ..CPU_BOUND }, work, false, rng).to_vec();
        if waits {
            v[0].1 *= 5.0;
            v[2].1 /= work;
        } else {
            v[0].1 *= machine * machine;
        }
        v[2].1 *= machine * machine;
        v.push(("machine_speed".to_owned(), 150.0 * machine * (0.01 * normal(rng)).exp()));
        v.push(("generator_cpu".to_owned(), 80.0 * (0.25 * normal(rng)).exp()));
        v
    };
    let cases =
        [(1.07, 1.0, false, false), (1.0, 1.145, false, true), (1.07, 2.0, false, true), (1.07, 1.145, true, true)];
    for (machine, work, waits, fails) in cases {
        let mut rng = StdRng::seed_from_u64(5);
        let labs: Vec<Stored> = (0..7)
            .map(|i| if i < 4 { lab_on(1.0, 1.0, waits, &mut rng) } else { lab_on(machine, work, waits, &mut rng) })
            .enumerate()
            .map(|(i, v)| entry(i, &v))
            .collect();
        let c = check(&labs, 6);
        let text = history::check_text(&c);
        assert_eq!(c.worse().any(|j| j.key.metric == "p50"), fails, "machine {machine}, work {work}: {text}");
        if machine > 1.0 && !waits {
            assert!(text.contains("the speed probe's time on the target's CPUs is +"), "{text}");
            assert!(text.contains("of its median latency"), "{text}");
        }
        if waits {
            assert!(text.contains("relative to it to the power 0.4"), "{text}");
        }
    }
}

#[test]
fn a_cpu_bound_servers_latency_follows_its_cpu_where_the_probe_explains_its_cpu() {
    // A CPU-bound server's p50 jumped 80% in one lab while the probe read +15% and its CPU per
    // request moved as the probe's square (+32%): a queue amplifies the CPU's change, and the
    // probe squared leaves p50 +36%, but its CPU is all the machine's, so its latency is too. The
    // same lab whose CPU per request grew 33% more than the machine explains (the build's work)
    // fails, as it does on an unchanged machine.
    let lab_on = |machine: f64, work: f64, p50_by: f64, rng: &mut StdRng| {
        let mut v = lab(&Service { p50_sd: 0.01, cpu_sd: 0.01, ..CPU_BOUND }, 1.0, false, rng).to_vec();
        v[0].1 *= p50_by;
        v[2].1 *= machine * machine * work;
        v.push(("machine_speed".to_owned(), 150.0 * machine * (0.01 * normal(rng)).exp()));
        v.push(("generator_cpu".to_owned(), 80.0 * (0.25 * normal(rng)).exp()));
        v
    };
    for (machine, work, fails) in [(1.15, 1.0, false), (1.15, 1.33, true), (1.0, 1.33, true)] {
        let mut rng = StdRng::seed_from_u64(9);
        let labs: Vec<Stored> = (0..9)
            .map(|i| if i < 8 { lab_on(1.0, 1.0, 1.0, &mut rng) } else { lab_on(machine, work, 1.8, &mut rng) })
            .enumerate()
            .map(|(i, v)| entry(i, &v))
            .collect();
        let c = check(&labs, 8);
        let text = history::check_text(&c);
        assert_eq!(c.worse().any(|j| j.key.metric == "p50"), fails, "machine {machine}, work {work}: {text}");
        if !fails {
            assert!(text.contains("the target's CPU per request relative to its square is +"), "{text}");
            assert!(text.contains("follows its CPU, which the machine explains"), "{text}");
        }
    }
}
