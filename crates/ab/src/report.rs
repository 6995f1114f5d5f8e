//! What `lab ab` says: a line per look, the last line a pull request carries, ab.md and
//! ab.json. Every name and subject shown passes through `history::md_cell` or `history::plain`
//! (they are anyone's words).

use std::fmt::Write as _;

use serde::Serialize;

use crate::judge::{Look, Row, Said, ALPHA, POWER};
use crate::run::{Built, Ending, Repeats, Report};

fn signed(v: f64) -> String {
    crate::judge::signed(v)
}

fn interval(r: &Row) -> String {
    r.interval_words()
}

/// A gated row short of "worse" whose change for the worse is real at the run's error rate
/// (the judge's [`Row::real`]), its interval wholly on the worse side of 0.
fn real_change(r: &Row) -> bool {
    let worse_up = r.gate.as_deref().is_some_and(|g| g.contains('>'));
    r.real
        && matches!(r.said, Said::Within | Said::Undecided)
        && r.gate.is_some()
        && r.interval_pct.is_some_and(|(lo, hi)| if worse_up { lo > 0.0 } else { hi < 0.0 })
}

/// ... and judged within its gate.
fn real_within(r: &Row) -> bool {
    real_change(r) && r.said == Said::Within
}

/// What the run could have seen, per gated metric: `+3.1% or more in target_cpu`.
fn could_see(l: &Look) -> String {
    let parts: Vec<String> =
        l.detectable().iter().map(|(m, d)| format!("{} or more in {}", signed(*d), m.name())).collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" (this run would have seen {})", parts.join(", "))
    }
}

/// The last line: the verdict a pull request carries.
pub fn last_line(r: &Report) -> String {
    let pairs = r.look.as_ref().map_or(0, |l| l.pairs);
    match (&r.ending, &r.look) {
        (Ending::Worse, Some(l)) => {
            let worse = l.worse();
            let more = match worse.len() {
                0 | 1 => String::new(),
                n => format!("; {} more past their gates (ab.md)", n - 1),
            };
            format!("head is slower: {}{more}", worse.first().map_or_else(String::new, |w| w.words()))
        }
        (Ending::NoChange, Some(l)) => {
            // A change that is real but short of its gate is still news to a reviewer.
            let real: Vec<String> = l.rows.iter().filter(|r| real_within(r)).map(Row::words).collect();
            let tail = match real.is_empty() {
                true => String::new(),
                false => format!("; real but within the gate: {}", real.join(", ")),
            };
            format!("no change past the gates{}{tail}", could_see(l))
        }
        // Undecided is not green: said first, with what the run could have seen there.
        (Ending::Undecided, Some(l)) => {
            let undecided = l.undecided();
            let first = undecided.first().map_or_else(String::new, |r| {
                let seen = r.detectable_pct.map_or_else(
                    || "too few pairs to say what it could have seen".to_owned(),
                    |d| format!("it could have seen {}", signed(d)),
                );
                format!("{} at {} in {} pairs: {seen}", r.metric.name(), history::plain(&r.load), r.pairs)
            });
            let more = match undecided.len() {
                0 | 1 => String::new(),
                n => format!("; {} more gated cells undecided (ab.md)", n - 1),
            };
            // Undecided against its gate is not unchanged: a change the pairs show is named, as
            // one within the gate is.
            let named = |said: Said, words: &str| {
                let rows: Vec<String> =
                    l.rows.iter().filter(|r| r.said == said && real_change(r)).map(Row::words).collect();
                if rows.is_empty() {
                    String::new()
                } else {
                    format!("; {words}: {}", rows.join(", "))
                }
            };
            let real = named(Said::Undecided, "slower all the same, whether past its gate not decided")
                + &named(Said::Within, "real but within the gate");
            let most = r.looks.last().copied().unwrap_or(pairs);
            let next = undecided.first().and_then(|r| r.out_of_reach_words(most)).map_or_else(
                || "more pairs (--repeats) decide it".to_owned(),
                |why| format!("out of reach in {most} pairs: {why}"),
            );
            format!("could not decide {first}{more}{real}; nothing past the gates so far: {next}")
        }
        (Ending::NoChange, None) => "no pair ran: no verdict".to_owned(),
        (Ending::CouldNotTell(why), _) => format!("could not tell: {}", history::plain(why)),
        (Ending::Stopped, _) => format!("stopped after {pairs} pairs: no verdict"),
        (Ending::Worse | Ending::Undecided, None) => unreachable!("a worse or undecided ending comes from a look"),
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

fn built_row(md: &mut String, name: &str, b: &Built) {
    let build = b.build.as_ref().map_or_else(
        || "-".to_owned(),
        |(took, log)| {
            let file = log.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            format!("{:.1} s, [{file}]({file})", took.as_secs_f64())
        },
    );
    let _ = writeln!(
        md,
        "| {name} | `{}` {} | {build} | {} |",
        b.commit.short(),
        history::md_cell(&b.commit.subject),
        history::md_cell(&b.plan_from)
    );
}

/// ab.md: the verdict, the builds, the rule, the table of the last look, what it could have
/// seen, the profiles and the labs.
pub fn markdown(r: &Report) -> String {
    let mut md = format!("# lab ab: {} against {}\n\n", r.head.commit.short(), r.base.commit.short());
    let _ = writeln!(md, "**{}**\n", history::md_cell(&last_line(r)));
    let _ = writeln!(md, "| side | commit | build | plan |\n|---|---|---|---|");
    built_row(&mut md, "base", &r.base);
    built_row(&mut md, "head", &r.head);
    let repeats = match r.repeats {
        Repeats::Fixed(n) => format!("{n} pairs, judged once"),
        Repeats::Auto { most } => format!(
            "looks at {} pairs (at most {most}), stopping once every gated cell is decided",
            r.looks.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        ),
    };
    let gates: Vec<String> = r.gates.iter().map(lab::Gate::text).collect();
    let _ = writeln!(
        md,
        "\n**How it was judged.** {}; {repeats}. Per load \
         point, head against base by Student's paired t on the logarithms of the pairs' ratios, one-sided on \
         each gate's worse side ({}); Holm over the gated cells at each look's {:.2}% (the run's {:.0}% false-alarm \
         rate split over its {} looks). A cell fails when its change stands and is past its gate; it is within \
         its gate when the one-sided 95% bound is. \"Would have seen\": the smallest change for the worse found \
         with {:.0}% power at the last look, from the spread its pairs showed.\n",
        history::md_cell(&capitalized(&r.pairing.text())),
        gates.join(", "),
        r.alpha_look * 100.0,
        ALPHA * 100.0,
        r.looks.len(),
        POWER * 100.0
    );
    if let Some(l) = &r.look {
        let _ = writeln!(
            md,
            "## Head against base ({} pairs)\n\nA cell's pairs are those where both sides' steps counted.\n\n\
             | target | load | metric | pairs | base | head | change [95%] | p (worse) | gate | verdict | would have \
             seen |\n|---|---|---|---|---|---|---|---|---|---|---|",
            l.pairs
        );
        for row in &l.rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {}{} | {} | {} | {} | {} |",
                history::md_cell(&row.target),
                history::md_cell(&row.load),
                row.metric.name(),
                row.pairs,
                row.metric.show(row.base),
                row.metric.show(row.head),
                signed(row.change_pct),
                interval(row),
                row.p.map_or_else(|| "-".to_owned(), |p| format!("{p:.2e}")),
                row.gate.as_deref().unwrap_or("-"),
                said(row),
                match (row.detectable_pct, row.said) {
                    (Some(d), _) => signed(d),
                    (None, Said::Undecided) => "too few pairs to say".to_owned(),
                    (None, _) => "-".to_owned(),
                },
            );
        }
        let controlled: Vec<&Row> = l.rows.iter().filter(|r| r.machine.is_some()).collect();
        if !controlled.is_empty() {
            let _ = writeln!(
                md,
                "\n## The machine's moment\n\nThe speed probe on the target's CPUs (a fixed piece of work's time, where \
                 every pair has it) or loadlab's own CPU per request, measured in the same steps, moves with the \
                 machine's moment (how fast the core each process ran on was, what the kernel charged to whom). \
                 Where it did not move with the head, {} are read at no change of it: each pair's change less what \
                 the measure's change explains (the regression of the pairs' changes on its changes, read at zero, \
                 on n - 2 degrees of freedom).\n",
                crate::judge::CONTROLLED.iter().map(|m| m.name()).collect::<Vec<_>>().join(" and ")
            );
            for r in controlled {
                let _ = writeln!(md, "- {}", history::md_cell(&machine_words(r)));
            }
        }
        let seen = l.detectable();
        if !seen.is_empty() {
            let _ = writeln!(md, "\n## What it could have seen\n");
            for (m, d) in seen {
                let _ = writeln!(
                    md,
                    "- {}: a change of {} or more at every load point ({:.0}% power, from {} pairs)",
                    m.name(),
                    signed(d),
                    POWER * 100.0,
                    l.pairs
                );
            }
        }
    }
    let next = what_next(r);
    if !next.is_empty() {
        let _ = writeln!(md, "\n## What next\n");
        for n in next {
            let _ = writeln!(md, "- {n}");
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(md, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(md, "- {}", history::md_cell(n));
        }
    }
    if !r.profiles.is_empty() || !r.profile_problems.is_empty() {
        let _ = writeln!(md, "\n## Where the CPU per request moved\n");
        for d in &r.profiles {
            md.push_str(&lab::differential_md(d));
        }
        for p in &r.profile_problems {
            let _ = writeln!(md, "- {}", history::md_cell(p));
        }
    }
    if !r.tails.is_empty() {
        let _ = writeln!(md, "\n## What grew in the tail\n");
        let _ = writeln!(
            md,
            "Per cell traced on both sides, the span whose self time in the slowest 1% of requests grew most from \
             base's labs to head's (a mean over each side's labs; the change and its interval over the pairs of labs, \
             by Student's paired t, as the rows above):\n"
        );
        for t in &r.tails {
            let _ = writeln!(md, "- {}", history::md_cell(&t.text()));
        }
    }
    let _ = writeln!(md, "\n## Labs, in run order\n");
    for (which, dir) in &r.labs {
        let name = dir.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        let _ = writeln!(md, "- {}: [labs/{name}](labs/{name}/report.md)", which.name());
    }
    md
}

/// What a reader can do with the verdict: cells that lost pairs to steps that did not count,
/// the pairs an undecided cell would need, a profile of a slower head.
fn what_next(r: &Report) -> Vec<String> {
    let Some(l) = &r.look else { return Vec::new() };
    let mut out = Vec::new();
    for row in l.rows.iter().filter(|row| row.gate.is_some() && row.pairs < l.pairs) {
        out.push(format!(
            "{} at {}: {} of {} pairs counted on both sides; the others had a step that did not count (a busy \
             machine, a generator that fell behind, a target down: each lab's report.md says which)",
            row.metric.name(),
            history::md_cell(&row.load),
            row.pairs,
            l.pairs
        ));
    }
    for row in l.undecided() {
        // What a run can see shrinks as one over the square root of its pairs.
        let gate = r.gates.iter().find(|g| g.metric == row.metric).map(|g| g.limit_pct.abs());
        let needed = match (row.detectable_pct, gate) {
            (Some(d), Some(g)) if g > 0.0 && row.pairs > 0 => {
                let n = (row.pairs as f64 * (d / g).powi(2)).ceil();
                format!("about {n:.0} pairs would see its gate's {g}% (`--most-repeats`)")
            }
            _ => "more pairs (`--most-repeats`) would narrow it".to_owned(),
        };
        out.push(format!(
            "{} at {} is undecided after {} pairs: {needed}, or a steadier load point (its spread is what a run must \
             see past)",
            row.metric.name(),
            history::md_cell(&row.load),
            row.pairs
        ));
    }
    if matches!(r.ending, Ending::Worse) && r.profiles.is_empty() {
        out.push("`profile = true` in the plan (with `[profile]`) shows which functions' CPU per request grew".into());
    }
    out
}

fn said(r: &Row) -> &'static str {
    match r.said {
        Said::Worse => "**WORSE**",
        Said::Within => "within",
        Said::Undecided => "undecided",
        Said::TooFew => "too few",
        Said::Shown => "-",
    }
}

#[derive(Serialize)]
struct Json<'a> {
    verdict: &'a str,
    line: String,
    base: Side<'a>,
    head: Side<'a>,
    pairs: usize,
    pairing: &'a crate::duet::Pairing,
    looks: &'a [usize],
    alpha: f64,
    alpha_look: f64,
    power: f64,
    gates: Vec<String>,
    rows: &'a [Row],
    detectable_pct: Vec<(lab::Metric, f64)>,
    labs: Vec<(&'static str, String)>,
    notes: &'a [String],
    profiles: &'a [profile::diff::Differential],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tails: &'a [lab::TailGrowth],
}

#[derive(Serialize)]
struct Side<'a> {
    commit: &'a str,
    subject: &'a str,
    build_s: Option<f64>,
    plan: &'a str,
}

fn side(b: &Built) -> Side<'_> {
    Side {
        commit: &b.commit.hash,
        subject: &b.commit.subject,
        build_s: b.build.as_ref().map(|(t, _)| t.as_secs_f64()),
        plan: &b.plan_from,
    }
}

/// ab.json: everything ab.md shows, for a CI script.
pub fn json(r: &Report) -> String {
    let verdict = match r.ending {
        Ending::Worse => "worse",
        Ending::NoChange => "no_change",
        Ending::Undecided => "undecided",
        Ending::CouldNotTell(_) => "could_not_tell",
        Ending::Stopped => "stopped",
    };
    let j = Json {
        verdict,
        line: last_line(r),
        base: side(&r.base),
        head: side(&r.head),
        pairs: r.look.as_ref().map_or(0, |l| l.pairs),
        pairing: &r.pairing,
        looks: &r.looks,
        alpha: ALPHA,
        alpha_look: r.alpha_look,
        power: POWER,
        gates: r.gates.iter().map(lab::Gate::text).collect(),
        rows: r.look.as_ref().map_or(&[], |l| &l.rows),
        detectable_pct: r.look.as_ref().map(Look::detectable).unwrap_or_default(),
        labs: r.labs.iter().map(|(w, d)| (w.name(), d.display().to_string())).collect(),
        notes: &r.notes,
        profiles: &r.profiles,
        tails: &r.tails,
    };
    serde_json::to_string_pretty(&j).unwrap_or_default()
}

/// ab.md and ab.json of a run that ended before its first pair (a build that failed, a plan a
/// side cannot run): a CI job's `cat ab/ab.md` then says why instead of failing on its own.
pub fn failed(base: &str, head: &str, why: &str) -> (String, String) {
    let why = history::plain(why);
    let md = format!(
        "# lab ab: {} against {}\n\n**no verdict: {}**\n\nNo pair of labs ran; the line above says which side stopped the \
         run and where its log is.\n",
        history::md_cell(head),
        history::md_cell(base),
        history::md_cell(&why)
    );
    let json =
        serde_json::json!({ "verdict": "failed", "line": format!("no verdict: {why}"), "base": base, "head": head });
    (md, format!("{json:#}\n"))
}

/// One row's use of the machine's measure, in words.
fn machine_words(r: &Row) -> String {
    let Some(m) = &r.machine else { return String::new() };
    let head = format!("{} at {}", r.metric.name(), r.load);
    if let Some(held) = &m.held {
        return format!("{head}: held undecided: {held}");
    }
    match &m.not_used {
        Some(why) => format!("{head}: as measured, {} (not relative to the machine: {why})", signed(r.change_pct)),
        None if m.second_change_pct.is_some() => format!(
            "{head}: {}{} at no change of {} ({} as measured; the probe {}, loadlab's own CPU {}, slopes {:.2} and \
             {:.2}, multiple correlation {:.2})",
            signed(r.change_pct),
            r.interval_words(),
            m.measure,
            signed(m.unadjusted_change_pct),
            signed(m.own_change_pct),
            signed(m.second_change_pct.unwrap_or(f64::NAN)),
            m.slope.unwrap_or(f64::NAN),
            m.second_slope.unwrap_or(f64::NAN),
            m.correlation.unwrap_or(f64::NAN)
        ),
        None => format!(
            "{head}: {}{} at no change of {} ({} as measured; the measure {}, slope {:.2}, correlation {:.2})",
            signed(r.change_pct),
            r.interval_words(),
            m.measure,
            signed(m.unadjusted_change_pct),
            signed(m.own_change_pct),
            m.slope.unwrap_or(f64::NAN),
            m.correlation.unwrap_or(f64::NAN)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(gate: Option<&str>, change: f64, interval: (f64, f64), said: Said) -> Row {
        Row {
            target: "svc".into(),
            load: "400 req/s".into(),
            metric: lab::Metric::P50,
            gate: gate.map(str::to_owned),
            pairs: 20,
            base: 10.5,
            head: 11.0,
            change_pct: change,
            interval_pct: Some(interval),
            p: None,
            detectable_pct: Some(0.6),
            said,
            spread_pct: None,
            needs_pairs: None,
            machine: None,
            real: said == Said::Within,
        }
    }

    #[test]
    fn a_real_change_short_of_its_gate_is_named() {
        // The origin 5% slower measured +4.6% [+4.3, +4.9] on p50 against a 5% gate.
        let r = row(Some("p50>+5%"), 4.6, (4.3, 4.9), Said::Within);
        assert!(real_within(&r));
        assert_eq!(r.words(), "p50 +4.6% [+4.3, +4.9] at 400 req/s (gate +5%)");
        assert!(!real_within(&row(Some("p50>+5%"), 1.0, (-0.5, 2.5), Said::Within)), "not real");
        assert!(!real_within(&row(Some("p50>+5%"), -3.0, (-4.0, -2.0), Said::Within)), "better");
        assert!(!real_within(&row(None, 4.6, (4.3, 4.9), Said::Shown)), "not gated");
        assert!(!real_within(&row(Some("p50>+5%"), 9.0, (7.0, 11.0), Said::Worse)), "past it");
        assert!(real_within(&row(Some("throughput<-5%"), -3.0, (-4.0, -2.0), Said::Within)), "a fall, gated below");
        // Within, its interval above 0, but not standing at the run's error rate: not named.
        assert!(!real_within(&Row { real: false, ..r }), "not at the run's error rate");
    }

    fn report(rows: Vec<Row>) -> Report {
        let built = |hash: &str| Built {
            commit: builds::Commit { hash: hash.into(), subject: "s".into() },
            build: None,
            plan_from: "plan.toml".into(),
        };
        Report {
            base: built("aaaa"),
            head: built("bbbb"),
            labs: Vec::new(),
            repeats: Repeats::Auto { most: 20 },
            pairing: crate::duet::Pairing::AtOnce { placement: None },
            looks: vec![3, 5, 8, 12, 20],
            alpha_look: 0.002,
            look: Some(Look { pairs: 20, alpha: 0.002, rows }),
            ending: Ending::Undecided,
            gates: Vec::new(),
            profiles: Vec::new(),
            profile_problems: Vec::new(),
            tails: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn an_undecided_run_names_a_change_its_pairs_show() {
        // The Go service's hashing 5% heavier: target_cpu +4.1% [+2.4, +5.7] after 20 pairs,
        // undecided against +5%, real all the same; p50 within and real.
        let cpu = Row {
            metric: lab::Metric::TargetCpu,
            real: true,
            ..row(Some("target_cpu>+5%"), 4.1, (2.4, 5.7), Said::Undecided)
        };
        let p50 = row(Some("p50>+5%"), 2.9, (0.8, 5.0), Said::Within);
        let line = last_line(&report(vec![cpu.clone(), p50.clone()]));
        assert!(line.starts_with("could not decide target_cpu at 400 req/s in 20 pairs: "), "{line}");
        assert!(
            line.contains("; slower all the same, whether past its gate not decided: target_cpu +4.1% [+2.4, +5.7]"),
            "{line}"
        );
        assert!(line.contains("; real but within the gate: p50 +2.9%"), "{line}");
        // Not real at the run's error rate: undecided, and nothing named.
        let line = last_line(&report(vec![Row { real: false, ..cpu }, Row { real: false, ..p50 }]));
        assert!(!line.contains("all the same") && !line.contains("real but"), "{line}");
    }
}
