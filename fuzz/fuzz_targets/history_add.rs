//! Any bytes as a lab.json given to `history add`: refused in one line, or recorded into a
//! history and read back by every view (list, table, CSV, JSON, Markdown, page, check), never a
//! panic. A lab that is admitted holds only what a history may show.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(lab) = lab::parse_lab(data, "lab.json") else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut h = history::History::open(":memory:").await.unwrap();
        let how = history::Recording {
            given: Default::default(),
            gates: Some(&[]),
            settings: Default::default(),
            any_machine: false,
        };
        let recorded = match history::record(&mut h, &lab, std::path::Path::new("lab"), &how).await {
            Ok(r) => r,
            Err(e) => {
                assert!(!e.to_string().contains('\n'), "{e}");
                return;
            }
        };
        let labs = h.labs().await.unwrap();
        for (_, entry) in &labs {
            assert!(!entry.plan.chars().any(history::reorders_or_controls));
        }
        let settings = how.settings;
        let series = history::series(&labs, &history::Query::default(), &settings);
        let _ = history::list_text(&series);
        let _ = history::show_text(&series, &settings);
        let _ = history::csv(&series);
        let _ = history::json(&series, &settings);
        let checks: Vec<_> = recorded.checked.into_iter().collect();
        let _ = history::markdown(&series, &settings, &checks, true);
        let _ = history::html(&series, &settings, &checks, std::path::Path::new("pages"));
        for c in &checks {
            let _ = history::check_text(c);
        }
    });
});
