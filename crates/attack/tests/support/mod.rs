//! What the attack test binaries share: running an attack into memory and reading it back.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use attack::{AttackConfig, Model, Schedule, Target};
use http::Method;
use results::{Item, LlrWriter, Metrics, Reader, Record};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
pub(crate) struct SharedBuf(pub Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) struct Run {
    pub metrics: Metrics,
    pub records: Vec<(Record, Option<String>)>,
    /// The results file as written.
    pub bytes: Vec<u8>,
}

impl Run {
    pub(crate) fn errors(&self) -> Vec<&str> {
        self.records.iter().filter_map(|(_, e)| e.as_deref()).collect()
    }
}

pub(crate) fn target(url: &str) -> Target {
    Target::new(Method::GET, url.parse().unwrap())
}

pub(crate) fn open(targets: Vec<Target>, rate: f64, secs: f64) -> AttackConfig {
    AttackConfig::new(targets, Model::Open { schedule: Schedule::constant(rate, Duration::from_secs_f64(secs)) })
}

pub(crate) fn closed(targets: Vec<Target>, connections: usize, streams: usize, requests: u64) -> AttackConfig {
    AttackConfig::new(targets, Model::Closed { streams, requests: Some(requests), duration: None })
        .with_connections(connections)
}

pub(crate) async fn attack(config: AttackConfig) -> Run {
    let buf = SharedBuf::default();
    let summary = attack::run(config, LlrWriter::new(buf.clone()), CancellationToken::new()).await.unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    let mut reader = Reader::new(&bytes[..], "mem");
    let mut records = Vec::new();
    let mut ended = false;
    while let Some(item) = reader.next().unwrap() {
        match item {
            Item::Record(r) => records.push((r, reader.error_text(r.error).map(str::to_owned))),
            Item::End(_) => ended = true,
            Item::Run(_) => {}
        }
    }
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    assert!(ended, "results file not closed cleanly");
    assert_eq!(records.len() as u64, summary.metrics.requests);
    Run { metrics: summary.metrics, records, bytes }
}

pub(crate) fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

pub(crate) fn tempdir() -> std::path::PathBuf {
    let d =
        std::env::temp_dir().join(format!("loadlab-attack-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Per-second counts of sends (actual send time = scheduled + lag), from the run's records.
pub(crate) fn sends_per_second(run: &Run) -> std::collections::BTreeMap<u64, u64> {
    let mut per = std::collections::BTreeMap::new();
    for (r, _) in &run.records {
        *per.entry((r.scheduled_us + r.lag_us) / 1_000_000).or_insert(0u64) += 1;
    }
    per
}
