//! Tests of `Metrics`: who fell behind, exact extremes.

mod counts {
    use crate::metrics::*;

    fn rec(scheduled_us: u64, latency_us: u64, status: u16) -> Record {
        Record { scheduled_us, latency_us, ttfb_us: latency_us / 2, status, ..Default::default() }
    }

    #[test]
    fn vegeta_durations_and_ratios() {
        let mut m = Metrics::new();
        m.add(1_000_000_000, &rec(0, 500, 200), None);
        m.add(1_000_000_000, &rec(1_000_000, 2_000_000, 500), Some("500 Internal Server Error"));
        m.add(1_000_000_000, &rec(2_000_000, 1_000, 200), None);
        assert_eq!(m.attack_ns(), 2_000_000_000);
        // The second request ends at 3 s, one second after the last send at 2 s.
        assert_eq!(m.wait_ns(), 1_000_000_000);
        assert!((m.rate() - 1.5).abs() < 1e-9);
        assert!((m.throughput() - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(m.errors["500 Internal Server Error"], 1);
        assert_eq!(m.latency.max(), m.latency.highest_equivalent(2_000_000));
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let records: Vec<Record> = (0..1000).map(|i| rec(i * 1000, (i * 37) % 9000 + 1, 200)).collect();
        let mut all = Metrics::with_seconds();
        let mut a = Metrics::with_seconds();
        let mut b = Metrics::with_seconds();
        for (i, r) in records.iter().enumerate() {
            all.add(0, r, None);
            if i % 3 == 0 {
                a.add(0, r, None)
            } else {
                b.add(0, r, None)
            }
        }
        a.merge(&b);
        assert_eq!(a.requests, all.requests);
        assert_eq!(a.latency, all.latency);
        assert_eq!(a.latency_sum_us, all.latency_sum_us);
        assert_eq!(a.earliest_ns, all.earliest_ns);
        assert_eq!(a.end_ns, all.end_ns);
        let (sa, sall) = (a.seconds.unwrap(), all.seconds.unwrap());
        assert_eq!(sa.len(), sall.len());
        assert_eq!(sa[&0].latency, sall[&0].latency);
    }

    #[test]
    fn late_sends_and_connections_are_counted() {
        let mut m = Metrics::new();
        m.add(0, &Record { lag_us: LATE_SEND_US, new_conn: true, status: 200, ..Default::default() }, None);
        m.add(0, &Record { lag_us: LATE_SEND_US - 1, status: 200, ..Default::default() }, None);
        assert_eq!(m.late_sends, 1);
        assert_eq!(m.connections, 1);
    }

    #[test]
    fn a_runs_pace_tick_moves_its_late_threshold() {
        let header = |tick: Option<&str>| RunHeader {
            settings: tick.map(|t| [("pace_tick".to_owned(), t.into())].into_iter().collect()).unwrap_or_default(),
            ..RunHeader::default()
        };
        let mut m = Metrics::new();
        m.start(&header(Some("10ms"))).unwrap();
        m.add(0, &Record { lag_us: 10_000 + LATE_SEND_US - 1, status: 200, ..Default::default() }, None);
        m.add(0, &Record { lag_us: 10_000 + LATE_SEND_US, status: 200, ..Default::default() }, None);
        assert_eq!(m.late_sends, 1);
        // The next run sends each hit at its time: 5 ms late is late again.
        m.start(&header(None)).unwrap();
        m.add(0, &Record { lag_us: LATE_SEND_US, status: 200, ..Default::default() }, None);
        assert_eq!(m.late_sends, 2);
        assert_eq!((m.pace_tick_us, m.late_threshold_us()), (10_000, 15_000));
        let mut merged = Metrics::new();
        merged.merge(&m);
        assert_eq!(merged.pace_tick_us, 10_000);
    }

    #[test]
    fn a_runs_coalescing_window_moves_its_late_threshold() {
        let plan = crate::RunPlan { open: true, pace_window_us: 250, ..Default::default() };
        let header = RunHeader { run_plan: Some(plan), ..RunHeader::default() };
        assert_eq!(header.late_send_us(), LATE_SEND_US + 250);
        let mut m = Metrics::new();
        m.start(&header).unwrap();
        m.add(0, &Record { lag_us: LATE_SEND_US + 249, status: 200, ..Default::default() }, None);
        m.add(0, &Record { lag_us: LATE_SEND_US + 250, status: 200, ..Default::default() }, None);
        assert_eq!((m.late_sends, m.pace_window_us, m.late_threshold_us()), (1, 250, LATE_SEND_US + 250));
        let mut merged = Metrics::new();
        merged.merge(&m);
        assert_eq!(merged.pace_window_us, 250);
    }

    #[test]
    fn late_sends_are_blamed_on_whichever_the_sends_waited_for() {
        // Half the sends 30 ms late, the cap never reached: the end record's wait counts decide.
        let late = |lag_us: u64| {
            let mut m = Metrics::new();
            for i in 0..10 {
                m.add(
                    0,
                    &Record { lag_us: if i % 2 == 0 { lag_us } else { 0 }, status: 200, ..Default::default() },
                    None,
                );
            }
            m
        };
        let m = late(30_000);
        let end = |t, g| RunEnd {
            asked_rate: Some(100.0),
            peak_in_flight: 20,
            in_flight_cap: Some(300),
            waits_for_target: t,
            waits_for_generator: g,
            complete: true,
            ..Default::default()
        };
        let mut busy = m.clone();
        busy.end(&end(3, 40)).unwrap();
        assert!(busy.generator_limited().is_some());
        let mut slow = m.clone();
        slow.end(&end(40, 3)).unwrap();
        assert_eq!(slow.generator_limited(), None);
        assert!(slow.behind() && slow.waited_for_target());
        assert_eq!(slow.limit(), crate::Limit::Target { cap: None });
        // A file from before the wait counts: the old rule (cap not reached: the generator).
        let mut old = m.clone();
        old.end(&end(0, 0)).unwrap();
        assert_eq!(old.limit(), crate::Limit::Generator { sent: old.sent_rate(), asked: 100.0 });
        // Behind by 6 ms only: noise, not a limit.
        let mut near = late(6_000);
        near.end(&end(3, 40)).unwrap();
        assert!(near.behind());
        assert_eq!(near.limit(), crate::Limit::Kept);
        // Every worker busy: the target, whatever the waits say.
        let mut capped = m.clone();
        capped.end(&RunEnd { peak_in_flight: 300, ..end(3, 40) }).unwrap();
        assert_eq!(capped.limit(), crate::Limit::Target { cap: Some(300) });
        // ... unless the generator stalled first: its catch-up burst filled the cap.
        let stall = crate::Stall { at_us: 3_000_000, length_us: 2_000_000, sends: 5 };
        let mut stalled = m.clone();
        stalled.end(&RunEnd { peak_in_flight: 300, stalls: vec![stall], ..end(40, 3) }).unwrap();
        assert_eq!((stalled.stalled_sends, stalled.stalls.len()), (5, 1));
        assert!(matches!(stalled.limit(), crate::Limit::Generator { .. }), "{:?}", stalled.limit());
        // A stall of 1% of the sends or fewer is noise: 1 of 10 sends is over it.
        let mut tiny = m.clone();
        tiny.end(&RunEnd { peak_in_flight: 300, stalls: vec![crate::Stall { sends: 0, ..stall }], ..end(40, 3) })
            .unwrap();
        assert_eq!(tiny.limit(), crate::Limit::Target { cap: Some(300) });
        let mut merged = Metrics::new();
        merged.merge(&stalled);
        merged.merge(&stalled);
        assert_eq!((merged.stalled_sends, merged.stalls.len()), (10, 1), "one pause, two runs' sends");
    }
}

mod exact {
    use crate::metrics::*;

    #[test]
    fn min_and_max_are_exact_where_the_histogram_rounds() {
        // A 1 s origin: the histogram's lowest bucket starts below every real latency.
        let mut m = Metrics::new();
        for lat in [1_000_248u64, 1_000_900, 1_017_333] {
            m.add(0, &Record { latency_us: lat, status: 200, ..Default::default() }, None);
        }
        assert!(m.latency.min() < 1_000_248, "the histogram rounds down: {}", m.latency.min());
        assert_eq!((m.latency_min_us, m.latency_max_us), (1_000_248, 1_017_333));
        // Percentiles stay within them: p99's bucket edge lies above the real maximum.
        assert!(m.latency.value_at_quantile(0.99) > 1_017_333);
        assert_eq!(m.latency_quantile_us(0.99), 1_017_333);
        assert_eq!(m.latency_quantile_us(0.0), 1_000_248);
        let mut other = Metrics::new();
        other.add(0, &Record { latency_us: 999_000, status: 200, ..Default::default() }, None);
        m.merge(&other);
        assert_eq!((m.latency_min_us, m.latency_max_us), (999_000, 1_017_333));
    }
}
