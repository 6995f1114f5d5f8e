//! Whether shard files make one whole run. Each worker of a sharded attack writes its shard
//! (`"shard": "I/N"` in its header) and the run id it shares with the others (`"run"`); read
//! together they are one run only when every shard from 0 to N-1 is there once, from the same
//! run, and complete. A report over a set with a shard missing would print a third less of
//! everything and say nothing.

use std::collections::BTreeMap;

use crate::consumer::{Consumer, Entry};
use crate::record::{RunEnd, RunHeader};

/// What a problem line says of a shard read more than once.
pub const GIVEN_TWICE: &str = "given more than once";

/// One run read from a source.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    source: String,
    shard: Option<(u64, u64)>,
    run: Option<String>,
    complete: bool,
}

/// Takes the runs of every source (name each with [`ShardSet::source`] before feeding it) and
/// says what is wrong with the set of shards among them.
#[derive(Debug, Default)]
pub struct ShardSet {
    source: String,
    seen: Vec<Seen>,
}

/// `"2/4"` as (2, 4).
fn parse_shard(s: &str) -> Option<(u64, u64)> {
    let (i, n) = s.split_once('/')?;
    let (i, n) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
    (i < n).then_some((i, n))
}

impl ShardSet {
    pub fn new() -> ShardSet {
        ShardSet::default()
    }

    /// The name of the source whose runs come next.
    pub fn source(&mut self, name: &str) {
        self.source = name.to_owned();
    }

    /// The shard (index, count) when exactly one run was read and it is one shard of a run split
    /// N > 1 ways: fine to look at, but not the run.
    pub fn alone(&self) -> Option<(u64, u64)> {
        match &self.seen[..] {
            [only] => only.shard.filter(|(_, n)| *n > 1),
            _ => None,
        }
    }

    /// What is wrong with the shards read, one line each (empty when the set is whole, or fewer
    /// than two runs were shards).
    pub fn problems(&self) -> Vec<String> {
        let shards: Vec<&Seen> = self.seen.iter().filter(|s| s.shard.is_some()).collect();
        let mut out = Vec::new();
        // One shard alone is a look at one worker (what pod 2 saw), not a claim about the run.
        if shards.len() < 2 {
            return out;
        }
        if shards.len() < self.seen.len() {
            out.push("shard files mixed with files that are not shards".to_owned());
        }
        let runs: BTreeMap<&str, Vec<&str>> = shards.iter().fold(BTreeMap::new(), |mut m, s| {
            m.entry(s.run.as_deref().unwrap_or("?")).or_insert_with(Vec::new).push(s.source.as_str());
            m
        });
        if runs.len() > 1 {
            let list: Vec<String> = runs.iter().map(|(r, files)| format!("run {r} ({})", files.join(", "))).collect();
            out.push(format!("files of different runs: {}", list.join("; ")));
        }
        let counts: BTreeMap<u64, ()> = shards.iter().filter_map(|s| s.shard.map(|(_, n)| (n, ()))).collect();
        if counts.len() > 1 {
            let list: Vec<String> = counts.keys().map(|n| format!("{n}")).collect();
            out.push(format!("shards of runs split {} ways", list.join(" and ")));
        }
        let n = counts.keys().next_back().copied().unwrap_or(0);
        let mut by_index: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        for s in &shards {
            if let Some((i, _)) = s.shard {
                by_index.entry(i).or_default().push(&s.source);
            }
        }
        for (i, files) in &by_index {
            if files.len() > 1 {
                out.push(format!("shard {i}/{n} {GIVEN_TWICE} ({} times): {}", files.len(), files.join(", ")));
            }
        }
        for i in (0..n).filter(|i| !by_index.contains_key(i)) {
            out.push(format!("shard {i}/{n} missing"));
        }
        for s in shards.iter().filter(|s| !s.complete) {
            let (i, n) = s.shard.unwrap_or_default();
            out.push(format!("shard {i}/{n} ({}) is incomplete: its worker stopped before the end", s.source));
        }
        out
    }
}

impl Consumer for ShardSet {
    fn start(&mut self, h: &RunHeader) -> std::io::Result<()> {
        let plan = h.plan();
        self.seen.push(Seen {
            source: self.source.clone(),
            shard: plan.shard.as_deref().and_then(parse_shard),
            run: plan.run,
            complete: false,
        });
        Ok(())
    }

    fn record(&mut self, _: &Entry<'_>) -> std::io::Result<()> {
        Ok(())
    }

    fn end(&mut self, end: &RunEnd) -> std::io::Result<()> {
        if let Some(s) = self.seen.last_mut() {
            s.complete = end.complete;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(set: &mut ShardSet, source: &str, shard: &str, run: &str, complete: bool) {
        set.source(source);
        let mut h = RunHeader::default();
        h.settings.insert("shard".into(), shard.into());
        h.settings.insert("run".into(), run.into());
        set.start(&h).unwrap();
        set.end(&RunEnd { complete, ..Default::default() }).unwrap();
    }

    #[test]
    fn a_whole_set_has_no_problem_and_each_fault_is_named() {
        let mut whole = ShardSet::new();
        for i in 0..4 {
            run(&mut whole, &format!("b-{i}.llr"), &format!("{i}/4"), "r1", true);
        }
        assert!(whole.problems().is_empty(), "{:?}", whole.problems());
        let mut bad = ShardSet::new();
        run(&mut bad, "b-0.llr", "0/4", "r1", true);
        run(&mut bad, "b-1.llr", "1/4", "r1", true);
        run(&mut bad, "b-1.llr", "1/4", "r1", true);
        run(&mut bad, "c-3.llr", "3/4", "r2", false);
        assert_eq!(
            bad.problems(),
            vec![
                "files of different runs: run r1 (b-0.llr, b-1.llr, b-1.llr); run r2 (c-3.llr)",
                "shard 1/4 given more than once (2 times): b-1.llr, b-1.llr",
                "shard 2/4 missing",
                "shard 3/4 (c-3.llr) is incomplete: its worker stopped before the end",
            ]
        );
        // One shard alone, or files that are not shards: nothing to check.
        let mut one = ShardSet::new();
        run(&mut one, "b-2.llr", "2/4", "r1", true);
        assert!(one.problems().is_empty());
        let mut plain = ShardSet::new();
        plain.source("a.llr");
        plain.start(&RunHeader::default()).unwrap();
        assert!(plain.problems().is_empty());
    }
}
