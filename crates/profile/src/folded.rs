//! Folded stacks (`root;caller;leaf weight`, FlameGraph's format as inferno writes it): what
//! each profile becomes, whatever took it. Costs per function and the difference of two
//! profiles are read from them, in CPU time per request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Stacks, root first, with their weights (perf samples, or pprof's CPU nanoseconds).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Folded {
    pub stacks: BTreeMap<String, u64>,
}

impl Folded {
    /// Folded lines as inferno writes them; lines that are not `STACK COUNT` are skipped.
    pub fn parse(text: &str) -> Folded {
        let mut f = Folded::default();
        for line in text.lines() {
            if let Some((stack, n)) = line.rsplit_once(' ') {
                if let Ok(n) = n.trim().parse::<u64>() {
                    *f.stacks.entry(stack.to_owned()).or_default() += n;
                }
            }
        }
        f
    }

    pub fn text(&self) -> String {
        self.stacks.iter().map(|(s, n)| format!("{s} {n}\n")).collect()
    }

    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Per function, its own weight (as the leaf) and its total (on the stack at all, counted
    /// once per stack however often it recurses).
    pub fn functions(&self) -> BTreeMap<&str, (u64, u64)> {
        let mut out: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (stack, &n) in &self.stacks {
            let frames: Vec<&str> = stack.split(';').collect();
            let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
            for f in &frames {
                if !seen.contains(f) {
                    seen.push(f);
                    out.entry(f).or_default().1 += n;
                }
            }
            if let Some(leaf) = frames.last() {
                out.entry(leaf).or_default().0 += n;
            }
        }
        out
    }

    /// The share of weight whose leaf frame has no symbol (`[unknown]` or a bare address).
    pub fn unsymbolised_share(&self) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        // `[unknown]`, `0x4f2a10`, or inferno's `[binary <4f2a10>]` for an address in a binary.
        let bare = |f: &str| {
            f.contains("[unknown]")
                || f.trim_start_matches('[').starts_with("0x")
                || (f.starts_with('[') && f.ends_with(">]") && f.contains(" <"))
        };
        let unknown: u64 =
            self.stacks.iter().filter(|(s, _)| s.rsplit(';').next().is_some_and(bare)).map(|(_, n)| n).sum();
        unknown as f64 / total as f64
    }

    /// The binaries whose frames lack symbols, by the weight of leaves in them, largest first:
    /// inferno writes such a frame `[nginx <51397>]` (an address in the binary `nginx`).
    pub fn unsymbolised_binaries(&self) -> Vec<(String, u64)> {
        let mut by: BTreeMap<String, u64> = BTreeMap::new();
        for (s, n) in &self.stacks {
            let Some(leaf) = s.rsplit(';').next() else { continue };
            if let Some(inner) = leaf.strip_prefix('[').and_then(|l| l.strip_suffix(">]")) {
                if let Some((binary, _)) = inner.split_once(" <") {
                    *by.entry(binary.to_owned()).or_default() += n;
                }
            }
        }
        let mut out: Vec<(String, u64)> = by.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// Total weight of the stacks that pass through a function whose name contains `pattern`.
    pub fn through(&self, pattern: &str) -> u64 {
        self.stacks.iter().filter(|(s, _)| s.split(';').any(|f| f.contains(pattern))).map(|(_, n)| n).sum()
    }
}

/// A function's CPU in one profile, per request.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FunctionCost {
    pub name: String,
    /// µs of CPU per request in the function itself, and with what it calls.
    pub self_us: f64,
    pub total_us: f64,
    /// Shares of the profile's CPU, 0..1.
    pub self_share: f64,
    pub total_share: f64,
}

/// The `n` functions with the most CPU of their own, each with its total; `us_per_weight` turns
/// a weight into µs of CPU per request.
pub fn top(folded: &Folded, us_per_weight: f64, n: usize) -> Vec<FunctionCost> {
    let total = folded.total().max(1) as f64;
    let mut all: Vec<FunctionCost> = folded
        .functions()
        .into_iter()
        .map(|(name, (own, with))| FunctionCost {
            name: name.to_owned(),
            self_us: own as f64 * us_per_weight,
            total_us: with as f64 * us_per_weight,
            self_share: own as f64 / total,
            total_share: with as f64 / total,
        })
        .collect();
    all.sort_by(|a, b| b.self_us.total_cmp(&a.self_us).then(b.total_us.total_cmp(&a.total_us)));
    all.truncate(n);
    all
}

/// A function's CPU per request in two profiles.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FunctionChange {
    pub name: String,
    /// µs per request with what it calls (total), old and new; and of its own.
    pub old_us: f64,
    pub new_us: f64,
    pub old_self_us: f64,
    pub new_self_us: f64,
}

impl FunctionChange {
    /// The change with what it calls.
    pub fn change_us(&self) -> f64 {
        self.new_us - self.old_us
    }

    /// The change of its own CPU: where the work itself moved.
    pub fn self_change_us(&self) -> f64 {
        self.new_self_us - self.old_self_us
    }
}

/// The functions whose own CPU per request changed most, largest change first, ties by the
/// change with callees. A frame that only contains the cost (`__libc_start_call_main`, the
/// event loop) moves by its callees' total but not by itself: ranking by totals put those first
/// (-8.8 ms each) above the deflate that did the work.
pub fn changes(old: &Folded, old_us: f64, new: &Folded, new_us: f64, n: usize) -> Vec<FunctionChange> {
    let (a, b) = (old.functions(), new.functions());
    let mut names: Vec<&str> = a.keys().chain(b.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    let mut out: Vec<FunctionChange> = names
        .into_iter()
        .map(|name| {
            let (os, ot) = a.get(name).copied().unwrap_or_default();
            let (ns, nt) = b.get(name).copied().unwrap_or_default();
            FunctionChange {
                name: name.to_owned(),
                old_us: ot as f64 * old_us,
                new_us: nt as f64 * new_us,
                old_self_us: os as f64 * old_us,
                new_self_us: ns as f64 * new_us,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        (y.self_change_us().abs().total_cmp(&x.self_change_us().abs()))
            .then(y.change_us().abs().total_cmp(&x.change_us().abs()))
            .then_with(|| x.name.cmp(&y.name))
    });
    out.truncate(n);
    out
}

/// Two profiles as differential folded lines (`stack old new`), in nanoseconds per request, for
/// a differential flame graph.
pub fn differential(old: &Folded, old_us: f64, new: &Folded, new_us: f64) -> String {
    let mut stacks: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (s, &n) in &old.stacks {
        stacks.entry(s).or_default().0 = (n as f64 * old_us * 1000.0).round() as u64;
    }
    for (s, &n) in &new.stacks {
        stacks.entry(s).or_default().1 = (n as f64 * new_us * 1000.0).round() as u64;
    }
    stacks.iter().map(|(s, (a, b))| format!("{s} {a} {b}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Folded {
        Folded::parse(text)
    }

    #[test]
    fn functions_count_self_at_the_leaf_and_total_once_per_stack() {
        let f = folded("main;serve;deflate 30\nmain;serve;write 10\nmain;rec;rec;rec 5\nnot a line\n");
        assert_eq!(f.total(), 45);
        let fns = f.functions();
        assert_eq!(fns["deflate"], (30, 30));
        assert_eq!(fns["serve"], (0, 40));
        assert_eq!(fns["main"], (0, 45));
        assert_eq!(fns["rec"], (5, 5), "recursion counted once");
        let t = top(&f, 2.0, 2);
        assert_eq!(t[0].name, "deflate");
        assert!((t[0].self_us - 60.0).abs() < 1e-9 && (t[0].self_share - 30.0 / 45.0).abs() < 1e-9);
        assert_eq!(t[1].name, "write");
        assert_eq!(f.through("defl"), 30);
    }

    #[test]
    fn the_function_that_changed_comes_first_not_its_callers() {
        // The same CPU per sample, requests alike: deflate fell from 30 to 1, write stayed.
        let old = folded("main;serve;deflate 30\nmain;serve;write 10\n");
        let new = folded("main;serve;deflate 1\nmain;serve;write 10\n");
        let c = changes(&old, 1.0, &new, 1.0, 3);
        assert_eq!(c[0].name, "deflate", "{c:?}");
        assert!((c[0].change_us() + 29.0).abs() < 1e-9);
        // Scaled per request: the same samples over twice the requests is half the cost.
        let c = changes(&old, 1.0, &old, 0.5, 1);
        assert!((c[0].new_us - c[0].old_us * 0.5).abs() < 1e-9, "{c:?}");
        let d = differential(&old, 1.0, &new, 1.0);
        assert!(d.contains("main;serve;deflate 30000 1000\n"), "{d}");
        // gzip turned off in nginx: the frames that contain the work (start, main) lost 85 µs
        // each with their callees, deflate 45 µs of its own and libz 40: the work comes first.
        let old = folded("start;main;deflate;[libz] 40\nstart;main;deflate 45\nstart;main;write 5\n");
        let new = folded("start;main;write 5\n");
        let c = changes(&old, 1.0, &new, 1.0, 4);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(&names[..2], ["deflate", "[libz]"], "{c:?}");
        assert_eq!(results::duration::show_change_us(c[0].self_change_us()), "-45.0µs");
        assert_eq!(results::duration::show_change_us(4494.95), "+4.49ms");
    }

    #[test]
    fn unsymbolised_frames_are_measured() {
        let f = folded("main;[unknown] 3\nmain;0x4f2a10 1\nmain;work 4\nmain;[burn <270d62>] 8\n");
        assert!((f.unsymbolised_share() - 0.75).abs() < 1e-9);
        let f = folded("main;[nginx <51397>] 6\nmain;[libz.so.1.2.13 <1f00>] 3\nmain;[nginx <51400>] 2\nmain;ok 1\n");
        assert_eq!(f.unsymbolised_binaries(), vec![("nginx".to_owned(), 8), ("libz.so.1.2.13".to_owned(), 3)]);
    }
}
