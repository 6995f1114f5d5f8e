//! Why head is slower: for each cell profiled on both sides, the differential profile of head's
//! first profiled lab against base's, as `lab compare` draws it.

use std::path::Path;

use profile::diff::Differential;

/// The differentials of every cell profiled on both sides (flame graphs into `out/profiles`),
/// and one line per cell that could not be compared.
/// Per cell traced on both sides, the span whose self time in the slowest 1% grew most from
/// base's labs to head's (every lab's step of the cell on each side), its change and interval
/// over the pairs of labs (Welch's over the labs with fewer than two pairs).
pub(crate) fn tails(sides: &[Vec<lab::Side>; 2]) -> Vec<lab::TailGrowth> {
    let [base, head] = sides;
    let mut keys: Vec<&String> = head.iter().flat_map(|s| s.cells.keys()).collect();
    keys.sort();
    keys.dedup();
    let merged = |labs: &[lab::Side], key: &str| -> Option<lab::CellData> {
        let mut cells = labs.iter().filter_map(|s| s.cells.get(key));
        let mut all = cells.next()?.clone();
        for c in cells {
            all.steps.extend(c.steps.iter().cloned());
        }
        Some(all)
    };
    let n = base.len().min(head.len());
    keys.into_iter()
        .filter_map(|key| {
            let mut g = lab::tail_growth(&merged(base, key)?, &merged(head, key)?)?;
            let pairs: Vec<_> =
                (0..n).filter_map(|i| Some((base[i].cells.get(key)?, head[i].cells.get(key)?))).collect();
            g.paired_over(&pairs);
            Some(g)
        })
        .collect()
}

pub(crate) fn differentials(sides: &[Vec<lab::Side>; 2], out: &Path) -> (Vec<Differential>, Vec<String>) {
    let first = |labs: &[lab::Side], key: &str| labs.iter().find_map(|side| side.cells.get(key)?.first_profile());
    let [base, head] = sides;
    let mut keys: Vec<&String> = head.iter().flat_map(|s| s.cells.keys()).collect();
    keys.sort();
    keys.dedup();
    let (mut diffs, mut problems) = (Vec::new(), Vec::new());
    for (n, key) in keys.into_iter().enumerate() {
        let cell = head.iter().find_map(|s| s.cells.get(key)).expect("a key of head's labs");
        let (b, h) = (first(base, key), first(head, key));
        if b.is_some() != h.is_some() {
            // One side profiled and not the other: said, not silently left out.
            let missing = if b.is_none() { "base" } else { "head" };
            problems.push(format!(
                "{} at {}: no profile of {missing} in any of its labs to compare with (each lab's report says why)",
                cell.target, cell.label
            ));
        }
        let (Some((bid, bp, bd)), Some((hid, hp, hd))) = (b, h) else { continue };
        let title = format!("{} at {}: head against base", cell.target, cell.label);
        let (bname, hname) = (format!("base {bid}"), format!("head {hid}"));
        match profile::diff::compare(
            (&bp, &bd, &bname),
            (&hp, &hd, &hname),
            out,
            "profiles",
            &format!("ab-{}", n + 1),
            &title,
        ) {
            Ok(d) => diffs.push(d),
            Err(e) => problems.push(format!("{} at {}: profiles not compared: {e}", cell.target, cell.label)),
        }
    }
    (diffs, problems)
}
