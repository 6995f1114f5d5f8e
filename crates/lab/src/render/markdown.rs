//! `report.md`: the write-up a person would have made by hand: the question, the set-up, what was
//! found in a paragraph of numbers, tables pivoted on the swept axis, the charts, the verdicts,
//! and vegeta's report of every step.

use std::fmt::Write as _;

use crate::lab_json::Lab;
use crate::measure::estimate::{Basis, Estimate};
use crate::measure::verdict::{Metric, SloVerdict};
use crate::outcome::Cell;
use crate::plan::matrix::protocol_text;
use results::duration::{show_ms, show_us};

/// Renders the report; `charts` are the chart images written beside it (title, relative path).
pub(crate) fn render(lab: &Lab, charts: &[(String, String)]) -> String {
    let mut md = String::new();
    let title = if lab.name.is_empty() { "Lab report" } else { &lab.name };
    let _ = writeln!(md, "# {title}\n");
    if !lab.question.is_empty() {
        let _ = writeln!(md, "> {}\n", lab.question);
    }
    setup(&mut md, lab);
    summary(&mut md, lab);
    if !lab.findings.cells.is_empty() {
        tables(&mut md, lab);
    }
    if !lab.findings.hypotheses.is_empty() {
        hypotheses(&mut md, lab);
    }
    if !lab.findings.ceilings.is_empty() || !lab.capacity.is_empty() {
        ceilings(&mut md, lab);
    }
    if !charts.is_empty() {
        let _ = writeln!(md, "## Charts\n");
        for (t, path) in charts {
            let _ = writeln!(md, "![{t}]({path})\n");
        }
    }
    if !lab.steps.is_empty() {
        steps(&mut md, lab);
    }
    md
}

fn setup(md: &mut String, lab: &Lab) {
    let _ = writeln!(md, "## Set-up\n");
    let _ = writeln!(md, "| target | URL | system |\n|---|---|---|");
    for t in &lab.targets {
        let kind = match t.kind.as_str() {
            "started" => "started by the lab (sampled)",
            "simulator" => "origin simulator embedded by the lab",
            _ if t.sampled => "running (sampled)",
            _ => "running",
        };
        // Where its CPU and memory came from, and how fine the CPU counter is.
        let measured = t.measured_by.as_ref().map_or(String::new(), |m| {
            format!(
                "; CPU `{}`{} from {}, in {:.0} ms steps{}{}",
                m.cpu,
                m.memory.as_ref().map_or(String::new(), |mem| format!(" and memory `{mem}`")),
                m.source,
                m.resolution_s * 1000.0,
                m.scrape_interval_s.map_or(String::new(), |i| format!(", scraped every {i} s")),
                m.host.as_ref().map_or(String::new(), |h| format!("; its host from {h}")),
            )
        });
        let _ = writeln!(md, "| {} | `{}` | {kind}{measured} |", t.name, t.url);
    }
    let l = &lab.plan.load;
    let model = if l.rate.is_empty() {
        format!("closed model, connections {}", join(&l.connections))
    } else {
        format!("open model, rate {} req/s", join(&l.rate))
    };
    let protocols: Vec<&str> = l.protocol.iter().map(|p| protocol_text(*p)).collect();
    let request = format!(
        "{} {}",
        l.method,
        if l.headers.is_empty() {
            "without extra headers".to_owned()
        } else {
            format!("with `{}`", l.headers.join("`, `"))
        }
    );
    if !lab.matrix.steps.is_empty() {
        let _ = writeln!(
            md,
            "\nLoad: {model}; protocol {}; {} a step after {} of warm-up (sent, not counted); {} repeat{}, interleaved; {request}.",
            protocols.join(", "),
            secs(lab.duration_s),
            secs(lab.warmup_s),
            lab.repeats,
            if lab.repeats == 1 { "" } else { "s" },
        );
    }
    match (&lab.placement, &lab.placement_not) {
        (Some(p), _) => {
            let _ = writeln!(md, "\nPlacement: {} (`placement = \"split\"`).", p.text());
        }
        (None, Some(why)) => {
            let _ = writeln!(md, "\nPlacement: {why}.");
        }
        (None, None) => {}
    }
    if let Some(spec) = &lab.plan.capacity {
        let _ = writeln!(
            md,
            "\nCapacity search: open model over {}, {request}; rates from {:.0} req/s doubling up to at most {:.0} \
             req/s until a probe breaks the SLO, then bisection until the bounds are within {:.0}% of each other, \
             and the rate found is probed again to confirm it. Each probe lasts {}, and stops early once it \
             clearly fails (a latency 3 times over its limit, success 10 points under it, after a quarter of \
             the probe).",
            protocols.first().copied().unwrap_or("http1"),
            spec.start,
            spec.max,
            spec.precision * 100.0,
            secs(spec.probe.as_secs_f64()),
        );
    }
    if !lab.plan.variants.is_empty() {
        let names: Vec<&str> = lab.plan.variants.iter().map(|v| v.name.as_str()).collect();
        let _ = writeln!(md, "Variants: {}.", names.join(", "));
    }
    if !lab.plan.slo.is_empty() {
        let clauses: Vec<String> = lab.plan.slo.iter().map(|c| format!("`{}`", c.text())).collect();
        let _ = writeln!(md, "SLO, per step: {}.", clauses.join(", "));
    }
    if lab.quick {
        let _ =
            writeln!(md, "\n*Run with `--quick`: durations shortened; the numbers show the method, not the systems.*");
    }
    let ran = lab.steps.iter().filter(|s| s.down.is_none()).count();
    let probes: usize = lab.capacity.iter().map(|c| c.probes.len()).sum();
    if lab.matrix.steps.is_empty() {
        let _ = writeln!(md, "\n{probes} probes in {}.\n", secs(lab.wall_s));
    } else if ran == lab.matrix.steps.len() {
        let _ = writeln!(md, "\n{} steps in {}.\n", ran, secs(lab.wall_s));
    } else {
        let _ = writeln!(md, "\n{ran} of {} steps ran, in {}.\n", lab.matrix.steps.len(), secs(lab.wall_s));
    }
}

fn summary(md: &mut String, lab: &Lab) {
    let _ = writeln!(md, "## Summary\n");
    let f = &lab.findings;
    if lab.interrupted {
        let _ = writeln!(
            md,
            "**Interrupted: {} of {} steps did not run; the last step that ran may be short.** What follows \
             covers the steps that ran.{}\n",
            lab.not_run.len(),
            lab.matrix.steps.len(),
            if lab.not_run.is_empty() { String::new() } else { format!(" Not run: {}.", lab.not_run.join(", ")) }
        );
    }
    if !f.inconclusive.is_empty() {
        let _ = writeln!(
            md,
            "**Inconclusive: {} verdict{} could not be reached.** Nothing below counts these against a target:\n",
            f.inconclusive.len(),
            if f.inconclusive.len() == 1 { "" } else { "s" }
        );
        for why in &f.inconclusive {
            let _ = writeln!(md, "- {}", why.replace('|', "/"));
        }
        let _ = writeln!(md);
    }
    for d in &lab.deaths {
        let log = if d.log_tail.trim().is_empty() {
            "Its log is empty.".to_owned()
        } else {
            format!("Its log ends:\n\n```\n{}\n```", d.log_tail)
        };
        let _ = writeln!(md, "**{}.** Steps on it after that did not run. {log}\n", d.text());
    }
    if let Some(busy) = crate::outcome::busy_machine(&lab.steps) {
        let _ = writeln!(md, "**{busy}**\n");
    }
    let mut lines = Vec::new();
    if !lab.plan.slo.is_empty() && !f.cells.is_empty() {
        let held = f.cells.iter().filter(|c| c.slo == SloVerdict::Pass).count();
        let failed = f.cells.iter().filter(|c| c.slo.failed()).count();
        let limited = f.cells.iter().filter(|c| matches!(c.slo, SloVerdict::GeneratorLimited { .. })).count();
        let left_out = f.cells.iter().filter(|c| matches!(c.slo, SloVerdict::NotCounted { .. })).count();
        let down = f.cells.iter().filter(|c| matches!(c.slo, SloVerdict::TargetDown { .. })).count();
        let mut s = format!("The SLO held in {held} of {} target and load combinations", f.cells.len());
        if failed > 0 {
            s += &format!(" and failed in {failed}");
        }
        if limited > 0 {
            s += &format!("; {limited} were generator-limited and are not counted against their target");
        }
        if down > 0 {
            s += &format!("; in {down} the target was down");
        }
        if left_out > 0 {
            let are = if left_out == 1 { "is" } else { "are" };
            s += &format!("; {left_out} had no step that counted (the target's host was busy) and {are} not judged");
        }
        let judged = f.cells.iter().any(|c| c.steps.len() > 1);
        if judged {
            s += " (each clause judged on the median over the repeats)";
        }
        lines.push(s + ".");
    }
    for c in &f.ceilings {
        let mut s = match (c.holds_up_to, c.breaks_at) {
            (Some(h), Some(b)) => {
                format!("{} held the SLO up to {h} req/s and broke it at {b} req/s ({}).", c.target, c.broke.join("; "))
            }
            (Some(h), None) if c.generator_limited_at.is_none() && c.uncounted_at.is_none() => {
                format!("{} held the SLO at every rate tried, up to {h} req/s.", c.target)
            }
            (Some(h), None) => format!("{} held the SLO up to {h} req/s.", c.target),
            (None, Some(b)) => format!("{} broke the SLO already at {b} req/s ({}).", c.target, c.broke.join("; ")),
            (None, None) => format!("{}: no step counted.", c.target),
        };
        if let (Some(r), Some(why)) = (c.uncounted_at, &c.uncounted_why) {
            s += &format!(" At {r} req/s no step counted ({why}): nothing is claimed from there up.");
        }
        if let (Some(g), Some(why)) = (c.generator_limited_at, &c.generator_why) {
            s += &format!(" At {g} req/s the generator was the limit ({why}): nothing is claimed from there up.");
        }
        lines.push(s);
    }
    for c in &lab.capacity {
        lines.push(capacity_sentence(c));
    }
    for h in &f.hypotheses {
        lines.push(hypothesis_sentence(h, "**"));
    }
    if lines.is_empty() {
        // Without SLO or hypotheses: the highest throughput and the lowest p99 per target.
        for (t, target) in lab.targets.iter().enumerate() {
            let best = f
                .cells
                .iter()
                .filter(|c| c.target == t)
                // A load point with no counted repeat has no figure to show.
                .filter(|c| med(c, Metric::Throughput).is_finite())
                .max_by(|a, b| med(a, Metric::Throughput).total_cmp(&med(b, Metric::Throughput)));
            if best.is_none() && f.cells.iter().any(|c| c.target == t) {
                lines.push(format!("{}: no step counted.", target.name));
            }
            if let Some(c) = best {
                lines.push(format!(
                    "{} reached {:.1} successful responses per second at best ({}), p99 {}.",
                    target.name,
                    med(c, Metric::Throughput),
                    lab.matrix.points[c.point].label(&lab.matrix.axes),
                    show_ms(med(c, Metric::P99))
                ));
            }
        }
    }
    let _ = writeln!(md, "{}\n", lines.join(" "));
}

/// What a hypothesis came to, in one sentence: `"nginx answers faster": supported at 1 of 1 load
/// points (e.g. all: p50 294µs vs 3.7ms, ratio 0.080 [0.076, 0.081]).`, the finding set off by
/// `emphasis` (`**` in Markdown; nothing on a terminal).
pub(crate) fn hypothesis_sentence(h: &crate::outcome::HypothesisResult, emphasis: &str) -> String {
    let pts = h.points.iter().filter(|p| p.finding == h.finding).count();
    let effect = h
        .points
        .iter()
        .find(|p| p.finding == h.finding)
        // A side with nothing measured has no value to show (its note says so).
        .filter(|p| p.comparison.ratio.is_finite())
        .map(|p| {
            format!(
                " (e.g. {}: {} {} vs {}, ratio {})",
                p.point,
                h.metric.name(),
                h.metric.show(p.subject),
                h.metric.show(p.other),
                ratio_text(p.comparison.ratio, p.comparison.ci)
            )
        })
        .unwrap_or_default();
    let why = match h.points.iter().find_map(|p| p.comparison.note.as_ref()) {
        Some(note) if h.finding == crate::measure::verdict::Finding::Inconclusive => format!(" ({note})"),
        _ => String::new(),
    };
    let mut s = format!(
        "\"{}\": {emphasis}{}{emphasis} at {pts} of {} load points{effect}.{why}",
        h.claim,
        h.finding.label(),
        h.points.len()
    );
    // Judged on a function too (`where`): its finding, and one load point's CPU per request.
    if let Some(f) = &h.function {
        let e = f.points.iter().find(|p| p.finding == f.finding).or(f.points.first());
        let effect = e.map_or(" (no load point has a profile of both sides)".into(), |p| {
            format!(
                " (e.g. {}: {} -> {} of CPU per request, ratio {:.3})",
                p.point,
                show_us(p.other_us),
                show_us(p.subject_us),
                p.ratio
            )
        });
        s += &format!(" In {}: {emphasis}{}{emphasis}{effect}.", f.function, f.finding.label());
    }
    if let Some(f) = &h.span {
        s += &crate::render::traces::span_sentence(f, emphasis);
    }
    s
}

/// What a capacity search found, in one sentence (also the terminal's last line).
pub fn capacity_sentence(c: &crate::run::capacity::CapacityResult) -> String {
    let show = |v: f64| c.of.show(v);
    let mut s = match (c.holds_up_to, c.breaks_at) {
        _ if c.beyond_max => format!(
            "Capacity of {}: beyond the search's maximum ({} held).",
            c.target,
            show(c.holds_up_to.unwrap_or(0.0))
        ),
        (Some(h), Some(b)) => {
            format!("Capacity of {}: holds {}, breaks at {} ({}).", c.target, show(h), show(b), c.broke.join("; "))
        }
        (None, Some(b)) => {
            format!("Capacity of {}: no {} held; {} broke ({}).", c.target, c.of.name(), show(b), c.broke.join("; "))
        }
        (h, None) => format!("Capacity of {}: {} held.", c.target, h.map_or("nothing".into(), show)),
    };
    if let Some(g) = c.generator_limited_at {
        s += &format!(" The generator could not send {}: the search stopped there.", show(g));
    }
    // Nothing ever held: why the requests failed, rather than a boundary that did not confirm.
    let ever_held = c.probes.iter().any(|p| p.holds);
    if let (false, Some(e)) = (ever_held, c.probes.iter().rev().find_map(|p| p.error.as_ref())) {
        s += &format!(" Requests failed, most often with {e}.");
    }
    if !c.confirmed && c.breaks_at.is_some() && ever_held {
        s += if c.generator_limited_at.is_some() {
            " The boundary is not confirmed."
        } else {
            " The boundary did not confirm (noisy)."
        };
    }
    s
}

fn med(c: &Cell, metric: Metric) -> f64 {
    c.metrics.get(&metric).map_or(f64::NAN, |s| s.median)
}

/// `107.3ms [105.1, 109.6]`: the median and the 95% interval of the mean. The interval comes
/// from the run's windows and the figure from the whole step, so a rate of 50.2/s could sit
/// beside [50.0, 50.0]: the interval shown always holds the figure beside it.
fn cell_text(metric: Metric, s: &Estimate) -> String {
    match s.ci {
        Some((lo, hi)) => {
            let (lo, hi) = if s.median.is_finite() { (lo.min(s.median), hi.max(s.median)) } else { (lo, hi) };
            format!("{} [{}, {}]", metric.show(s.median), trim(metric.show(lo)), trim(metric.show(hi)))
        }
        _ => metric.show(s.median),
    }
}

fn trim(s: String) -> String {
    s.replace("/s", "")
}

fn tables(md: &mut String, lab: &Lab) {
    let _ = writeln!(md, "## Results\n");
    let basis = if lab.repeats as usize >= crate::measure::estimate::MIN_REPEATS {
        format!("Medians over {} repeats, [95% interval across repeats].", lab.repeats)
    } else if lab.repeats > 1 {
        format!(
            "Medians over {} repeats, [95% interval within the runs: a block bootstrap over their 1 s windows; \
             with fewer than {} repeats the run-to-run variation is not measured].",
            lab.repeats,
            crate::measure::estimate::MIN_REPEATS
        )
    } else {
        "[95% interval within the run: a block bootstrap over its 1 s windows; one repeat measures no run-to-run \
         variation.]"
            .to_owned()
    };
    let repeats = format!(" {basis}");
    let _ = writeln!(md, "Latency is measured from each request's scheduled time; \"ok p99\" counts successful requests only, so a target failing fast never looks faster.{repeats}\n");
    let axes = &lab.matrix.axes;
    let _ = writeln!(md, "| load | target | req/s | ok/s | success | p50 | p99 | ok p99 | max | SLO |\n|---|---|---|---|---|---|---|---|---|---|");
    for c in &lab.findings.cells {
        let m = |metric: Metric| c.metrics.get(&metric).map_or("-".into(), |s| cell_text(metric, s));
        let ok_p99 = if c.metrics.is_empty() { "-".into() } else { cell_text(Metric::P99, &c.ok_p99) };
        let mut verdict = c.slo.label();
        if !c.uncounted.is_empty() && !c.slo.inconclusive() {
            verdict +=
                &format!(" ({} of {} repeats not counted: {})", c.uncounted.len(), c.steps.len(), c.uncounted[0]);
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            lab.matrix.points[c.point].label(axes),
            lab.targets[c.target].name,
            m(Metric::Rps),
            m(Metric::Throughput),
            m(Metric::Success),
            m(Metric::P50),
            m(Metric::P99),
            ok_p99,
            m(Metric::Max),
            verdict.replace('|', "/"),
        );
    }
    // Pivot: one row per load point, one column per target, for throughput and p99.
    if lab.targets.len() > 1 {
        for metric in [Metric::Throughput, Metric::P99] {
            let _ = writeln!(
                md,
                "\n{} by load point:\n",
                if metric == Metric::P99 { "p99 latency" } else { "Successful responses per second" }
            );
            let head: Vec<&str> = lab.targets.iter().map(|t| t.name.as_str()).collect();
            let _ = writeln!(md, "| load | {} |\n|---|{}", head.join(" | "), "---|".repeat(head.len()));
            for (p, point) in lab.matrix.points.iter().enumerate() {
                let row: Vec<String> = (0..lab.targets.len())
                    .map(|t| {
                        lab.findings
                            .cells
                            .iter()
                            .find(|c| c.target == t && c.point == p)
                            .and_then(|c| c.metrics.get(&metric))
                            .map_or("-".into(), |s| cell_text(metric, s))
                    })
                    .collect();
                let _ = writeln!(md, "| {} | {} |", point.label(axes), row.join(" | "));
            }
        }
    }
    let sampled = lab.steps.iter().any(|s| s.target_cpu_pct.is_some() || s.target_cpu_unmeasured.is_some());
    if sampled {
        let _ = writeln!(md, "\nProcesses sampled each second (mean CPU % of one core over the step, peak RSS):\n");
        let _ = writeln!(md, "| step | target CPU | target RSS | generator CPU |\n|---|---|---|---|");
        for s in &lab.steps {
            let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}%"));
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                s.id,
                match &s.target_cpu_unmeasured {
                    Some(why) => format!("not measured: {}", why.replace('|', "\\|")),
                    None => pct(s.target_cpu_pct),
                },
                s.target_rss_mb.map_or("-".into(), |v| format!("{v:.0} MiB")),
                pct(s.generator_cpu_pct)
            );
        }
    }
    let _ = writeln!(md);
}

fn ratio_text(r: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
        None => format!("{r:.3}"),
    }
}

fn hypotheses(md: &mut String, lab: &Lab) {
    let _ = writeln!(md, "## Hypotheses\n");
    let points: Vec<_> = lab.findings.hypotheses.iter().flat_map(|h| &h.points).collect();
    let one_run = points.iter().filter(|p| p.comparison.basis == Basis::WithinRun).count();
    if one_run > 0 {
        let _ = writeln!(md, "{}\n", crate::measure::ab::one_run_sentence(Some((one_run, points.len()))));
    }
    let _ =
        writeln!(md, "Each load point compares the subject with the other. {}\n", crate::measure::ab::method_text());
    for h in &lab.findings.hypotheses {
        let dir = if h.lower { "lower" } else { "higher" };
        let _ = writeln!(
            md,
            "### {}\n\n**{}**: {} of {} {dir} than {}.\n",
            h.claim,
            h.finding.label(),
            h.metric.name(),
            h.subject,
            h.than
        );
        let _ = writeln!(
            md,
            "| load | {} | {} | ratio [95%] | p | finding |\n|---|---|---|---|---|---|",
            h.subject, h.than
        );
        for p in &h.points {
            let verdict = match (&p.comparison.note, p.comparison.significant) {
                (_, true) => p.finding.label().to_owned(),
                (Some(note), false) => format!("~ ({note})"),
                (None, false) => "~ no significant difference".into(),
            };
            let verdict = format!(
                "{verdict}, {}",
                if p.comparison.basis == crate::measure::estimate::Basis::Repeats { "repeats" } else { "within runs" }
            );
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {verdict} |",
                p.point,
                h.metric.show(p.subject),
                h.metric.show(p.other),
                ratio_text(p.comparison.ratio, p.comparison.ci),
                p.comparison.p.map_or("-".into(), |p| format!("{p:.3}")),
            );
        }
        let _ = writeln!(md);
        if let Some(f) = &h.function {
            let _ = writeln!(md, "{}\n", crate::render::profiles::function_text(f, &h.subject, &h.than));
        }
        if let Some(f) = &h.span {
            let _ = writeln!(md, "{}\n", crate::render::traces::span_text(f, &h.subject, &h.than));
        }
    }
}

fn ceilings(md: &mut String, lab: &Lab) {
    let _ = writeln!(md, "## Ceilings\n");
    if !lab.findings.ceilings.is_empty() {
        let _ = writeln!(md, "| target | holds up to | breaks at | broken |\n|---|---|---|---|");
        for c in &lab.findings.ceilings {
            let r = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v} req/s"));
            let _ =
                writeln!(md, "| {} | {} | {} | {} |", c.target, r(c.holds_up_to), r(c.breaks_at), c.broke.join("; "));
        }
        let _ = writeln!(md);
    }
    for c in &lab.capacity {
        let _ = writeln!(
            md,
            "{}\n\n| probe | {} | holds | p99 | success | note |\n|---|---|---|---|---|---|",
            capacity_sentence(c),
            c.of.name()
        );
        for (i, p) in c.probes.iter().enumerate() {
            let mut note = if p.generator_limited {
                format!("generator-limited: {}", p.broke.join("; "))
            } else if p.stopped_early {
                format!("stopped early: {}", p.broke.join("; "))
            } else {
                p.broke.join("; ")
            };
            if let Some(e) = &p.error {
                note += &format!("; most often {e}");
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.2}% | {note} |",
                i + 1,
                c.of.show(p.rate),
                if p.holds { "yes" } else { "no" },
                show_ms(p.p99_ms),
                p.success * 100.0
            );
        }
        let _ = writeln!(md);
    }
}

fn steps(md: &mut String, lab: &Lab) {
    let _ = writeln!(md, "## Steps\n");
    let _ =
        writeln!(md, "Each step's results file is kept (`loadlab report FILE`, `loadlab plot FILE -o chart.html`).\n");
    for s in &lab.steps {
        let limited = match (&s.down, &s.uncounted) {
            (Some(why), _) => format!(" (target down: {why})"),
            (None, Some(why)) if s.host_left_out() => format!(" (not counted: {why})"),
            (None, Some(why)) => format!(" (generator-limited: {why}; not counted)"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            md,
            "### {}{limited}\n\n`{}`, {} warm-up requests not counted.\n\n```\n{}```\n",
            s.id, s.file, s.warmup_requests, s.text
        );
    }
}

fn join<T: std::fmt::Display>(v: &[T]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

fn secs(s: f64) -> String {
    if s >= 60.0 {
        format!("{:.0}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    } else {
        format!("{s:.1}s")
    }
}

#[cfg(test)]
mod tests;
