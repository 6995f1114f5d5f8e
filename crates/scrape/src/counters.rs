//! A counter's series at one reading, each checked for what a counter can hold, and what they
//! grew between two readings series by series, as PromQL's `sum(increase(...))` takes each
//! series' own increase: two replicas selected, one restarted, is a restart said, not a sum that
//! kept rising. Every number a source answers is checked here before it becomes a figure.

use std::collections::BTreeMap;

use results::text::plain_line;

/// The largest CPU counter taken as one: 65,536 cores for a century, in seconds.
pub const MAX_CPU_S: f64 = 65_536.0 * 100.0 * 365.25 * 86_400.0;
/// The largest memory taken as one: 1 PiB.
pub const MAX_MEMORY_BYTES: f64 = (1u64 << 50) as f64;
/// The longest a series' name and labels are shown, in characters.
pub(crate) const SHOWN: usize = 120;

/// `value` of `what` when it is a number it can be (finite, from 0 to `max`), else why not.
pub fn checked(what: &str, value: f64, max: f64) -> Result<f64, String> {
    match value {
        v if v.is_nan() => Err(format!("{} is NaN: not a measurement", plain_line(what, SHOWN))),
        v if v.is_infinite() => Err(format!("{} is {v}: not a measurement", plain_line(what, SHOWN))),
        v if v < 0.0 => Err(format!("{} is {v}: below zero, not a measurement", plain_line(what, SHOWN))),
        v if v > max => Err(format!("{} is {v:e}: past {max:e}, not a measurement", plain_line(what, SHOWN))),
        v => Ok(v),
    }
}

/// A series as shown: `name{label="value",...}`, labels sorted.
pub fn series_key<'a>(name: &str, labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let mut labels: Vec<String> =
        labels.into_iter().filter(|(k, _)| *k != "__name__").map(|(k, v)| format!("{k}={v:?}")).collect();
    labels.sort();
    format!("{name}{{{}}}", labels.join(","))
}

/// A CPU counter's selected series at one reading, by [`series_key`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub series: BTreeMap<String, f64>,
}

impl Counters {
    /// From `(key, value)` pairs: each value checked, a series given twice refused (Prometheus
    /// refuses such an exposition), none at all refused naming `selector`.
    pub fn of(pairs: impl IntoIterator<Item = (String, f64)>, selector: &str) -> Result<Counters, String> {
        let mut series = BTreeMap::new();
        for (key, value) in pairs {
            let value = checked(&key, value, MAX_CPU_S)?;
            if series.insert(key.clone(), value).is_some() {
                return Err(format!("{} is given twice in one answer", plain_line(&key, SHOWN)));
            }
        }
        if series.is_empty() {
            return Err(format!("{} selects no series", plain_line(selector, SHOWN)));
        }
        Ok(Counters { series })
    }

    /// Their sum, in seconds.
    pub fn sum(&self) -> f64 {
        self.series.values().sum()
    }

    /// What the series grew by from `self` to `later`, each its own increase; a series that went
    /// back (its process restarted) or that is gone (a replica replaced) makes the step's CPU
    /// unknown, said naming it; one that appeared started during the step, from zero.
    pub fn grown(&self, later: &Counters) -> Result<f64, String> {
        let mut grown = 0.0;
        for (key, b) in &later.series {
            match self.series.get(key) {
                Some(a) if b < a => {
                    return Err(format!(
                        "the CPU counter {} went back from {a:.2} s to {b:.2} s: the target restarted during the step",
                        plain_line(key, SHOWN)
                    ))
                }
                Some(a) => grown += b - a,
                None => grown += b,
            }
        }
        if let Some(gone) = self.series.keys().find(|k| !later.series.contains_key(*k)) {
            return Err(format!(
                "the CPU counter {} is gone at the step's end: the target restarted or was replaced during the step",
                plain_line(gone, SHOWN)
            ));
        }
        Ok(grown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(pairs: &[(&str, f64)]) -> Result<Counters, String> {
        Counters::of(pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)), "cpu")
    }

    #[test]
    fn a_value_no_counter_can_hold_is_refused_named() {
        for (v, says) in [(f64::NAN, "is NaN"), (f64::INFINITY, "is inf"), (-5e9, "below zero"), (1e308, "past")] {
            let e = counters(&[("a", 1.0), ("cpu{x=\"\u{1b}[2J\"}", v)]).unwrap_err();
            assert!(e.contains(says) && e.contains("cpu{x=") && !e.contains('\u{1b}'), "{e}");
        }
        assert!(checked("memory", -5e9, MAX_MEMORY_BYTES).unwrap_err().contains("below zero"));
        assert!(checked("memory", 1e308, MAX_MEMORY_BYTES).unwrap_err().contains("past"));
        assert_eq!(checked("memory", 2e7, MAX_MEMORY_BYTES), Ok(2e7));
        assert!(counters(&[("a", 1.0), ("a", 1.0)]).unwrap_err().contains("given twice"));
        assert!(counters(&[]).unwrap_err().contains("cpu selects no series"));
    }

    #[test]
    fn each_series_grows_on_its_own_and_a_restart_of_one_is_said() {
        let a = counters(&[("svc-1", 100.0), ("svc-2", 50.0)]).unwrap();
        let b = counters(&[("svc-1", 104.0), ("svc-2", 52.0)]).unwrap();
        assert_eq!(a.grown(&b), Ok(6.0));
        // svc-2 restarted: the sum still rose (160 over 150), but its own counter went back.
        let restarted = counters(&[("svc-1", 158.0), ("svc-2", 2.0)]).unwrap();
        let e = a.grown(&restarted).unwrap_err();
        assert!(e.contains("svc-2") && e.contains("restarted"), "{e}");
        // A replica replaced: a new series, the old one gone.
        let replaced = counters(&[("svc-1", 104.0), ("svc-3", 2.0)]).unwrap();
        assert!(a.grown(&replaced).unwrap_err().contains("svc-2 is gone"));
        // A replica added: counted from zero.
        let added = counters(&[("svc-1", 104.0), ("svc-2", 52.0), ("svc-3", 1.0)]).unwrap();
        assert_eq!(a.grown(&added), Ok(7.0));
    }
}
