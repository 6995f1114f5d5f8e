//! The manifests (`loadlab k8s job`) of an attack run by N pods of a Kubernetes Indexed Job. Pod
//! I runs `loadlab attack ... --shards N` (its index comes as JOB_COMPLETION_INDEX), meets the
//! others at a barrier on pod 0 (found through a headless Service) and serves its live view on
//! port 9100 for the cluster's Prometheus. Results: by default each pod writes its file to an
//! emptyDir and sends it to pod 0 (`--collect`), which serves them all until `loadlab k8s
//! collect` has copied them out (through the `NAME-results` Service, pod 0 only); so no volume
//! many pods can write is needed, which most clusters lack. With `--results-claim` they write to
//! that claim instead. Printed as JSON documents, which are YAML.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::bad;

/// What the Job runs, and where (the command's flags, named after them).
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub name: String,
    pub namespace: String,
    pub shards: u64,
    pub image: String,
    /// Requested and limited, per pod.
    pub cpu: String,
    pub memory: String,
    /// Files the attack reads, put in a ConfigMap mounted at /config.
    pub files: Vec<PathBuf>,
    pub config_claim: Option<String>,
    pub results_size: String,
    pub results_claim: Option<String>,
    pub collect_within: Duration,
    /// The attack's own arguments, already checked.
    pub attack: Vec<String>,
}

const BARRIER_PORT: u16 = 7777;
const LIVE_PORT: u16 = 9100;

/// What the API server keeps in one ConfigMap.
const MAX_CONFIG_MAP: usize = 1 << 20;
/// The label Kubernetes (1.28 and later) puts on each pod of an Indexed Job.
const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

/// A DNS-1035 label as the API server checks a Service's name: a lower-case letter first,
/// then letters, digits and dashes, no dash last; at most 52 here, so pods' names (`NAME-49`)
/// and the other objects' (`NAME-results`, `NAME-config`) stay within 63.
fn dns_1035(s: &str) -> bool {
    (1..=52).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
}

/// A ConfigMap key: letters, digits, `-`, `_` and `.`.
fn config_key(s: &str) -> bool {
    (1..=253).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && s != "."
        && s != ".."
}

/// The manifests as YAML documents (JSON is YAML).
pub fn yaml(a: &JobSpec) -> anyhow::Result<String> {
    let mut out = String::new();
    for doc in manifests(a)? {
        out += &format!("---\n{}\n", serde_json::to_string_pretty(&doc)?);
    }
    Ok(out)
}

/// The Job's name and namespace as the API server would check them.
pub fn check_names(name: &str, namespace: &str) -> anyhow::Result<()> {
    if !dns_1035(name) {
        return Err(bad(format!(
            "--name {:?}: a lower-case letter, then up to 51 lower-case letters, digits and dashes, not ending in one \
             (a Service name, DNS-1035)",
            name
        )));
    }
    let ns = namespace;
    let namespace_ok = (1..=63).contains(&ns.len())
        && ns.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !ns.starts_with('-')
        && !ns.ends_with('-');
    if !namespace_ok {
        return Err(bad(format!(
            "--namespace {:?}: not a namespace name (lower-case letters, digits, dashes)",
            namespace
        )));
    }
    Ok(())
}

pub fn manifests(a: &JobSpec) -> anyhow::Result<Vec<Value>> {
    check_names(&a.name, &a.namespace)?;
    let name = &a.name;
    let labels = json!({"app.kubernetes.io/name": "loadlab", "app.kubernetes.io/instance": name});
    let meta = |n: &str| json!({"name": n, "namespace": a.namespace, "labels": labels});
    let (files, binary) = config_files(a)?;
    let collect = a.results_claim.is_none();
    let mut args: Vec<String> = vec!["attack".into()];
    args.extend(a.attack.iter().cloned());
    let linger = if collect { results::duration::go_string(a.collect_within.as_nanos() as u64) } else { "60s".into() };
    args.extend([
        "--shards".to_owned(),
        a.shards.to_string(),
        "--barrier".into(),
        format!("{name}-0.{name}:{BARRIER_PORT}"),
        "--live".into(),
        format!("0.0.0.0:{LIVE_PORT}"),
        "--live-public".into(),
        "--live-linger".into(),
        linger,
        "--output".into(),
        // Kubernetes puts each pod's index in for $(JOB_COMPLETION_INDEX).
        format!("/results/{name}-$(JOB_COMPLETION_INDEX).llr"),
    ]);
    if collect {
        args.push("--collect".into());
    }
    let mut mounts = vec![json!({"name": "results", "mountPath": "/results"})];
    let mut volumes = vec![match &a.results_claim {
        Some(claim) => json!({"name": "results", "persistentVolumeClaim": {"claimName": claim}}),
        None => json!({"name": "results", "emptyDir": {"sizeLimit": a.results_size}}),
    }];
    let mut docs = Vec::new();
    let mut container = json!({});
    if !files.is_empty() || !binary.is_empty() || a.config_claim.is_some() {
        // Relative paths in the attack's arguments (targets, bodies) name the given files.
        container["workingDir"] = json!("/config");
        mounts.push(json!({"name": "config", "mountPath": "/config", "readOnly": true}));
    }
    if let Some(claim) = &a.config_claim {
        volumes.push(json!({"name": "config", "persistentVolumeClaim": {"claimName": claim, "readOnly": true}}));
    } else if !files.is_empty() || !binary.is_empty() {
        volumes.push(json!({"name": "config", "configMap": {"name": format!("{name}-config")}}));
        let mut map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&format!("{name}-config"))});
        if !files.is_empty() {
            map["data"] = json!(files);
        }
        if !binary.is_empty() {
            map["binaryData"] = json!(binary);
        }
        docs.push(map);
    }
    docs.push(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(name),
        "spec": {
            // Headless: pod 0 is found by name (NAME-0.NAME) for the barrier, before it is ready.
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": {"app.kubernetes.io/instance": name},
            "ports": [
                {"name": "barrier", "port": BARRIER_PORT, "targetPort": BARRIER_PORT},
                {"name": "live", "port": LIVE_PORT, "targetPort": LIVE_PORT},
            ],
        },
    }));
    if collect {
        // Pod 0 alone, where the results gather: `kubectl port-forward service/NAME-results 9100`.
        docs.push(json!({
            "apiVersion": "v1", "kind": "Service", "metadata": meta(&format!("{name}-results")),
            "spec": {
                "selector": {"app.kubernetes.io/instance": name, INDEX_LABEL: "0"},
                "ports": [{"name": "live", "port": LIVE_PORT, "targetPort": LIVE_PORT}],
            },
        }));
    }
    let resources = json!({"cpu": a.cpu, "memory": a.memory});
    docs.push(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name),
        "spec": {
            "completionMode": "Indexed",
            "completions": a.shards,
            "parallelism": a.shards,
            "backoffLimit": 0,
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": LIVE_PORT.to_string(), "prometheus.io/path": "/metrics"},
                },
                "spec": {
                    "subdomain": name,
                    "restartPolicy": "Never",
                    // One generator per node where the cluster allows it: shards share no NIC.
                    "topologySpreadConstraints": [{
                        "maxSkew": 1,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": name}},
                    }],
                    "containers": [merge(container, json!({
                        "name": "loadlab",
                        "image": a.image,
                        "command": ["loadlab"],
                        "args": args,
                        "ports": [
                            {"name": "barrier", "containerPort": BARRIER_PORT},
                            {"name": "live", "containerPort": LIVE_PORT},
                        ],
                        "resources": {"requests": resources, "limits": resources},
                        // The image runs as an unprivileged user (see Dockerfile); writes go to
                        // /results only.
                        "securityContext": {
                            "runAsNonRoot": true,
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": mounts,
                    }))],
                    "volumes": volumes,
                },
            },
        },
    }));
    Ok(docs)
}

/// The ConfigMap's files by name: text as `data`, anything else (base64) as `binaryData`.
fn config_files(a: &JobSpec) -> anyhow::Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    use base64::Engine;
    let (mut text, mut binary) = (BTreeMap::new(), BTreeMap::new());
    let mut size = 0;
    for f in &a.files {
        let bytes = std::fs::read(f).map_err(|e| bad(format!("--file {}: {e}", f.display())))?;
        let key = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !config_key(&key) {
            return Err(bad(format!(
                "--file {}: name the file with letters, digits, '-', '_' and '.' only",
                f.display()
            )));
        }
        if text.contains_key(&key) || binary.contains_key(&key) {
            return Err(bad(format!("--file {}: a second file named {key} (they share /config)", f.display())));
        }
        match String::from_utf8(bytes) {
            Ok(s) => {
                size += key.len() + s.len();
                text.insert(key, s);
            }
            Err(e) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(e.as_bytes());
                size += key.len() + encoded.len();
                binary.insert(key, encoded);
            }
        }
    }
    if size > MAX_CONFIG_MAP {
        return Err(bad(format!(
            "--file: the files come to {:.1} MiB in the ConfigMap, which holds at most 1 MiB: put them on a volume \
             and give --config-claim CLAIM (mounted at /config), or build them into the image",
            size as f64 / f64::from(1 << 20)
        )));
    }
    Ok((text, binary))
}

/// `a` with the fields of `b` added.
fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}
