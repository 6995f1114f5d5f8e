//! `attack --traces`: every request's trace id, as `encode --to json` gives it, unique within a
//! run and across its shards, the same under the same `--seed`.

use std::collections::HashSet;
use std::path::Path;

use crate::cli::start_origin;
use crate::support::{loadlab, stderr, stdout, tempdir};

/// The trace ids of the requests in `llr`, in file order (none where a line has none).
fn trace_ids(llr: &Path) -> Vec<Option<String>> {
    let o = loadlab().args(["encode", "--to", "json"]).arg(llr).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["trace_id"].as_str().map(str::to_owned)
        })
        .collect()
}

#[test]
fn each_request_has_its_own_trace_id_the_same_seed_the_same_ids_and_shards_never_share_one() {
    let d = tempdir("traces");
    let (mut origin, addr) = start_origin(&["--listen", "127.0.0.1:0"], &[]);
    let url = format!("http://{addr}/");
    let attack = |name: &str, extra: &[&str]| {
        let out = d.join(format!("{name}.llr"));
        let o = loadlab()
            .args(["attack", &url, "--rate", "50", "--duration", "1s", "--output"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        trace_ids(&out)
    };
    let first = attack("seed7", &["--traces", "--seed", "7"]);
    assert_eq!(first.len(), 50);
    let ids: HashSet<&str> = first.iter().map(|i| i.as_deref().expect("a trace id on every request")).collect();
    assert_eq!(ids.len(), 50, "one id a request");
    assert!(ids.iter().all(|i| i.len() == 32 && i.bytes().all(|b| b.is_ascii_hexdigit())), "{ids:?}");
    // The same seed: the same ids; another seed, or none: others.
    assert_eq!(attack("again", &["--traces", "--seed", "7"]), first);
    let other = attack("seed8", &["--traces", "--seed", "8"]);
    assert!(other.iter().all(|i| !ids.contains(i.as_deref().unwrap())));
    let random = attack("random", &["--traces"]);
    assert!(random.iter().all(|i| !ids.contains(i.as_deref().unwrap())));
    // Two shards of one run share the key and number their requests globally: no id twice.
    let a = attack("shard0", &["--traces", "--seed", "7", "--shard", "0/2"]);
    let b = attack("shard1", &["--traces", "--seed", "7", "--shard", "1/2"]);
    let shards: HashSet<String> = a.iter().chain(&b).map(|i| i.clone().unwrap()).collect();
    assert_eq!(shards.len(), a.len() + b.len());
    assert!(!a.is_empty() && !b.is_empty());
    // Without --traces no request has one.
    assert!(attack("plain", &[]).iter().all(Option::is_none));
    let _ = origin.kill();
    let _ = origin.wait();
}

#[test]
fn otlp_export_sends_each_requests_client_span_as_the_parent_its_traceparent_named() {
    let d = tempdir("otlp-export");
    let (mut origin, addr) = start_origin(&["--listen", "127.0.0.1:0"], &[]);
    let collector = crate::support::collector::Collector::start();
    let out = d.join("run.llr");
    let o = loadlab()
        .args(["attack", &format!("http://{addr}/"), "--rate", "50", "--duration", "1s", "--seed", "7"])
        .args(["--otlp-export", &collector.url(), "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let said = format!("client spans: 50 exported to {}/v1/traces", collector.url());
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    // --otlp-export implies --traces: every request has its trace id, and its client span.
    let ids = trace_ids(&out);
    assert_eq!(ids.len(), 50);
    // The run's key, as its file's header keeps it.
    let mut reader = results::Reader::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()), "run");
    let Some(results::Item::Run(header)) = reader.next().unwrap() else { panic!("no header") };
    let key = header.plan().trace_key().unwrap();
    let spans = collector.spans();
    assert_eq!(spans.len(), 50);
    for id in ids {
        let id = u128::from_str_radix(&id.expect("a trace id on every request"), 16).unwrap();
        let seq = key.seq_of(id).unwrap();
        let s = spans.iter().find(|s| s.trace_id == id).expect("a client span for every request");
        // The id the request's traceparent carried as its parent: the server's span's parent.
        assert_eq!((s.span_id, s.parent, s.name.as_str()), (key.span_id(seq), 0, "GET"));
        assert!(s.end_ns > s.start_ns);
    }
    // A collector that is not there: the load is done and kept, the export said to have failed.
    let gone = crate::support::free_port();
    let o = loadlab()
        .args(["attack", &format!("http://{addr}/"), "--rate", "20", "--duration", "1s"])
        .args(["--otlp-export", &format!("http://127.0.0.1:{gone}/"), "--output"])
        .arg(d.join("gone.llr"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("client spans: 0 of 20 exported") && stderr(&o).contains("20 not sent"),
        "{}",
        stderr(&o)
    );
    assert_eq!(trace_ids(&d.join("gone.llr")).len(), 20);
    // Not a collector's URL: one line, before any load.
    let o = loadlab()
        .args(["attack", &format!("http://{addr}/"), "--rate", "5", "--duration", "1s"])
        .args(["--otlp-export", "collector:4318", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--otlp-export: \"collector:4318\""), "{}", stderr(&o));
    let _ = origin.kill();
    let _ = origin.wait();
}
