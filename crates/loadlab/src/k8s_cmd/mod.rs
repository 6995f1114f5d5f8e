//! `loadlab k8s`: `job` prints the manifests of an attack run by the pods of an Indexed Job;
//! `collect` copies the results gathered on its pod 0 out of the cluster.

mod attack_args;
mod collect;
mod job;

use crate::cli::K8sCommand;

pub fn run(cmd: K8sCommand) -> anyhow::Result<()> {
    match cmd {
        K8sCommand::Job(a) => job::run(&a),
        K8sCommand::Collect(a) => collect::run(&a),
    }
}
