//! `loadlab k8s job`: the manifests of an attack run by N pods of a Kubernetes Indexed Job. Pod
//! I runs `loadlab attack ... --shards N` (its index comes as JOB_COMPLETION_INDEX), meets the
//! others at a barrier on pod 0 (found through a headless Service), serves its live view on port
//! 9100 for the cluster's Prometheus, and writes its results to a shared volume, where `loadlab
//! report` reads all the pods' files as one run. Printed as JSON documents, which are YAML.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::bad;
use crate::cli::K8sJobArgs;

const BARRIER_PORT: u16 = 7777;
const LIVE_PORT: u16 = 9100;

/// Options the Job sets itself: the attack's arguments must not.
const OWN_FLAGS: [&str; 9] =
    ["--shard", "--shards", "--barrier", "--start-at", "--live", "--live-public", "--live-linger", "--output", "-o"];

fn dns_label(s: &str) -> bool {
    (1..=52).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

pub fn run(a: K8sJobArgs) -> anyhow::Result<()> {
    for doc in manifests(&a)? {
        println!("---\n{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(())
}

pub fn manifests(a: &K8sJobArgs) -> anyhow::Result<Vec<Value>> {
    if !dns_label(&a.name) {
        return Err(bad(format!("--name {:?}: use 1-52 lower-case letters, digits and dashes", a.name)));
    }
    if let Some(own) = a.attack.iter().find(|x| OWN_FLAGS.contains(&x.split('=').next().unwrap_or(x))) {
        return Err(bad(format!("{own}: the Job sets it for each pod; leave it out of the attack's arguments")));
    }
    let name = &a.name;
    let labels = json!({"app.kubernetes.io/name": "loadlab", "app.kubernetes.io/instance": name});
    let meta = |n: &str| json!({"name": n, "namespace": a.namespace, "labels": labels});
    let mut files = BTreeMap::new();
    for f in &a.files {
        let text = std::fs::read_to_string(f).map_err(|e| bad(format!("--file {}: {e}", f.display())))?;
        let key = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        files.insert(key, text);
    }
    let claim = a.results_claim.clone().unwrap_or_else(|| format!("{name}-results"));
    let mut args: Vec<String> = vec!["attack".into()];
    args.extend(a.attack.iter().cloned());
    args.extend([
        "--shards".to_owned(),
        a.shards.to_string(),
        "--barrier".into(),
        format!("{name}-0.{name}:{BARRIER_PORT}"),
        "--live".into(),
        format!("0.0.0.0:{LIVE_PORT}"),
        "--live-public".into(),
        "--live-linger".into(),
        "60s".into(),
        "--output".into(),
        // Kubernetes puts each pod's index in for $(JOB_COMPLETION_INDEX).
        format!("/results/{name}-$(JOB_COMPLETION_INDEX).llr"),
    ]);
    let mut mounts = vec![json!({"name": "results", "mountPath": "/results"})];
    let mut volumes = vec![json!({"name": "results", "persistentVolumeClaim": {"claimName": claim}})];
    let mut docs = Vec::new();
    let mut container = json!({});
    if !files.is_empty() {
        // Relative paths in the attack's arguments (targets, bodies) name the given files.
        container["workingDir"] = json!("/config");
        mounts.push(json!({"name": "config", "mountPath": "/config", "readOnly": true}));
        volumes.push(json!({"name": "config", "configMap": {"name": format!("{name}-config")}}));
        docs.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&format!("{name}-config")), "data": files}));
    }
    if a.results_claim.is_none() {
        docs.push(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(&claim),
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": a.results_size}}},
        }));
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
                        "volumeMounts": mounts,
                    }))],
                    "volumes": volumes,
                },
            },
        },
    }));
    Ok(docs)
}

/// `a` with the fields of `b` added.
fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}
