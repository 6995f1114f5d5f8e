//! Fills a history with simulated labs, for bench/history-scale.sh:
//! `fill HISTORY LABS` writes LABS labs of one plan, each with 5 load points of 10 series
//! (the 7 recorded figures and 3 profiled functions): 50 series, with a +10% step in p99 at
//! nine tenths of the labs so a change point is there to find.

use history::{Entry, History, Step};

fn lab(i: usize, labs: usize) -> Entry {
    // A fixed pseudo-random noise (no seed to carry): 3% around each level.
    let noise = |k: usize| 1.0 + 0.03 * (((i * 7919 + k * 104_729) % 1000) as f64 / 500.0 - 1.0);
    let steps = (0..5)
        .map(|p| {
            let rate = 100 * (p + 1);
            let step = if i >= labs * 9 / 10 { 1.10 } else { 1.0 };
            let mut values: Vec<(std::sync::Arc<str>, f64)> = [
                ("p50", 2.0),
                ("p90", 3.0),
                ("p99", 5.0 * step),
                ("success", 1.0),
                ("throughput", rate as f64),
                ("target_cpu", 180.0),
                ("generator_cpu", 40.0),
            ]
            .iter()
            .enumerate()
            .map(|(k, (m, v))| ((*m).into(), v * noise(k + p * 10)))
            .collect();
            for (k, f) in ["deflate", "memcpy", "epoll_wait"].iter().enumerate() {
                values.push((format!("fn:{f}").into(), 10.0 * noise(k + 7 + p * 10)));
            }
            Step {
                id: format!("{:02}-r{rate}", p + 1),
                target: "svc".into(),
                load: format!(r#"{{"rate":{rate}.0}}"#),
                label: format!("{rate}/s"),
                repeat: 0,
                not_counted: None,
                values,
            }
        })
        .collect();
    Entry {
        uid: format!("fill-{i}"),
        plan: "api".into(),
        started_unix_s: 1_700_000_000 + i as i64 * 3600,
        commit: Some(format!("{:016x}{i:024x}", (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))),
        branch: Some("main".into()),
        tags: "{}".into(),
        loadlab: "0.1.0".into(),
        measurement: 2,
        machine: "0badcafe".into(),
        machine_text: "2 × test CPU".into(),
        path: format!("labs/{i}"),
        quick: false,
        steps,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, spec, labs] = args.as_slice() else {
        return Err("usage: fill HISTORY LABS".into());
    };
    let labs: usize = labs.parse()?;
    let mut h = History::open(spec).await?;
    let have = h.labs().await?.len();
    for i in have..labs {
        h.add(&lab(i, labs)).await?;
        if (i + 1) % 1000 == 0 {
            eprintln!("fill: {} labs", i + 1);
        }
    }
    Ok(())
}
