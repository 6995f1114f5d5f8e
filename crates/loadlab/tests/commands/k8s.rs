//! `loadlab k8s job`: the manifests of a sharded attack, validated offline against the
//! Kubernetes schemas (kubernetes-validate, strict) for 1, 3 and 50 pods.

use crate::support::{loadlab, tempdir};
use std::process::{Command, Stdio};

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
        assert_eq!(kinds, ["ConfigMap", "Service", "Service", "Job"]);
        assert_eq!(said.matches("passed for resource").count(), 4, "{said}");
        let job = &docs[3]["spec"];
        assert_eq!((job["completions"].as_u64(), job["parallelism"].as_u64()), (Some(n), Some(n)));
        assert_eq!(job["completionMode"], "Indexed");
        let c = &job["template"]["spec"]["containers"][0];
        let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
        assert_eq!(args[..4], ["attack", "--targets", "targets.txt", "--rate"]);
        assert_eq!(after("--shards"), n.to_string());
        assert_eq!(after("--barrier"), "checkout-burst-0.checkout-burst:7777");
        assert_eq!(after("--output"), "/results/checkout-burst-$(JOB_COMPLETION_INDEX).llr");
        // No shared volume: each pod's results go to pod 0, served by the second Service.
        assert!(args.contains(&"--collect"), "{args:?}");
        assert_eq!(after("--live-linger"), "30m0s");
        assert_eq!(job["template"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "1Gi");
        assert_eq!(docs[2]["metadata"]["name"], "checkout-burst-results");
        assert_eq!(docs[2]["spec"]["selector"]["batch.kubernetes.io/job-completion-index"], "0");
        assert_eq!(c["workingDir"], "/config");
        assert_eq!(docs[0]["data"]["targets.txt"], "GET http://checkout.shop:8080/cart\n");
        assert_eq!(docs[1]["spec"]["clusterIP"], "None");
    }
}

#[test]
fn a_manifest_that_breaks_the_schema_is_caught() {
    // The validator is not a rubber stamp: a Job with a string where a count belongs fails.
    let dir = tempdir("broken");
    let o = loadlab()
        .args([
            "k8s",
            "job",
            "--name",
            "x",
            "--shards",
            "2",
            "--image",
            "i",
            "--",
            "http://a/",
            "--rate",
            "1",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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
    let o =
        run(&["--name", "ok", "--file", "/nonexistent/targets", "--", "http://a/", "--rate", "1", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `k8s job` with these options and attack arguments: exit code, stderr and the documents.
fn job(opts: &[&str], attack: &[&str]) -> (Option<i32>, String, Vec<serde_json::Value>) {
    let o = loadlab()
        .args(["k8s", "job", "--shards", "3", "--image", "i"])
        .args(opts)
        .arg("--")
        .args(attack)
        .output()
        .unwrap();
    let docs = if o.status.success() { documents(&String::from_utf8_lossy(&o.stdout)) } else { Vec::new() };
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned(), docs)
}

#[test]
fn names_are_checked_as_the_api_server_would() {
    let attack = ["http://a/", "--rate", "1", "--duration", "1s"];
    for bad in ["1abc", "-abc", "abc-", "Abc", "a_b", &"a".repeat(53)] {
        let (code, err, _) = job(&[&format!("--name={bad}")], &attack);
        assert_eq!(code, Some(2), "{bad}");
        assert!(err.contains("DNS-1035"), "{err}");
    }
    let (code, _, docs) = job(&["--name", "a1-b"], &attack);
    assert_eq!(code, Some(0));
    assert_eq!(docs[0]["metadata"]["name"], "a1-b");
    let (code, err, _) = job(&["--name", "ok", "--namespace", "Team_A"], &attack);
    assert_eq!(code, Some(2));
    assert!(err.contains("--namespace \"Team_A\""), "{err}");
}

#[test]
fn the_attacks_arguments_are_read_by_the_attacks_own_parser() {
    let name = ["--name", "ok"];
    // As users type it: the subcommand's name first, once in the pods' arguments.
    let (code, err, docs) = job(&name, &["attack", "http://a/", "-rate=10", "-duration", "1m"]);
    assert_eq!(code, Some(0), "{err}");
    let args = docs.last().unwrap()["spec"]["template"]["spec"]["containers"][0]["args"].clone();
    let args: Vec<&str> = args.as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args[..5], ["attack", "http://a/", "-rate=10", "-duration", "1m"]);
    for own in [&["-output=x.llr"][..], &["-ox.llr"], &["-o", "x"], &["-live=0.0.0.0:1"], &["--shard", "1/3"]] {
        let mut attack = vec!["http://a/", "--rate", "1", "--duration", "1s"];
        attack.extend_from_slice(own);
        let (code, err, _) = job(&name, &attack);
        assert_eq!(code, Some(2), "{own:?}");
        assert!(err.contains("leave it out of the attack's arguments"), "{own:?}: {err}");
    }
    let (code, err, _) = job(&name, &["http://a/", "--rate", "fast", "--duration", "1s"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid value 'fast' for '--rate"), "{err}");
    let (code, err, _) = job(&name, &["http://a/", "--rate", "10"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--rate needs --duration"), "{err}");
}

#[test]
fn config_map_files_are_bounded_and_binary_ones_encoded() {
    let dir = tempdir("files");
    let big = dir.join("big.txt");
    std::fs::write(&big, "GET http://a/\n".repeat(150_000)).unwrap();
    let attack = ["--targets", "big.txt", "--rate", "1", "--duration", "1s"];
    let (code, err, _) = job(&["--name", "ok", "--file", big.to_str().unwrap()], &attack);
    assert_eq!(code, Some(2));
    assert!(err.contains("the files come to 2.0 MiB") && err.contains("--config-claim"), "{err}");
    // The way round it: the files on a volume of the user's.
    let (code, err, docs) = job(&["--name", "ok", "--config-claim", "attack-files"], &attack);
    assert_eq!(code, Some(0), "{err}");
    let pod = &docs.last().unwrap()["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][1]["persistentVolumeClaim"]["claimName"], "attack-files");
    assert_eq!(pod["containers"][0]["workingDir"], "/config");
    let body = dir.join("body.bin");
    std::fs::write(&body, [0u8, 159, 146, 150]).unwrap();
    let (code, err, docs) = job(
        &["--name", "ok", "--file", body.to_str().unwrap()],
        &["http://a/", "--body", "body.bin", "--rate", "1", "--duration", "1s"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(docs[0]["binaryData"]["body.bin"], "AJ+Slg==");
    // With a claim every pod can write, results go there and pod 0 gathers nothing.
    let (code, _, docs) =
        job(&["--name", "ok", "--results-claim", "shared"], &["http://a/", "--rate", "1", "--duration", "1s"]);
    assert_eq!(code, Some(0));
    let c = &docs.last().unwrap()["spec"]["template"]["spec"];
    assert_eq!(c["volumes"][0]["persistentVolumeClaim"]["claimName"], "shared");
    assert!(!c["containers"][0]["args"].as_array().unwrap().contains(&serde_json::json!("--collect")));
    assert_eq!(docs.iter().filter(|d| d["kind"] == "Service").count(), 1);
}

#[test]
fn the_binary_needs_only_what_the_images_runtime_stage_has() {
    // The Dockerfile runs loadlab from distroless/cc: glibc, libm and libgcc_s, nothing else
    // (no OpenSSL, no libz): a new dynamic dependency would make every pod fail to start.
    let o = Command::new("ldd").arg(env!("CARGO_BIN_EXE_loadlab")).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let libs: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(libs.iter().any(|l| l.starts_with("libc.so")), "{text}");
    let allowed = [
        "linux-vdso",
        "libc.so",
        "libm.so",
        "libgcc_s.so",
        "/lib64/ld-linux",
        "ld-linux",
        "libdl.so",
        "libpthread.so",
        "librt.so",
    ];
    for lib in libs {
        assert!(allowed.iter().any(|a| lib.starts_with(a)), "{lib} is not in distroless/cc: {text}");
    }
    let dockerfile = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Dockerfile")).unwrap();
    assert!(dockerfile.contains("FROM gcr.io/distroless/cc-debian12:nonroot") && dockerfile.contains("USER nonroot"));
}
