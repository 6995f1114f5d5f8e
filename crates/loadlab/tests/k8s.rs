//! `loadlab k8s job`: the manifests of a sharded attack, validated offline against the
//! Kubernetes schemas (kubernetes-validate, strict) for 1, 3 and 50 pods.

use std::process::{Command, Stdio};

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("loadlab-k8s-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The JSON documents of `---`-separated output.
fn documents(yaml: &str) -> Vec<serde_json::Value> {
    yaml.split("---\n").filter(|d| !d.trim().is_empty()).map(|d| serde_json::from_str(d).unwrap()).collect()
}

#[test]
fn manifests_validate_for_1_3_and_50_pods() {
    let dir = tempdir("validate");
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, "GET http://checkout.shop:8080/cart\n").unwrap();
    for n in [1u64, 3, 50] {
        let o = loadlab()
            .args([
                "k8s",
                "job",
                "--name",
                "checkout-burst",
                "--shards",
                &n.to_string(),
                "--image",
                "registry.example/loadlab:1",
            ])
            .arg("--file")
            .arg(&targets)
            .args(["--", "--targets", "targets.txt", "--rate", "20000", "--duration", "10m"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let yaml = String::from_utf8(o.stdout).unwrap();
        let file = dir.join(format!("job-{n}.yaml"));
        std::fs::write(&file, &yaml).unwrap();
        let v = Command::new("python3")
            .args(["-m", "kubernetes_validate", "--strict"])
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .expect("python3 with kubernetes-validate is needed (scripts/test-all installs it)");
        let said = format!("{}{}", String::from_utf8_lossy(&v.stdout), String::from_utf8_lossy(&v.stderr));
        assert!(v.status.success() && !said.contains("ERROR"), "{said}");
        let docs = documents(&yaml);
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "Service", "Job"]);
        assert_eq!(said.matches("passed for resource").count(), 4, "{said}");
        let job = &docs[3]["spec"];
        assert_eq!((job["completions"].as_u64(), job["parallelism"].as_u64()), (Some(n), Some(n)));
        assert_eq!(job["completionMode"], "Indexed");
        let c = &job["template"]["spec"]["containers"][0];
        let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
        assert_eq!(after("--shards"), n.to_string());
        assert_eq!(after("--barrier"), "checkout-burst-0.checkout-burst:7777");
        assert_eq!(after("--output"), "/results/checkout-burst-$(JOB_COMPLETION_INDEX).llr");
        assert_eq!(c["workingDir"], "/config");
        assert_eq!(docs[0]["data"]["targets.txt"], "GET http://checkout.shop:8080/cart\n");
        assert_eq!(docs[2]["spec"]["clusterIP"], "None");
    }
}

#[test]
fn a_manifest_that_breaks_the_schema_is_caught() {
    // The validator is not a rubber stamp: a Job with a string where a count belongs fails.
    let dir = tempdir("broken");
    let o = loadlab()
        .args(["k8s", "job", "--name", "x", "--shards", "2", "--image", "i", "--", "http://a/", "--rate", "1"])
        .output()
        .unwrap();
    let yaml = String::from_utf8(o.stdout).unwrap().replace("\"completions\": 2", "\"completions\": \"two\"");
    let file = dir.join("broken.yaml");
    std::fs::write(&file, yaml).unwrap();
    let v = Command::new("python3").args(["-m", "kubernetes_validate", "--strict"]).arg(&file).output().unwrap();
    assert!(!v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

#[test]
fn bad_job_options_exit_2() {
    let run =
        |args: &[&str]| loadlab().args(["k8s", "job", "--shards", "2", "--image", "i"]).args(args).output().unwrap();
    let o = run(&["--name", "Bad_Name", "--", "http://a/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--name \"Bad_Name\""));
    let o = run(&["--name", "ok", "--", "http://a/", "--shards", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--shards: the Job sets it"));
    let o = run(&["--name", "ok", "--file", "/nonexistent/targets", "--", "http://a/"]);
    assert_eq!(o.status.code(), Some(2));
}
