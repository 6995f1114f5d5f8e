//! Beyond one process: the live view of a run, and sharded attacks.
//! One test binary (each links all of loadlab: fewer binaries, a faster build).

#[path = "../support/mod.rs"]
mod support;

mod live;
mod shards;
