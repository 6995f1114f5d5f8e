//! One attack run by many workers (shards): `barrier` starts them together and `gather` brings
//! their results files to worker 0; `job` writes the Kubernetes manifests that run them as an
//! Indexed Job, and `collect` copies the gathered files out of the cluster.

pub mod barrier;
pub mod collect;
pub mod gather;
pub mod job;

/// A failure caused by what the user gave (a name, a file, an address).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Shorthand for a [`BadInput`] as an error.
pub(crate) fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}
