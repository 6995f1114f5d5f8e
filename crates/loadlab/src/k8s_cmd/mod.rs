//! `loadlab k8s`: `job` prints the manifests of an attack run by the pods of an Indexed Job;
//! `collect` copies the results gathered on its pod 0 out of the cluster.

pub mod args;

mod attack_args;

use args::K8sCommand;

pub fn run(cmd: K8sCommand) -> anyhow::Result<()> {
    match cmd {
        K8sCommand::Job(a) => {
            // Said in this order: the Job's names, then the attack's arguments.
            fleet::job::check_names(&a.name, &a.namespace)?;
            let spec = fleet::job::JobSpec {
                attack: attack_args::check(&a.attack)?,
                name: a.name,
                namespace: a.namespace,
                shards: a.shards,
                image: a.image,
                cpu: a.cpu,
                memory: a.memory,
                files: a.files,
                config_claim: a.config_claim,
                results_size: a.results_size,
                results_claim: a.results_claim,
                collect_within: a.collect_within,
            };
            print!("{}", fleet::job::yaml(&spec)?);
            Ok(())
        }
        K8sCommand::Collect(a) => {
            fleet::collect::run(&fleet::collect::Collect { url: a.url, out: a.out, wait: a.wait, force: a.force })
        }
    }
}
