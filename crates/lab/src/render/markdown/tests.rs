#[test]
fn a_figure_is_always_inside_the_interval_beside_it() {
    let basis = crate::measure::estimate::Basis::WithinRun;
    let e = Estimate { n: 1, median: 50.2, mean: 50.2, ci: Some((50.0, 50.0)), basis };
    assert_eq!(super::cell_text(Metric::Rps, &e), "50.2/s [50.0, 50.2]");
}
use super::*;
use crate::measure::verdict::Finding;
use crate::outcome::{HypothesisPoint, HypothesisResult};

#[test]
fn a_hypothesis_with_one_side_unmeasured_shows_no_values_but_why() {
    let h = HypothesisResult {
        claim: "nginx answers faster".into(),
        metric: Metric::P50,
        subject: "nginx".into(),
        than: "python".into(),
        lower: true,
        points: vec![HypothesisPoint {
            point: "all".into(),
            subject: 0.319,
            other: 0.0,
            comparison: crate::measure::estimate::Comparison {
                ratio: f64::NAN,
                ci: None,
                p: None,
                significant: false,
                basis: crate::measure::estimate::Basis::WithinRun,
                note: Some("nothing measured on one side".into()),
            },
            finding: Finding::Inconclusive,
        }],
        finding: Finding::Inconclusive,
        function: None,
        span: None,
    };
    assert_eq!(
        hypothesis_sentence(&h, ""),
        "\"nginx answers faster\": inconclusive at 1 of 1 load points. (nothing measured on one side)"
    );
}
