//! Golden reports: a fixed set of records rendered by every report type and compared with the
//! files in tests/golden/. Run with UPDATE_GOLDEN=1 to rewrite them after an intended change.

use report::{write_report, ReportType};
use results::{Metrics, Record};

fn metrics() -> Metrics {
    let mut m = Metrics::new();
    let start = 1_656_921_155_000_000_000; // 2022-07-04T07:52:35Z
    for i in 0..1000u64 {
        let (status, error) = match i % 250 {
            0 => (500, Some("500 Internal Server Error")),
            1 => (0, Some("timeout")),
            _ => (200, None),
        };
        let latency_us = 100_000 + (i * 7_919) % 50_000 + if i % 100 == 99 { 900_000 } else { 0 };
        let r = Record {
            seq: i,
            scheduled_us: i * 10_000,
            latency_us,
            ttfb_us: latency_us - 1_000,
            lag_us: if i % 50 == 0 { 6_000 } else { 40 },
            status,
            bytes_in: if status == 200 { 204_800 } else { 9 },
            bytes_out: 0,
            new_conn: i < 25,
            ..Default::default()
        };
        m.add(start, &r, error);
    }
    m
}

fn check(name: &str, kind: ReportType) {
    let mut out = Vec::new();
    write_report(&kind, &metrics(), &mut out).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &out).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_GOLDEN=1", path.display()));
    assert_eq!(String::from_utf8(out).unwrap(), want, "{name} differs from its golden file");
}

#[test]
fn text_report() {
    check("report.txt", ReportType::Text);
}

#[test]
fn json_report() {
    check("report.json", ReportType::Json);
}

#[test]
fn hist_report() {
    check("hist.txt", "hist[0,100ms,125ms,150ms,1s]".parse().unwrap());
}

#[test]
fn hdr_report() {
    check("hdr.txt", ReportType::Hdr);
}

#[test]
fn empty_input_renders_zeroes() {
    let mut out = Vec::new();
    write_report(&ReportType::Text, &Metrics::new(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("Requests      [total, rate, throughput]         0, 0.00, 0.00\n"), "{text}");
}

#[test]
fn json_has_vegeta_fields_and_units() {
    let v = report::json_report(&metrics());
    assert_eq!(v["requests"], 1000);
    assert_eq!(v["earliest"], "2022-07-04T07:52:35Z");
    assert_eq!(v["duration"], 9_990_000_000u64);
    assert_eq!(v["status_codes"]["500"], 4);
    assert_eq!(v["success"], 0.992);
    // ns, from a histogram exact to 3 significant digits.
    let p50 = v["latencies"]["50th"].as_u64().unwrap();
    assert!((124_000_000..=126_000_000).contains(&p50), "{p50}");
    assert_eq!(v["errors"], serde_json::json!(["500 Internal Server Error", "timeout"]));
}

fn chart_data() -> report::chart::ChartData {
    use report::chart::ChartBuilder;
    let mut b = ChartBuilder::new("golden runs");
    for (run, slow) in [("A", 0u64), ("B", 20_000)] {
        let header =
            results::RunHeader { name: run.into(), start_unix_ns: 1_656_921_155_000_000_000, ..Default::default() };
        b.start_run(&header, "unused");
        for i in 0..600u64 {
            let status = if i % 97 == 0 { 503 } else { 200 };
            let latency_us = 100_000 + slow + (i * 7_919) % 30_000 + if i == 450 { 900_000 } else { 0 };
            let r = Record {
                seq: i,
                scheduled_us: i * 10_000,
                latency_us,
                ttfb_us: latency_us,
                status,
                ..Default::default()
            };
            b.add(&r, if status == 503 { Some("503 Service Unavailable") } else { None });
        }
    }
    b.finish()
}

#[test]
fn svg_charts() {
    let svg = report::chart::render_svg(&chart_data(), report::chart::Chart::All);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/charts.svg");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &svg).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).expect("tests/golden/charts.svg missing: run with UPDATE_GOLDEN=1");
    assert_eq!(svg, want, "charts.svg differs from its golden file");
}

#[test]
fn png_renders_the_same_charts() {
    let svg = report::chart::render_svg(&chart_data(), report::chart::Chart::Hdr);
    let png = report::chart::render_png(&svg, 1.0).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // 960 wide, one chart plus the title band.
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 960);
    assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 376);
}

#[test]
fn html_is_self_contained() {
    let html = report::chart::render_html(&chart_data(), report::chart::Chart::All);
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("src="), "no external resources");
    assert_eq!(html.matches("<canvas data-chart=").count(), 4);
    assert!(html.len() < 200_000, "{}", html.len());
}
