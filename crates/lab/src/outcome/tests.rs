use super::*;
use crate::measure::numbers::Latencies;
use std::path::Path;

fn plan(extra: &str) -> Plan {
    let text = format!(
        "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.b]\nurl = \"http://127.0.0.1:2/\"\n\
         [load]\nrate = [100, 200, 300]\nrepeats = 3\n[slo]\np99 = \"< 100ms\"\n{extra}"
    );
    crate::plan::parse(&text, "t.toml", Path::new(".")).unwrap()
}

/// Steps where a's p99 is 50 ms + 10 ms per 100/s, b's twice that, with a little noise.
fn steps(plan: &Plan, m: &Matrix) -> Vec<StepResult> {
    m.steps
        .iter()
        .map(|s| {
            let rate = m.points[s.point].rate.unwrap();
            let base = 50.0 + rate / 10.0;
            let p99 = if s.target == 0 { base } else { 2.0 * base } + s.repeat as f64;
            StepResult {
                numbers: Numbers {
                    requests: 10_000,
                    success: 1.0,
                    rate,
                    latency: Latencies { p99, ..Default::default() },
                    ..Default::default()
                },
                down: None,
                ..StepResult::not_run(s, 0.0, String::new())
            }
        })
        .filter(|_| !plan.targets.is_empty())
        .collect()
}

#[test]
fn cells_ceilings_and_hypotheses() {
    let p = plan("[[hypotheses]]\nclaim = \"a is faster\"\nmetric = \"p99\"\nlower = \"a\"\nthan = \"b\"\n");
    let m = crate::plan::matrix::expand(&p);
    let f = find(&p, &m, &mut steps(&p, &m));
    assert_eq!(f.cells.len(), 6);
    assert!(f.cells.iter().all(|c| c.steps.len() == 3));
    // a: p99 60, 70, 80 ms: holds everywhere. b: 120 ms at 100/s already breaks.
    assert_eq!(
        f.ceilings[0],
        Ceiling {
            target: "a".into(),
            holds_up_to: Some(300.0),
            breaks_at: None,
            broke: vec![],
            generator_limited_at: None,
            generator_why: None,
            uncounted_at: None,
            uncounted_why: None
        }
    );
    assert_eq!(f.ceilings[1].holds_up_to, None);
    assert_eq!(f.ceilings[1].breaks_at, Some(100.0));
    assert_eq!(f.ceilings[1].broke, vec!["p99 < 100.0ms (measured 121.0ms, median of 3 repeats)".to_owned()]);
    assert!(f.slo_failed);
    let h = &f.hypotheses[0];
    assert_eq!(h.points.len(), 3);
    assert_eq!(h.finding, Finding::Supported);
    assert!((h.points[0].comparison.ratio - 0.5).abs() < 0.02, "{:?}", h.points[0]);
}

#[test]
fn a_rate_the_generator_could_not_send_is_neither_a_failure_nor_a_ceiling() {
    let p = plan("");
    let m = crate::plan::matrix::expand(&p);
    let mut s = steps(&p, &m);
    // Target a at 200/s: nothing sent (the generator's core was starved) in every repeat.
    for st in s.iter_mut().filter(|st| st.target == 0 && m.points[st.point].rate == Some(200.0)) {
        st.numbers = Numbers { asked_rate: Some(200.0), not_sent: 400, generator_limited: true, ..Default::default() };
    }
    let f = find(&p, &m, &mut s);
    let cell = f.cells.iter().find(|c| c.target == 0 && m.points[c.point].rate == Some(200.0)).unwrap();
    assert!(
        matches!(&cell.slo, SloVerdict::GeneratorLimited { why } if why == "sent 0.0/s of 200.0/s asked, 400 never sent")
    );
    assert!(cell.metrics.is_empty(), "no p99 0 ms or success 0 for the target: {cell:?}");
    assert_eq!(cell.uncounted.len(), 3);
    // a held 100/s; at 200/s the generator was the limit, so nothing above is claimed.
    let c = &f.ceilings[0];
    assert_eq!((c.holds_up_to, c.breaks_at, c.generator_limited_at), (Some(100.0), None, Some(200.0)));
    // b broke at 100/s for real: the lab still fails; a's cell is listed as inconclusive.
    assert!(f.slo_failed);
    assert_eq!(f.inconclusive.len(), 1);
    assert!(f.inconclusive[0].starts_with("a at 200 req/s: generator-limited: sent 0.0/s"), "{:?}", f.inconclusive);
}

#[test]
fn a_step_its_host_check_left_out_is_out_of_the_slo_and_the_ceiling_named_for_its_reason() {
    let p = plan("");
    let m = crate::plan::matrix::expand(&p);
    let mut s = steps(&p, &m);
    let busy = "the target's host was busy: 40% of its 2 CPUs' time used outside the target (over 10%)";
    // b breaks the SLO at every rate, but every step of b ran on a busy host; a's at 300/s too.
    for st in s.iter_mut().filter(|st| st.target == 1 || m.points[st.point].rate == Some(300.0)) {
        st.host = Some(scrape::host::HostUse {
            cpus: 2,
            busy_pct: 60.0,
            target_pct: Some(20.0),
            other_pct: Some(40.0),
            steal_pct: 0.0,
            by_mode: Default::default(),
            neighbour: Some(busy.into()),
        });
    }
    let f = find(&p, &m, &mut s);
    assert!(!f.slo_failed, "no step of b counted: b failed nothing");
    let b = f.cells.iter().find(|c| c.target == 1 && m.points[c.point].rate == Some(100.0)).unwrap();
    assert!(matches!(&b.slo, SloVerdict::NotCounted { why } if why == busy), "{:?}", b.slo);
    assert!(b.slo.label().starts_with("not counted: the target's host was busy"), "{}", b.slo.label());
    assert_eq!(f.inconclusive.len(), 4, "{:?}", f.inconclusive);
    assert!(
        f.inconclusive.iter().all(|i| i.contains("not counted: the target's host was busy")),
        "{:?}",
        f.inconclusive
    );
    let a = &f.ceilings[0];
    assert_eq!((a.holds_up_to, a.uncounted_at, a.generator_limited_at), (Some(200.0), Some(300.0), None));
    assert!(s.iter().filter(|st| st.target == 1).all(|st| st.host_left_out()));
}

#[test]
fn a_claim_the_other_way_is_rejected() {
    let p = plan("[[hypotheses]]\nclaim = \"b is faster\"\nmetric = \"p99\"\nlower = \"b\"\nthan = \"a\"\n");
    let m = crate::plan::matrix::expand(&p);
    let f = find(&p, &m, &mut steps(&p, &m));
    assert_eq!(f.hypotheses[0].finding, Finding::Rejected);
}
