//! The `k8s` subcommands' arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::args::values::{duration, positive_duration};

#[derive(Subcommand, Debug)]
pub enum K8sCommand {
    /// Print the manifests (YAML) of an attack run by N pods: an Indexed Job, a headless Service
    /// for the start barrier and the live views, a ConfigMap with the given files. The pods send
    /// their results to pod 0, served for `k8s collect` (or write them to --results-claim).
    /// Give the attack's own arguments after `--`.
    Job(K8sJobArgs),
    /// Copy the results a Job gathered on its pod 0 into a folder, once every pod's are there:
    /// give pod 0's live view (`kubectl port-forward service/NAME-results 9100`, then
    /// http://127.0.0.1:9100).
    Collect(K8sCollectArgs),
}

#[derive(Args, Debug)]
pub struct K8sJobArgs {
    /// Name of the Job (and of its Services and ConfigMap): a DNS-1035 label, at most 52
    /// characters (pods add an index).
    #[arg(long)]
    pub name: String,
    /// Pods, each sending its share of the attack.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=attack::MAX_SHARDS))]
    pub shards: u64,
    /// The container image with loadlab as its entry point's first word (`loadlab`).
    #[arg(long)]
    pub image: String,
    /// Namespace of every object.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// CPU and memory each pod requests (and is limited to).
    #[arg(long, default_value = "1")]
    pub cpu: String,
    #[arg(long, default_value = "512Mi")]
    pub memory: String,
    /// A file the attack reads (targets, bodies), put in the ConfigMap and mounted at /config
    /// (1 MiB in all; beyond that use --config-claim).
    #[arg(long = "file", conflicts_with = "config_claim")]
    pub files: Vec<PathBuf>,
    /// An existing volume claim with the attack's files, mounted read-only at /config.
    #[arg(long)]
    pub config_claim: Option<String>,
    /// Space for each pod's results (an emptyDir's size limit).
    #[arg(long, default_value = "1Gi")]
    pub results_size: String,
    /// An existing ReadWriteMany claim every pod writes its results to, instead of sending them
    /// to pod 0.
    #[arg(long)]
    pub results_claim: Option<String>,
    /// How long pod 0 waits for `k8s collect` after the run (it ends sooner once collected).
    #[arg(long, default_value = "30m", value_parser = positive_duration)]
    pub collect_within: Duration,
    /// The attack's arguments (after `--`), as for `loadlab attack`.
    #[arg(last = true, required = true)]
    pub attack: Vec<String>,
}

#[derive(Args, Debug)]
pub struct K8sCollectArgs {
    /// Pod 0's live view, e.g. http://127.0.0.1:9100 through kubectl port-forward.
    pub url: String,
    /// Folder the files are written to.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// How long to wait for every pod's results to reach pod 0.
    #[arg(long, default_value = "10m", value_parser = duration)]
    pub wait: Duration,
    /// Replace files already in --out.
    #[arg(long)]
    pub force: bool,
}
