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

/// This worker's shard: `--shard I/N` as given, or `--shards N` with `index`, the
/// `JOB_COMPLETION_INDEX` a Kubernetes Indexed Job sets in each pod; the whole run otherwise.
pub fn this_shard(
    shard: Option<attack::Shard>,
    shards: Option<u64>,
    index: Option<&str>,
) -> Result<attack::Shard, String> {
    match (shard, shards) {
        (Some(s), _) => Ok(s),
        (None, Some(n)) => {
            let index = index.ok_or("--shards needs JOB_COMPLETION_INDEX (set in each pod of an Indexed Job)")?;
            let i: u64 = index.trim().parse().map_err(|_| format!("JOB_COMPLETION_INDEX={index:?} is not a number"))?;
            attack::Shard::new(i, n).map_err(|e| format!("--shards {n}: {e}"))
        }
        (None, None) => Ok(attack::Shard::default()),
    }
}

/// The name of the variable [`this_shard`] reads the index from.
pub const SHARD_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// Shorthand for a [`BadInput`] as an error.
pub(crate) fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_takes_its_shard_from_the_jobs_index_and_a_bad_one_is_named() {
        let given = attack::Shard::new(1, 4).unwrap();
        assert_eq!(this_shard(Some(given), Some(9), Some("3")), Ok(given));
        assert_eq!(this_shard(None, Some(4), Some(" 2 ")), Ok(attack::Shard::new(2, 4).unwrap()));
        assert!(this_shard(None, Some(4), None).unwrap_err().contains("needs JOB_COMPLETION_INDEX"));
        assert!(this_shard(None, Some(4), Some("two")).unwrap_err().contains("\"two\" is not a number"));
        assert!(this_shard(None, Some(4), Some("4")).unwrap_err().starts_with("--shards 4: "));
        assert_eq!(this_shard(None, None, Some("3")), Ok(attack::Shard::default()));
    }
}
