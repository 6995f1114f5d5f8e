//! Whether a pair's two labs run at once: both builds started together, on the same CPUs, each
//! load point sent to both at the same moments (a duet). The machine's slow spells, seconds
//! long and 1.3-1.9x on these VMs, then fall on both builds alike instead of on one lab of a
//! pair: on three real servers the pairs' spread of CPU per request fell from 7.5-11.9% to
//! 1.6-2.8%, and p50's from 10.9-20.2% to 1.2-2.9% (docs/DECISIONS.md, "Both builds at once").

use serde::Serialize;

/// How each pair's two labs ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum Pairing {
    /// At once and in step. `placement`: loadlab's CPUs and the CPUs both builds' targets share
    /// (none on a machine of one CPU: all of them on it).
    AtOnce { placement: Option<lab::Placement> },
    /// One lab after the other, in ABBA order, and why not at once.
    OneAtATime { why: String },
}

impl Pairing {
    /// At once where both plans allow it, unless the team asked for one at a time.
    pub(crate) fn choose(one_at_a_time: bool, base: &lab::Plan, head: &lab::Plan) -> Pairing {
        let why = |w: &str| Pairing::OneAtATime { why: w.to_owned() };
        if one_at_a_time {
            return why("asked for (--one-at-a-time)");
        }
        let started = |p: &lab::Plan| {
            p.origin.is_none() && p.targets.iter().all(|t| matches!(t.kind, lab::TargetKind::Command { .. }))
        };
        if !started(base) || !started(head) {
            return why(
                "a target is not a command the plan starts (an embedded origin runs on loadlab's own threads), \
                 so the two builds' work could not be told apart at once",
            );
        }
        if !same_steps(base, head) {
            return why("the two plans' steps differ, so their labs cannot run in step");
        }
        Pairing::AtOnce { placement: lab::Placement::of_this_machine() }
    }

    pub fn at_once(&self) -> bool {
        matches!(self, Pairing::AtOnce { .. })
    }

    /// For ab.md and the first line: how a pair ran.
    pub fn text(&self) -> String {
        match self {
            Pairing::AtOnce { placement: Some(p) } => format!(
                "both builds at once: each pair is one lab of each, started together and kept in step, so that \
                 every load point reaches both at the same moments (loadlab on {}, the targets of both builds on {}; \
                 generator_cpu is loadlab's one process, both labs' sending)",
                cpus(&p.generator),
                cpus(&p.targets)
            ),
            Pairing::AtOnce { placement: None } => "both builds at once: each pair is one lab of each, started \
                 together and kept in step, all on this machine's one CPU (generator_cpu is loadlab's one process, \
                 both labs' sending)"
                .to_owned(),
            Pairing::OneAtATime { why } => format!(
                "one build at a time: pairs of labs in ABBA order (base-head, head-base, ...), each lab starting \
                 its build's targets afresh; not at once: {why}"
            ),
        }
    }
}

/// The most of the CPUs they share both builds' targets may use at once: past it each build's
/// requests would queue behind the other's, which a plan's load point does not ask for.
pub(crate) const MOST_BUSY: f64 = 0.7;

/// Why a pair run at once crowded its CPUs (none when it did not): per lab, each step's id and
/// its target's CPU (% of one CPU); `cpus`: how many CPUs the targets share.
pub(crate) fn crowded(cpus: usize, a: &[(String, Option<f64>)], b: &[(String, Option<f64>)]) -> Option<String> {
    let other = |id: &str| b.iter().find(|(i, _)| i == id).and_then(|(_, pct)| *pct);
    let (id, pct) =
        a.iter().filter_map(|(id, pct)| Some((id, (*pct)? + other(id)?))).max_by(|x, y| x.1.total_cmp(&y.1))?;
    let cpus = cpus.max(1);
    (pct > MOST_BUSY * 100.0 * cpus as f64).then(|| {
        format!(
            "both builds at once used {pct:.0}% of a CPU at step {id}, on the {cpus} CPU{} their targets share \
             (over {:.0}%): each would wait for the other's work, which the plan does not ask for; one build at a \
             time instead (the pair run at once is not counted)",
            if cpus > 1 { "s" } else { "" },
            MOST_BUSY * 100.0
        )
    })
}

fn cpus(c: &[usize]) -> String {
    let list: Vec<String> = c.iter().map(usize::to_string).collect();
    format!("CPU{} {}", if c.len() > 1 { "s" } else { "" }, list.join(","))
}

/// Whether the two plans run the same steps for the same time.
fn same_steps(base: &lab::Plan, head: &lab::Plan) -> bool {
    let ids = |p: &lab::Plan| lab::expand_matrix(p).steps.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    let timing = |p: &lab::Plan| (p.load.warmup, p.load.duration, p.load.pause);
    ids(base) == ids(head) && timing(base) == timing(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> lab::Plan {
        lab::parse_plan(text, "plan.toml", std::path::Path::new(".")).expect("a plan")
    }

    const STARTED: &str = r#"
name = "svc"
[targets.svc]
url = "http://127.0.0.1:{port}/"
start = ["python3", "-m", "http.server", "{port}"]
[load]
rate = [50, 100]
duration = "2s"
"#;

    #[test]
    fn started_targets_run_at_once_and_anything_else_one_at_a_time() {
        let p = plan(STARTED);
        let chosen = Pairing::choose(false, &p, &p);
        assert!(chosen.at_once(), "{chosen:?}");
        assert!(chosen.text().starts_with("both builds at once"), "{}", chosen.text());
        let asked = Pairing::choose(true, &p, &p);
        assert_eq!(asked, Pairing::OneAtATime { why: "asked for (--one-at-a-time)".into() });
        let other_rates = plan(&STARTED.replace("[50, 100]", "[50, 200]"));
        let Pairing::OneAtATime { why } = Pairing::choose(false, &p, &other_rates) else { panic!("not in step") };
        assert!(why.contains("steps differ"), "{why}");
        let longer = plan(&STARTED.replace("\"2s\"", "\"3s\""));
        assert!(!Pairing::choose(false, &p, &longer).at_once());
        let origin =
            plan("name = \"o\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = [50]\nduration = \"2s\"\n");
        let Pairing::OneAtATime { why } = Pairing::choose(false, &origin, &origin) else { panic!("embedded") };
        assert!(why.contains("embedded origin"), "{why}");
    }

    #[test]
    fn a_pair_that_crowds_its_cpus_is_said_and_one_that_does_not_is_not() {
        let steps = |a: f64, b: f64| vec![("svc--r400".to_owned(), Some(a)), ("svc--r1500".to_owned(), Some(b))];
        // The Go service alone at 400 and 1,500 req/s: 18% and 68% of a CPU; both at once on one CPU.
        assert_eq!(crowded(1, &steps(18.0, 34.0), &steps(19.0, 35.0)), None);
        let why = crowded(1, &steps(18.0, 66.0), &steps(19.0, 69.0)).expect("135% of one CPU");
        assert!(why.starts_with("both builds at once used 135% of a CPU at step svc--r1500, on the 1 CPU"), "{why}");
        // On two CPUs the same is room enough; a step one lab did not measure is left out.
        assert_eq!(crowded(2, &steps(18.0, 66.0), &steps(19.0, 69.0)), None);
        assert_eq!(crowded(1, &steps(18.0, 66.0), &[("svc--r400".to_owned(), Some(19.0))]), None);
    }

    #[test]
    fn the_words_say_where_each_ran() {
        let two = Pairing::AtOnce { placement: Some(lab::Placement { generator: vec![0], targets: vec![1] }) };
        assert_eq!(
            two.text(),
            "both builds at once: each pair is one lab of each, started together and kept in step, so that every \
             load point reaches both at the same moments (loadlab on CPU 0, the targets of both builds on CPU 1; \
             generator_cpu is loadlab's one process, both labs' sending)"
        );
    }
}
